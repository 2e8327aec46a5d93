import { lstatSync, readFileSync, statSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { dirname } from 'node:path';

/**
 * How a service reaches the identity service for every call that carries a secret or whose answer it
 * trusts (whether a session stands, a platform credential, a minted token): never identity's TCP port,
 * which any program may take while identity is stopped, but a listener that proves it is identity.
 *
 * - `overSocket`: identity's Unix domain socket in identity's own data folder. Only the folder's owner
 *   can make a file there, so whatever answers on it is identity (checked before each call: the folder
 *   and the socket are ours, and nobody else may write the folder). On Windows the path is a file in
 *   that folder holding the name of identity's named pipe (random per data folder, see the kit README).
 * - `overHttps`: an identity service elsewhere, at an https:// URL; its certificate proves it.
 */
export interface IdentityChannel {
  /** Identity's base URL (its tokens' iss), for sentences. */
  readonly url: string;
  /** How it is reached, for sentences: "its socket /…/identity.sock" or the https URL. */
  readonly where: string;
  /** One request; rejects with `IdentityUnreachable` when nothing that proves it is identity answers. */
  call(request: IdentityRequest): Promise<IdentityAnswer>;
  /** Whether identity answers there now (its /healthy): /ready asks this. */
  answers(timeoutMs?: number): Promise<boolean>;
}

export interface IdentityRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path and query, already encoded (`urlPath`). */
  path: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  timeoutMs?: number;
}

export interface IdentityAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or undefined when there is none or it is not JSON. */
  body: unknown;
}

/** Identity could not be reached where it proves itself; `message` says where and why, never a secret. */
export class IdentityUnreachable extends Error {
  override name = 'IdentityUnreachable';
}

/** Identity's answers are small; more than this is not identity talking. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

/** The longest Unix socket path the systems take (macOS: 104 bytes with the terminating NUL). */
export const MAX_SOCKET_PATH_BYTES = 103;

export function overSocket(url: string, path: string): IdentityChannel {
  // One keep-alive pool per channel: a revocation check every few seconds reuses one connection. An idle one
  // is let go well before the server's keep-alive timeout (the kit's 65 s), so none is reused as it closes.
  const agent = new Agent({ keepAlive: true, maxSockets: 16, timeout: 30_000 });
  const channel: IdentityChannel = {
    url,
    where: `its socket ${path}`,
    call: (req) => viaSocket(path, agent, req),
    answers: (timeoutMs = 3_000) => answers(channel, timeoutMs),
  };
  return channel;
}

export function overHttps(url: string): IdentityChannel {
  const channel: IdentityChannel = {
    url,
    where: url,
    async call(req) {
      let res: Response;
      try {
        // Appended, not resolved: an identity under a path (https://host/identity) keeps it.
        res = await fetch(`${url.replace(/\/+$/, '')}${req.path}`, {
          method: req.method ?? 'GET',
          headers: {
            accept: 'application/json',
            ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
            ...req.headers,
          },
          body: req.body === undefined ? undefined : JSON.stringify(req.body),
          signal: AbortSignal.timeout(req.timeoutMs ?? DEFAULT_TIMEOUT_MS),
          redirect: 'error',
        });
      } catch {
        throw new IdentityUnreachable(`the identity service at ${url} does not answer`);
      }
      const text = await res.text();
      const headers: Record<string, string> = {};
      res.headers.forEach((value, name) => (headers[name] = value));
      return { status: res.status, headers, body: parseJson(text) };
    },
    answers: (timeoutMs = 3_000) => answers(channel, timeoutMs),
  };
  return channel;
}

async function answers(channel: IdentityChannel, timeoutMs: number): Promise<boolean> {
  try {
    return (await channel.call({ path: '/healthy', timeoutMs })).status === 200;
  } catch {
    return false;
  }
}

/**
 * Why `path` (a socket, or a file identity wrote) cannot be trusted to be identity's, or undefined when
 * it can: it and its folder belong to this user, and no other user may write the folder (who can write
 * the folder can put anything there). Windows has no such modes; its data folder is the user's own.
 */
export function notOursBecause(path: string, what: string): string | undefined {
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return undefined;
  const uid = process.getuid();
  let folder;
  let entry;
  try {
    folder = statSync(dirname(path));
    entry = lstatSync(path);
  } catch {
    return `there is no ${what} at ${path}`;
  }
  if (folder.uid !== uid || (folder.mode & 0o022) !== 0) {
    return `the folder of ${path} is not yours alone (other users may write it), so nothing in it proves it is identity's; make it owner-only (chmod 700 ${dirname(path)})`;
  }
  if (entry.uid !== uid) return `${path} does not belong to you, so it is not identity's ${what}`;
  if (entry.isSymbolicLink()) return `${path} is a symbolic link, not identity's ${what}`;
  return undefined;
}

function viaSocket(path: string, agent: Agent, req: IdentityRequest): Promise<IdentityAnswer> {
  const refused = notOursBecause(path, 'socket');
  if (refused) return Promise.reject(new IdentityUnreachable(`the identity service cannot be reached: ${refused}`));
  let address = path;
  if (process.platform === 'win32') {
    try {
      address = readFileSync(path, 'utf8').trim();
    } catch {
      return Promise.reject(
        new IdentityUnreachable(`the identity service cannot be reached: ${path} (its pipe's name) cannot be read`),
      );
    }
  }
  const payload = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
  return new Promise((resolve, reject) => {
    const unreachable = () =>
      reject(new IdentityUnreachable(`the identity service does not answer on its socket ${path}`));
    const outgoing = httpRequest(
      {
        socketPath: address,
        agent,
        method: req.method ?? 'GET',
        path: req.path,
        headers: {
          host: 'localhost',
          accept: 'application/json',
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
          ...req.headers,
        },
        signal: AbortSignal.timeout(req.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) res.destroy(new Error('answer too large'));
          else chunks.push(chunk);
        });
        res.on('error', unreachable);
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: parseJson(Buffer.concat(chunks).toString('utf8')),
          }),
        );
      },
    );
    outgoing.on('error', unreachable);
    outgoing.end(payload);
  });
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
