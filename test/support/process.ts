import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait-for.ts';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * A port that was free a moment ago on loopback, drawn from 20000-31999: below every system's ephemeral
 * range (Linux 32768+, macOS and Windows 49152+), so that no outgoing connection of a busy machine takes
 * it before the service binds it, as could happen to a port the kernel handed out for port 0. Drawn at
 * random (not from the test seed: files replayed with one seed in parallel would all draw the same ports).
 *
 * A port handed out stays reserved for the rest of this process: a free port is not bound until the
 * service starts, and without the reservation another draw (in this file, in a parallel file or in another
 * run on the same machine) could hand out the same one meanwhile (about 1 in 12,000 per pair of draws),
 * or take it while a test has stopped its service to start it again on that port.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + randomInt(12_000);
    if (!reserve(port)) continue;
    if (await bindable(port)) return port;
    release(port);
  }
  throw new Error('No free port found in 20000-31999 on 127.0.0.1 after 100 tries.');
}

/** One file per reserved port, holding the reserving process's id; shared by every test process of the machine. */
const RESERVATIONS = join(tmpdir(), 'hub-test-ports');
/** The ports this process reserved, and whether a file holds each reservation. */
const reserved = new Map<number, boolean>();

function reserve(port: number): boolean {
  if (reserved.has(port)) return false;
  const file = join(RESERVATIONS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      if (!existsSync(RESERVATIONS)) {
        mkdirSync(RESERVATIONS, { recursive: true });
        chmodSync(RESERVATIONS, 0o1777); // like /tmp: every user's tests share the machine's ports
      }
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      reserved.set(port, true);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        // A folder this user may not write (made by another, or a read-only temp): this process's own reservations still hold.
        reserved.set(port, false);
        return true;
      }
    }
    // The reservation of a process that is gone (killed before it could clean up) is taken over.
    let holder = NaN;
    try {
      holder = Number(readFileSync(file, 'utf8'));
    } catch {
      continue; // released meanwhile
    }
    // An empty file is one being written: its holder is alive.
    if (!Number.isInteger(holder) || holder <= 0 || processExists(holder)) return false;
    try {
      rmSync(file, { force: true });
    } catch {
      return false; // another user's: left to them
    }
  }
  return false;
}

function release(port: number): void {
  const filed = reserved.get(port);
  reserved.delete(port);
  if (filed) rmSync(join(RESERVATIONS, String(port)), { force: true });
}

/** Whether a process with this pid exists (signal 0: ESRCH means gone; EPERM means it is someone else's). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

process.once('exit', () => {
  for (const port of [...reserved.keys()]) release(port);
});

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
export async function spawnService(
  name: string,
  env: Record<string, string>,
  port: number,
  timeoutMs = 120_000,
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'services', 'run.ts'), name], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      `${name} to answer /healthy`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited early (${child.exitCode}): ${out}`);
        return fetch(`${url}/healthy`).then(
          (r) => r.ok,
          () => false, // not listening yet
        );
      },
      timeoutMs,
    );
  } catch (err) {
    if (child.exitCode !== null) throw err;
    child.kill('SIGKILL');
    throw new Error(`${name} did not become healthy: ${out}`);
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
