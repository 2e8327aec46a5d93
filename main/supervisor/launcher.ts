import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServiceName } from './types.ts';

/** One running service process, however it was started (Node child or Electron utility process). */
export interface ManagedProcess {
  readonly pid: number | undefined;
  readonly stdout: NodeJS.ReadableStream | null;
  readonly stderr: NodeJS.ReadableStream | null;
  /** Called once, when the process has exited. */
  onExit(listener: (code: number | null, signal: string | null) => void): void;
  /** Sends a signal; false when the process is already gone. */
  kill(signal: NodeJS.Signals): boolean;
  /** Resident memory in bytes where the launcher knows it better than the process table (Electron's metrics). */
  memoryBytes?(): number | undefined;
}

export interface ProcessLauncher {
  launch(name: ServiceName, env: Record<string, string>): ManagedProcess;
}

export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SERVICE_RUNNER = join(PROJECT_ROOT, 'services', 'run.ts');

/**
 * Headless and tests: `node --import tsx services/run.ts <name>` with an IPC channel, so that a service
 * stops by itself when the channel closes, which happens when the supervisor dies, even by SIGKILL.
 */
export const nodeChildLauncher: ProcessLauncher = {
  launch(name, env) {
    const child = spawn(process.execPath, ['--import', 'tsx', SERVICE_RUNNER, name], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      windowsHide: true,
    });
    let exited: { code: number | null; signal: string | null } | undefined;
    const listeners: Array<(code: number | null, signal: string | null) => void> = [];
    const finish = (code: number | null, signal: string | null) => {
      if (exited) return;
      exited = { code, signal };
      for (const l of listeners) l(code, signal);
    };
    child.once('exit', (code, signal) => finish(code, signal));
    child.once('error', () => finish(null, null));
    return {
      pid: child.pid,
      stdout: child.stdout,
      stderr: child.stderr,
      onExit(listener) {
        if (exited) listener(exited.code, exited.signal);
        else listeners.push(listener);
      },
      kill(signal) {
        if (exited) return false;
        try {
          return child.kill(signal);
        } catch {
          return false;
        }
      },
    };
  },
};
