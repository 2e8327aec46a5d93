/**
 * The installed app's launcher: each service in an Electron utility process (Electron's replacement for
 * child_process.fork), running the bundles the app carries, with better-sqlite3's prebuilt Node-API
 * binary (the same file Node loads). Utility processes have no IPC channel whose closing would tell them the app
 * died, so the launcher names the app in HUB_PARENT_PID and each service's prelude watches it
 * (parent-watch.mjs): a service stops itself when the app is gone, even after a SIGKILL.
 *
 * `desktopLauncher` picks this or Node children by serviceRuntime() (main/supervisor/service-runtime.ts).
 */
import type { App, UtilityProcess, utilityProcess as UtilityProcessApi } from 'electron';
import { outsideArchive } from '../supervisor/build-outputs.ts';
import { PROJECT_ROOT, nodeChildLauncher, type ManagedProcess, type ProcessLauncher } from '../supervisor/launcher.ts';
import { serviceBundles } from '../supervisor/service-bundles.ts';
import { serviceRuntime, type ServiceRuntime } from '../supervisor/service-runtime.ts';

type Fork = typeof UtilityProcessApi.fork;

/** The launcher for the desktop app's services, by the runtime their native module fits. */
export function desktopLauncher(
  electron: { app: Pick<App, 'isPackaged' | 'getAppMetrics'>; utilityProcess: { fork: Fork } },
  env: NodeJS.ProcessEnv = process.env,
): { runtime: ServiceRuntime; launcher: ProcessLauncher } {
  const runtime = serviceRuntime({ electronApp: electron.app }, env);
  const launcher =
    runtime.kind === 'utility-process'
      ? utilityProcessLauncher(electron.utilityProcess.fork, electron.app)
      : nodeChildLauncher({ node: runtime.node });
  return { runtime, launcher };
}

export function utilityProcessLauncher(
  fork: Fork,
  app: Pick<App, 'getAppMetrics'>,
  options: { bundleDir?: string } = {},
): ProcessLauncher {
  const bundles = serviceBundles(options.bundleDir);
  return {
    // A utility process's port carries no sockets: the supervisor relays each service's port to a socket file.
    takesHandles: false,
    prepare: (names) => bundles.prepare(names),
    launch(name, env) {
      const command = bundles.command(name);
      const child: UtilityProcess = fork(command.script, command.args, {
        env: { ...env, HUB_PARENT_PID: String(globalThis.process.pid) },
        // A process cannot start inside the app's archive: the folder that holds it.
        cwd: outsideArchive(PROJECT_ROOT),
        stdio: 'pipe',
        serviceName: name,
        execArgv: command.execArgv,
      });
      let exited: { code: number | null } | undefined;
      const listeners: Array<(code: number | null, signal: string | null) => void> = [];
      child.once('exit', (code: number) => {
        exited = { code };
        for (const l of listeners) l(code, null);
      });
      const process: ManagedProcess = {
        get pid() {
          return child.pid;
        },
        stdout: child.stdout,
        stderr: child.stderr,
        onExit(listener) {
          if (exited) listener(exited.code, null);
          else listeners.push(listener);
        },
        kill(signal) {
          if (exited) return false;
          // utilityProcess.kill() sends SIGTERM; SIGKILL goes straight to the pid.
          if (signal === 'SIGKILL' && child.pid !== undefined) {
            try {
              globalThis.process.kill(child.pid, 'SIGKILL');
              return true;
            } catch {
              return false;
            }
          }
          return child.kill();
        },
        send(message) {
          if (exited) return false;
          child.postMessage(message);
          return true;
        },
        onMessage(listener) {
          child.on('message', (message: unknown) => listener(message));
        },
        memoryBytes() {
          const metric = app.getAppMetrics().find((m) => m.pid === child.pid);
          // workingSetSize is in kilobytes.
          return metric ? metric.memory.workingSetSize * 1024 : undefined;
        },
      };
      return process;
    },
  };
}
