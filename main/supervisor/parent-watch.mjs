/* global setInterval, clearInterval */
/**
 * Loaded into each service of the desktop app (service-prelude.ts imports it when the launcher names
 * the app in HUB_PARENT_PID; `--import` works too): a service whose parent is gone stops itself.
 * Utility processes have no IPC `disconnect` event like Node children, so it watches the parent
 * instead; SIGTERM runs the service's own graceful stop.
 */
const named = Number(process.env.HUB_PARENT_PID);
const parent = Number.isInteger(named) && named > 0 ? named : process.ppid;
// Our direct child: the parent is gone when we are re-parented (no pid reuse can fool that). Otherwise
// (the parent died before this ran, or a launcher process sits between): gone when its pid is.
const direct = process.ppid === parent;

function parentGone() {
  if (direct) return process.ppid !== parent;
  try {
    process.kill(parent, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
}

if (process.platform !== 'win32') {
  const timer = setInterval(() => {
    if (parentGone()) {
      clearInterval(timer);
      process.kill(process.pid, 'SIGTERM');
    }
  }, 1_000);
  timer.unref();
}
