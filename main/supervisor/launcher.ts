import { spawn } from 'node:child_process';
import { PROJECT_ROOT } from './launcher-paths.ts';
import { serviceBundles } from './service-bundles.ts';
import type { ServiceName } from '../../common/services.ts';

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
  /**
   * Sends a message over the process's channel (a Node child's IPC, a utility process's port), with a
   * socket where the launcher `takesHandles`; false when the process is gone.
   */
  send(message: unknown, handle?: unknown): boolean;
  /** Every message the process sends (with the socket it sent, if any). */
  onMessage(listener: (message: unknown, handle?: unknown) => void): void;
}

export interface ProcessLauncher {
  /**
   * Whether its processes can receive a listening socket over their channel (Node children): the
   * supervisor hands them the port it holds. Otherwise (Electron utility processes) it relays the port to
   * a socket file the service listens on (held-port.ts).
   */
  readonly takesHandles: boolean;
  /** Called once before the first launch; resolves with a sentence for the log when something fell back. */
  prepare?(names: readonly ServiceName[]): Promise<string | undefined>;
  launch(name: ServiceName, env: Record<string, string>): ManagedProcess;
}

export interface NodeChildOptions {
  /** Run every service from source through tsx, never from a bundle. */
  fromSource?: boolean;
  /**
   * The Node.js binary that runs the services (default: this process's). The desktop app in development
   * passes the Node that ran npm.
   */
  node?: string;
  /** Where the service bundles are (default: out/services). */
  bundleDir?: string;
  /** false: the services listen on socket files the supervisor relays to, as utility processes do (to test that way here). */
  takesHandles?: boolean;
}

/**
 * Headless, tests and the desktop app in development: each service as a Node child (its bundle, or
 * `--import tsx services/run.ts <name>`) with an IPC channel, so that it stops by itself when the channel
 * closes, which happens when the supervisor dies, even by SIGKILL.
 */
export function nodeChildLauncher(options: NodeChildOptions = {}): ProcessLauncher {
  const bundles = serviceBundles(options.bundleDir);
  const node = options.node ?? process.execPath;
  return {
    takesHandles: options.takesHandles ?? true,
    prepare: options.fromSource ? undefined : (names) => bundles.prepare(names),
    launch: (name, env) => launchChild(node, bundles.command(name), env),
  };
}

function launchChild(
  node: string,
  command: { script: string; args: string[]; execArgv: string[] },
  env: Record<string, string>,
): ManagedProcess {
  const child = spawn(node, [...command.execArgv, command.script, ...command.args], {
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
    send(message, handle) {
      if (exited || !child.connected) return false;
      try {
        // A channel that closes meanwhile reports it here; the exit is seen by onExit.
        return child.send(message as object, handle as never, (err) => void err);
      } catch {
        return false;
      }
    },
    onMessage(listener) {
      child.on('message', (message, handle) => listener(message, handle));
    },
  };
}
