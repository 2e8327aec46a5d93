/**
 * The desktop app's launcher: each service in an Electron utility process (Electron's replacement for
 * child_process.fork), running the same bundles as headless. Utility processes have no IPC channel
 * whose closing would tell them the app died, so each one loads parent-watch.mjs (named parent pid)
 * and stops itself when the app is gone, even after a SIGKILL.
 */
import type { UtilityProcess, utilityProcess as UtilityProcessApi, App } from 'electron';
import { PROJECT_ROOT, bundlingPreparer, type ManagedProcess, type ProcessLauncher } from '../supervisor/launcher.ts';
import { serviceCommand } from '../supervisor/service-bundles.ts';

export function utilityProcessLauncher(fork: typeof UtilityProcessApi.fork, app: Pick<App, 'getAppMetrics'>, parentWatch?: string): ProcessLauncher {
  const preparer = bundlingPreparer();
  return {
    prepare: (names) => preparer.prepare(names),
    launch(name, env) {
      const command = serviceCommand(name, preparer.bundled);
      const child: UtilityProcess = fork(command.script, command.args, {
        env: parentWatch ? { ...env, HUB_PARENT_PID: String(globalThis.process.pid) } : env,
        cwd: PROJECT_ROOT,
        stdio: 'pipe',
        serviceName: name,
        execArgv: [...command.execArgv, ...(parentWatch ? ['--import', parentWatch] : [])],
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
