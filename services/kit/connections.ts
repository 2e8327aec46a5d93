import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Connections a service keeps open at most. Each is a file descriptor, and a process usually has
 * 1,024: without a bound, 1,050 idle keep-alive connections shut every new client out. 512 leaves
 * room for the database, the log and the service's own outgoing calls.
 */
export const DEFAULT_MAX_CONNECTIONS = 512;

/**
 * An upload's rate is measured from the start of its request (the connection's accept, or the end of
 * the answer before it) over at least this long, so that a request whose headers arrived a moment ago
 * ranks as fast as its first bytes were, not as a request that has sent nothing for a while.
 */
const SHORTEST_MEASURE_MS = 100;

export interface ConnectionBound {
  /** Connections open now. */
  readonly open: number;
  /**
   * Answers true (and answers the request 503, closing its connection) when the request came on a
   * connection accepted over the bound while every other one was busy; the server's handler calls it first.
   */
  refused(req: IncomingMessage, res: ServerResponse): boolean;
}

/** What the bound does to the connections it closes: an upload it cuts is told why (408), in the server's envelope. */
export interface BoundAnswers {
  /** The answer to a newcomer when every other connection is busy with a request that has arrived. */
  busy(res: ServerResponse): void;
  /** The raw HTTP answer written to an upload closed to make room (its request never reached a handler's answer). */
  slowUpload(): string;
}

/** Where a connection stands: when its current request began (accept, or its last answer), and the bytes read by then. */
interface Connection {
  /** Order of the last answer (or of the accept): the longest idle has the lowest. */
  idleSince: number;
  /** When the current request's bytes began to arrive at the earliest, and the socket's bytes read at that moment. */
  startedAt: number;
  bytesAtStart: number;
  /** Requests in flight on it. */
  busy: number;
  /** It has carried an answer (an idle one is a kept-alive connection, not a newcomer). */
  served?: boolean;
  /** The request whose body may still be arriving. */
  request?: IncomingMessage;
}

/**
 * A connection that has not sent a whole request's headers yet is a newcomer for this long: a client on
 * this machine sends them at once, so one that is older is slow (or idle on purpose, Slowloris).
 */
const NEWCOMER_MS = 2_000;

/**
 * Keeps at most `max` connections open. When a new one would go over, the connections closed to make
 * room are, in order: those without a request in flight (idle keep-alive ones, the longest idle first,
 * and ones that have not sent their headers for longer than a newcomer would, the oldest first); then the
 * uploads (requests whose body is still arriving), the fewest bytes per second first, each told so with a
 * 408. Never a request that has arrived, and never another newcomer (a client that connected a moment ago
 * and is sending its headers). When no connection can go, the new one is answered 503 (`answers.busy`)
 * at its first request and closed; it can still be closed first by a later newcomer.
 */
export function boundConnections(server: Server, max: number, answers: BoundAnswers): ConnectionBound {
  if (!Number.isInteger(max) || max < 1) throw new Error('maxConnections must be a whole number of at least 1.');
  const open = new Map<Socket, Connection>();
  const overBound = new WeakSet<Socket>();
  let clock = 0;

  server.on('connection', (socket: Socket) => {
    const now = Date.now();
    open.set(socket, { idleSince: ++clock, startedAt: now, bytesAtStart: 0, busy: 0 });
    socket.once('close', () => open.delete(socket));
    if (open.size <= max) return;
    // Close a few more idle ones than needed, so that a burst of newcomers does not sort them every time.
    const excess = open.size - max + Math.ceil(max / 16);
    const idle = [...open]
      .filter(([s, c]) => s !== socket && c.busy === 0 && (c.served || now - c.startedAt > NEWCOMER_MS))
      .sort((a, b) => a[1].idleSince - b[1].idleSince);
    for (const [s] of idle.slice(0, excess)) {
      open.delete(s);
      s.destroy();
    }
    if (open.size > max) closeSlowestUploads(open.size - max, socket);
    if (open.size > max) overBound.add(socket);
  });

  /** Closes `count` uploads, the slowest first, each with a 408 that says why. */
  const closeSlowestUploads = (count: number, newcomer: Socket) => {
    const now = Date.now();
    const rate = (s: Socket, c: Connection) =>
      (s.bytesRead - c.bytesAtStart) / Math.max(now - c.startedAt, SHORTEST_MEASURE_MS);
    const uploads = [...open]
      .filter(([s, c]) => s !== newcomer && c.request !== undefined && !c.request.complete)
      .map(([s, c]) => ({ s, rate: rate(s, c) }))
      .sort((a, b) => a.rate - b.rate);
    for (const { s } of uploads.slice(0, count)) {
      open.delete(s);
      // Its handler has not answered (the body never arrived): the answer goes on the socket itself.
      const answering = (s as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
      if (s.writable && !answering) s.write(answers.slowUpload());
      s.destroySoon();
    }
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const connection = open.get(socket);
    if (!connection) return;
    connection.busy += 1;
    connection.request = req;
    res.once('close', () => {
      connection.busy = Math.max(0, connection.busy - 1);
      if (connection.request === req) connection.request = undefined;
      if (!open.has(socket)) return;
      connection.served = true;
      connection.idleSince = ++clock;
      connection.startedAt = Date.now();
      connection.bytesAtStart = socket.bytesRead;
    });
  });

  return {
    get open() {
      return open.size;
    },
    refused(req, res) {
      if (!overBound.has(req.socket)) return false;
      res.shouldKeepAlive = false;
      answers.busy(res);
      return true;
    },
  };
}
