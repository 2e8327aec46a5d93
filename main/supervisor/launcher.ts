import { spawn } from 'node:child_process';
import { PROJECT_ROOT } from './launcher-paths.ts';
import { bundleServices, serviceCommand } from './service-bundles.ts';
import type { ServiceName } from './types.ts';

export { PROJECT_ROOT, SERVICE_RUNNER } from './launcher-paths.ts';

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
  /** Called once before the first launch; resolves with a sentence for the log when something fell back. */
  prepare?(names: readonly ServiceName[]): Promise<string | undefined>;
  launch(name: ServiceName, env: Record<string, string>): ManagedProcess;
}

/** Bundles the services once per launcher; a failed build leaves every service running from source. */
export function bundlingPreparer(): { bundled: Set<ServiceName>; prepare(names: readonly ServiceName[]): Promise<string | undefined> } {
  const bundled = new Set<ServiceName>();
  return {
    bundled,
    async prepare(names) {
      const result = await bundleServices(names);
      for (const n of result.bundled) bundled.add(n);
      return result.error ? `could not bundle the services (${result.error}); the others run from source` : undefined;
    },
  };
}

/**
 * Headless and tests: each service as a Node child (its bundle, or `--import tsx services/run.ts <name>`)
 * with an IPC channel, so that it stops by itself when the channel closes, which happens when the
 * supervisor dies, even by SIGKILL.
 */
export function nodeChildLauncher(options: { fromSource?: boolean } = {}): ProcessLauncher {
  const preparer = bundlingPreparer();
  return {
    prepare: options.fromSource ? undefined : (names) => preparer.prepare(names),
    launch: (name, env) => launchChild(name, env, preparer.bundled),
  };
}

function launchChild(name: ServiceName, env: Record<string, string>, bundled: ReadonlySet<ServiceName>): ManagedProcess {
  const command = serviceCommand(name, bundled);
  const child = spawn(process.execPath, [...command.execArgv, command.script, ...command.args], {
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
}
