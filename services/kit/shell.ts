import { STATUS_CODES, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { boundConnections } from './connections.ts';

/** The body of an answer given before any handler runs (Node's refusals, the connection bound), in the server's envelope. */
export type EarlyAnswer = (status: number, detail: string) => { type: string; body: string };

/** What `httpShell` is built from: the request handler, its limits, and how an early refusal is written. */
export interface ShellParts {
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Node's own when absent. */
  keepAliveTimeoutMs?: number;
  maxConnections: number;
  early: EarlyAnswer;
  /** Who is answering, in the sentences: "This service", "The console". */
  speaker: string;
}

/**
 * The HTTP server under every service and the console: Slowloris timeouts checked every second, at most
 * `maxConnections` open (idle ones closed first, then the slowest uploads, 503 when all are busy with
 * requests that have arrived), Node's own refusals (not
 * HTTP/1.1, headers over 16 KB, too slow) answered with a body that says what to change. A request
 * without Host reaches the handler, whose Host check refuses it with a sentence (Node's own 400 has none).
 */
export function httpShell(parts: ShellParts): Server {
  const { headersTimeoutMs, requestTimeoutMs, early, speaker } = parts;
  if (headersTimeoutMs > requestTimeoutMs)
    throw new Error('headersTimeoutMs must not exceed requestTimeoutMs: the headers are part of the request.');
  const server: Server = createServer({
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    // Node looks for requests past their time only this often (default 30 s, which would stretch a 10 s limit to 40 s).
    connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(headersTimeoutMs / 4))),
    requireHostHeader: false,
  });
  const bound = boundConnections(server, parts.maxConnections, {
    busy: (res) => {
      const { type, body } = early(
        503,
        `${speaker} has as many connections open as it keeps, all of them busy; try again in a moment, and reuse one connection for several requests.`,
      );
      res.writeHead(503, { 'Content-Type': type, 'Retry-After': '1' }).end(body);
    },
    slowUpload: () =>
      rawAnswer(
        408,
        `${speaker} was short of connections and closed this one, whose body was arriving slower than any other's; send the body at once, without pauses.`,
        early,
      ),
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!bound.refused(req, res)) parts.handle(req, res);
  });
  if (parts.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = parts.keepAliveTimeoutMs;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) =>
    answerClientError(err, socket, early, speaker, parts),
  );
  return server;
}

/** What Node would answer (400, 408, 431, with no body), with a body that says what to change; then the connection closes. */
function answerClientError(
  err: NodeJS.ErrnoException,
  socket: Socket,
  render: EarlyAnswer,
  speaker: string,
  limits: Pick<ShellParts, 'headersTimeoutMs' | 'requestTimeoutMs'>,
): void {
  // A client that went away, or an answer already under way on this connection: nothing more can be said on it.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, detail]: [number, string] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [
          408,
          `The request did not arrive in time: ${speaker.toLowerCase()} waits at most ${seconds(limits.headersTimeoutMs)} for a request's headers and ${seconds(limits.requestTimeoutMs)} for the whole request; send its headers and body at once, without pauses.`,
        ]
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [
            431,
            `The request line and headers are larger than ${speaker.toLowerCase()} reads (16 KB); send a shorter URL and fewer or smaller headers.`,
          ]
        : [
            400,
            'The request is not valid HTTP/1.1 (request line, header names and values, or body framing); send a well-formed request.',
          ];
  socket.end(rawAnswer(status, detail, render));
}

/** An answer written on the socket itself, before or instead of a handler's, after which the connection closes. */
function rawAnswer(status: number, detail: string, render: EarlyAnswer): string {
  const { type, body } = render(status, detail);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** "10 s", "1.5 s", "250 ms". */
function seconds(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}
