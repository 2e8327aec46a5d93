/**
 * The headless console: the renderer build and the console API over HTTP on loopback, behind a
 * per-launch secret in the printed URL's fragment (`/#secret=…`), which a browser never sends to any
 * server. The page keeps it in sessionStorage (scoped to this origin, port included) and sends it as
 * the `X-Console-Secret` header; there is no cookie, since a cookie would go to every server on
 * 127.0.0.1 whatever its port. Every request is also checked for a loopback Host (DNS rebinding) and
 * a same-origin Origin (other pages in the browser).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopbackHost } from '../../services/kit/config.ts';
import { parseHostHeader } from '../../services/kit/host-check.ts';
import { httpShell } from '../../services/kit/shell.ts';
import { CONTENT_SECURITY_POLICY, readConsoleBuild, targetDir } from '../supervisor/build-outputs.ts';
import { createConsoleApi } from './api.ts';
import type { ConsoleServer, ConsoleServerParts } from './server-parts.ts';
import { SECRET_FORMATS } from '../../common/secret-formats.ts';

const BODY_LIMIT = 64 * 1024;
const JSON_TYPE = 'application/json; charset=utf-8';
export const SECRET_HEADER = 'x-console-secret';
/** A loopback client sends its headers at once and a request of at most 64 KiB in moments; anything slower is stuck or hostile. */
export const DEFAULT_CONSOLE_TIMEOUTS = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 };

/** One browser tab uses about six connections, a script one: a bound far above that, far below the descriptor limit. */
export const DEFAULT_CONSOLE_MAX_CONNECTIONS = 128;

/** The server's limits on slow clients and on connections (options so that a test can meet them quickly). */
export interface ConsoleTimeouts {
  /** Connections kept open at most; past it idle ones are closed first (services/kit/connections.ts). */
  maxConnections?: number;
  /** How long an idle keep-alive connection stays open (Node's 5 s unless given). */
  keepAliveTimeoutMs?: number;
  /** Longest time a client may take to send a request's headers (Slowloris); past it 408 and the connection closes. */
  headersTimeoutMs?: number;
  /** Longest time a client may take to send a whole request; past it 408. The answer that follows is not bounded by it. */
  requestTimeoutMs?: number;
}

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': `${CONTENT_SECURITY_POLICY}; frame-ancestors 'none'`,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

export async function startConsoleServer(options: ConsoleServerParts & ConsoleTimeouts): Promise<ConsoleServer> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host)) {
    throw new Error(
      `The console listens on loopback only; "${host}" is not a loopback address (127.0.0.1, ::1 or localhost).`,
    );
  }
  // The console as `npm run build` wrote it (npm run serve builds what changed first); never built here.
  const built = readConsoleBuild(targetDir('console'));
  if ('missing' in built) throw new Error(built.missing);
  // A Map: a path that names an object's own property (/constructor, /__proto__) is a page that is not there.
  const files = new Map(Object.entries(built.files));
  const api = createConsoleApi({ supervisor: options.supervisor });
  const secret = newConsoleSecret();
  let port = 0;

  // The services' HTTP shell: its timeouts, connection bound and Node's own refusals, answered in the API's shape.
  const server = httpShell({
    handle: (req, res) => {
      handle(req, res).catch(() => {
        if (!res.headersSent) refuse(res, 500, 'The console could not answer; reload the page.');
        else res.destroy();
      });
    },
    headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_CONSOLE_TIMEOUTS.headersTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_CONSOLE_TIMEOUTS.requestTimeoutMs,
    keepAliveTimeoutMs: options.keepAliveTimeoutMs,
    maxConnections: options.maxConnections ?? DEFAULT_CONSOLE_MAX_CONNECTIONS,
    early: (status, message) => ({ type: JSON_TYPE, body: JSON.stringify({ ok: false, error: { message, status } }) }),
    speaker: 'The console',
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    const hostHeader = req.headers.host ?? '';
    if (!isThisConsole(hostHeader, port)) {
      return refuse(
        res,
        421,
        `The console answers only at http://127.0.0.1:${port}; open the URL that was printed when it started.`,
      );
    }
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${hostHeader}`) {
      return refuse(res, 403, 'Requests from other web pages are refused; use the console page itself.');
    }
    const url = new URL(req.url ?? '/', `http://${hostHeader}`);

    if (url.pathname === '/api/call') {
      if (!authorized(req)) {
        return refuse(
          res,
          401,
          'Open the console with the URL printed by `npm run serve` (the latest launch); its secret is in the part after "#".',
        );
      }
      if (req.method !== 'POST')
        return refuse(res, 405, 'Call the console API with POST and a JSON body {"method", "params"}.');
      const fetchSite = req.headers['sec-fetch-site'];
      if (fetchSite !== undefined && fetchSite !== 'same-origin') {
        return refuse(res, 403, 'Requests from other web pages are refused; use the console page itself.');
      }
      if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
        return refuse(res, 415, 'Send the console request as JSON (Content-Type: application/json).');
      }
      const text = await readBody(req);
      if (text === undefined)
        return refuse(res, 413, `A console request is at most ${BODY_LIMIT / 1024} KiB; send less.`);
      let request: unknown;
      try {
        request = JSON.parse(text);
      } catch {
        return refuse(res, 400, 'The console request is not valid JSON; send {"method": "...", "params": {...}}.');
      }
      const result = await api.call(request as never);
      res.writeHead(200, { 'Content-Type': JSON_TYPE }).end(JSON.stringify(result));
      return;
    }

    // The page, its script and its style are the same for everyone and carry nothing of the person's: only the API needs the secret.
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'The console pages are read with GET.');
    // A secret typed into the query (an old link) opens nothing; it leaves the address bar at once.
    if (url.searchParams.has('secret')) {
      res.writeHead(303, { Location: '/' }).end();
      return;
    }
    const file = files.get(url.pathname === '/' ? 'index.html' : url.pathname.slice(1));
    if (!file) return refuse(res, 404, `There is no console page ${url.pathname.slice(0, 100)}; open / instead.`);
    res.writeHead(200, { 'Content-Type': file.contentType }).end(req.method === 'HEAD' ? undefined : file.body);
  }

  function authorized(req: IncomingMessage): boolean {
    const header = req.headers[SECRET_HEADER];
    return typeof header === 'string' && sameSecret(header, secret);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(`Port ${options.port} on ${host} is already in use; choose another port for the console.`)
          : err,
      );
    });
    server.listen(options.port ?? 0, host, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const base = host === '::1' ? `http://[::1]:${port}` : `http://${host === 'localhost' ? '127.0.0.1' : host}:${port}`;

  let closing: Promise<void> | undefined;
  return {
    url: `${base}/#secret=${secret}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** A Host naming this console: a loopback name with the console's own port, written. */
function isThisConsole(hostHeader: string, port: number): boolean {
  const host = parseHostHeader(hostHeader);
  return host !== undefined && isLoopbackHost(host.name) && host.port === port;
}

/** This launch's secret, in the format the persona store refuses to keep. */
export function newConsoleSecret(): string {
  const { prefix, bytes, encoding } = SECRET_FORMATS.consoleSecret;
  return `${prefix}${randomBytes(bytes).toString(encoding)}`;
}

function sameSecret(given: string, secret: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > BODY_LIMIT) over = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(over ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Refusals answer in the API's own shape. */
function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'Content-Type': JSON_TYPE }).end(JSON.stringify({ ok: false, error: { message, status } }));
}
