import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * A port that was free a moment ago on loopback, drawn from 20000-31999: below every system's ephemeral
 * range (Linux 32768+, macOS and Windows 49152+), so that no outgoing connection of a busy machine takes
 * it before the service binds it, as could happen to a port the kernel handed out for port 0. Drawn at
 * random (not from the test seed: files replayed with one seed in parallel would all draw the same ports).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + randomInt(12_000);
    if (await bindable(port)) return port;
  }
  throw new Error('No free port found in 20000-31999 on 127.0.0.1 after 100 tries.');
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly url: string;
  output(): string;
  /** Sends a signal and resolves with the exit code (or the signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

/**
 * Starts `npm run service -- <name>`'s program as a real child process and waits for /healthy (polled: no
 * event says a port answers). The timeout is a backstop for a loaded machine, not a window.
 */
export async function spawnService(name: string, env: Record<string, string>, port: number, timeoutMs = 120_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'services', 'run.ts'), name], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited early (${child.exitCode}): ${out}`);
    try {
      if ((await fetch(`${url}/healthy`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not become healthy: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    output: () => out,
    stop(signal = 'SIGTERM') {
      child.kill(signal);
      return exited;
    },
  };
}
