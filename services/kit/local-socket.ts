import { randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import type { Express } from 'express';
import { PROBLEM_ENVELOPE, type ErrorEnvelope } from './api.ts';
import { servesTheAppOnly } from './callers.ts';
import { ConfigError } from './config.ts';
import { DEFAULT_MAX_CONNECTIONS } from './connections.ts';
import { MAX_SOCKET_PATH_BYTES } from './identity-channel.ts';
import { writeOwnerOnly } from './owner-only-file.ts';
import { DEFAULT_TIMEOUTS, ERROR_ENVELOPE } from './server.ts';
import { httpShell } from './shell.ts';

export interface LocalSocketListener {
  /** The socket's path (on Windows: the file naming the pipe). */
  readonly path: string;
  /** Stops accepting, lets requests in flight finish (up to `drainMs`), removes the socket. */
  close(drainMs?: number): Promise<void>;
}

/**
 * Serves `app` on a Unix domain socket at `path` too (owner-only), for callers that must know they
 * talk to this service: only the owner of the socket's folder can have made it. On Windows, a named
 * pipe with a random name, written (owner-only) to the file at `path`, so only who can read the folder
 * can find the pipe; the name is new at every start, and Windows refuses to make a pipe whose name is
 * taken. Its own HTTP shell, with the kit's timeouts and connection bound apart from the TCP port's.
 * What arrives here is counted as the app's own traffic (callers.ts): only the user's programs can reach it.
 */
export async function listenOnLocalSocket(app: Express, path: string): Promise<LocalSocketListener> {
  const windows = process.platform === 'win32';
  if (!windows && Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    throw new ConfigError(
      `The socket ${path} is ${Buffer.byteLength(path)} bytes long; the system takes at most ${MAX_SOCKET_PATH_BYTES}. Choose a shorter data folder.`,
    );
  }
  let address = path;
  if (windows) {
    address = `\\\\.\\pipe\\hub-services-${randomBytes(16).toString('hex')}`;
    writeOwnerOnly(path, `${address}\n`);
  } else {
    await removeLeftover(path);
  }
  const envelope = (app.locals[ERROR_ENVELOPE] as ErrorEnvelope | undefined) ?? PROBLEM_ENVELOPE;
  const server = httpShell({
    handle: app,
    ...DEFAULT_TIMEOUTS,
    maxConnections: DEFAULT_MAX_CONNECTIONS,
    early: (status, detail) => envelope.early(status, detail),
    speaker: 'This service',
  });
  servesTheAppOnly(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address, () => {
      server.off('error', reject);
      resolve();
    });
  });
  if (!windows) chmodSync(path, 0o600);
  let closing: Promise<void> | undefined;
  return {
    path,
    close(drainMs = 10_000) {
      closing ??= new Promise<void>((resolve) => {
        // Node removes the socket file when the server closes.
        server.close(() => resolve());
        server.closeIdleConnections();
        const sweep = setInterval(() => server.closeIdleConnections(), 25);
        const timer = setTimeout(() => server.closeAllConnections(), drainMs);
        server.once('close', () => {
          clearInterval(sweep);
          clearTimeout(timer);
        });
      });
      return closing;
    },
  };
}

/**
 * A socket left by a process that ended without closing it is removed; one that answers belongs to a
 * running service, which is not pushed aside; anything else at that path is not ours to remove.
 */
async function removeLeftover(path: string): Promise<void> {
  let entry;
  try {
    entry = lstatSync(path);
  } catch {
    return;
  }
  if (!entry.isSocket()) {
    throw new Error(`${path} exists and is not a socket; remove it, then start again.`);
  }
  const answers = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (answers) {
    throw new Error(
      `Another process already serves the socket ${path} (another copy of this service on the same data folder?); stop it, or use another data folder.`,
    );
  }
  unlinkSync(path);
}
