/* global setInterval, clearInterval */
/**
 * Loaded into each service of the desktop app (`--import`): a service whose parent is gone stops itself.
 * Utility processes have no IPC `disconnect` event like Node children, so it watches the parent pid
 * instead; SIGTERM runs the service's own graceful stop.
 */
// The launcher names the parent, so a parent that died before this module ran is noticed too.
const named = Number(process.env.HUB_PARENT_PID);
const parent = Number.isInteger(named) && named > 0 ? named : process.ppid;
if (process.platform !== 'win32') {
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      process.kill(process.pid, 'SIGTERM');
    }
  }, 1_000);
  timer.unref();
}
