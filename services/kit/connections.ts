import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Connections a service keeps open at most. Each is a file descriptor, and a process usually has
 * 1,024: without a bound, 1,050 idle keep-alive connections shut every new client out. 512 leaves
 * room for the database, the log and the service's own outgoing calls.
 */
export const DEFAULT_MAX_CONNECTIONS = 512;

export interface ConnectionBound {
  /** Connections open now. */
  readonly open: number;
  /**
   * Answers true (and answers the request 503, closing its connection) when the request came on a
   * connection accepted over the bound while every other one was busy; the server's handler calls it first.
   */
  refused(req: IncomingMessage, res: ServerResponse): boolean;
}

/**
 * Keeps at most `max` connections open. When a new one would go over, the connections without a request in
 * flight (idle keep-alive ones, and ones that never sent anything) are closed first, the longest idle
 * first; a request in flight is never cut. When every other connection is busy, the new one is answered
 * 503 (`answerBusy`) at its first request and closed; it can still be closed first by a later newcomer.
 */
export function boundConnections(
  server: Server,
  max: number,
  answerBusy: (res: ServerResponse) => void,
): ConnectionBound {
  if (!Number.isInteger(max) || max < 1) throw new Error('maxConnections must be a whole number of at least 1.');
  /** Every open connection and when it last finished an answer (or was accepted); busy ones are in `busy`. */
  const open = new Map<Socket, number>();
  const busy = new Map<Socket, number>();
  const overBound = new WeakSet<Socket>();
  let clock = 0;

  const forget = (socket: Socket) => {
    open.delete(socket);
    busy.delete(socket);
  };

  server.on('connection', (socket: Socket) => {
    open.set(socket, ++clock);
    socket.once('close', () => forget(socket));
    if (open.size <= max) return;
    // Close a few more than needed, so that a burst of newcomers does not sort the connections every time.
    const excess = open.size - max + Math.ceil(max / 16);
    const idle = [...open].filter(([s]) => s !== socket && !busy.has(s)).sort((a, b) => a[1] - b[1]);
    for (const [s] of idle.slice(0, excess)) {
      forget(s);
      s.destroy();
    }
    if (open.size > max) overBound.add(socket);
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    if (!open.has(socket)) return;
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (busy.get(socket) ?? 1) - 1;
      if (left > 0) busy.set(socket, left);
      else busy.delete(socket);
      if (open.has(socket)) open.set(socket, ++clock);
    });
  });

  return {
    get open() {
      return open.size;
    },
    refused(req, res) {
      if (!overBound.has(req.socket)) return false;
      res.shouldKeepAlive = false;
      answerBusy(res);
      return true;
    },
  };
}
