/**
 * A service's port, held by the supervisor for the app's life, so that no other program can take it
 * while the app runs: not at a restart, not after a crash, not while a person has stopped the service.
 *
 * Bound once (`HeldPort.bind`) and listening at once (a bound socket that does not listen can be bound
 * again by any program that sets SO_REUSEADDR, as Node's own listeners do). While no process of the
 * service serves it, the supervisor answers on it itself: 503 in the service's own envelope, saying why
 * and what to do (`StandInAnswer`). Two ways to serve it, by what the launcher's processes can take:
 *
 * - `handle` (Node children): the bound socket goes to the child over its IPC channel; the child listens
 *   on it and sends a copy back, then the supervisor's own listener (and its descriptor) closes and it
 *   keeps the copy, never accepting on it while the child serves. Connections that arrive between a
 *   crash and the supervisor's answer wait in the kernel's backlog. Node's cluster module shares a port
 *   the same way (`net._createServerHandle`).
 * - `relay` (Electron utility processes, whose channel carries no sockets): the supervisor accepts every
 *   connection and pipes it to the socket file the service listens on, inside the app's 0700 data folder.
 */
import { lookup } from 'node:dns/promises';
import type { Server as HttpServer } from 'node:http';
import net, { type Socket } from 'node:net';
import { getSystemErrorName } from 'node:util';
import { httpShell, type EarlyAnswer } from '../../services/kit/shell.ts';

/** A bound TCP socket as Node's own cluster module holds it (libuv's handle). */
interface TcpHandle {
  close(callback?: () => void): void;
  getsockname(out: { port?: number; address?: string }): number;
}

declare module 'node:net' {
  /** Node's own (internal) way to bind a TCP handle, as its cluster module does: the handle, or a negative errno. */
  function _createServerHandle(
    address: string,
    port: number,
    family: 4 | 6,
    fd: undefined,
    flags: number,
  ): TcpHandle | number;
}

const createServerHandle = net._createServerHandle;

/** How long a caller may take to send a request's headers to the supervisor's stand-in (the services' own bound). */
const STAND_IN_TIMEOUT_MS = 10_000;

/** The port was in use when the supervisor tried to bind it. */
export class PortTakenError extends Error {
  readonly code = 'EADDRINUSE';
}

/** What the supervisor answers for a service that no process serves: always 503, with a sentence and when to try again. */
export interface StandInAnswer {
  detail: string;
  retryAfterSeconds?: number;
}

export type HeldPortMode = 'handle' | 'relay';

export interface HeldPortParts {
  host: string;
  port: number;
  mode: HeldPortMode;
  /** The service's error envelope (problem+json, or the provider's OpenAI envelope). */
  early: EarlyAnswer;
  /** Who answers in the envelope's sentences: "The persona store". */
  speaker: string;
  /** The answer of the moment (the service's state says why it is not served). */
  answer: () => StandInAnswer;
}

export class HeldPort {
  /** The supervisor's own descriptor of the socket: never closed while the app runs but for a copy that replaces it. */
  private handle: TcpHandle;
  /** Handle mode: the supervisor's listener on `handle` while no process serves (closing it closes `handle`). */
  private standIn?: HttpServer;
  /** Relay mode: the supervisor's listener for the app's life, and where it relays to while the service serves. */
  private relay?: net.Server;
  private relayTo?: string;
  private readonly relayed = new Set<Socket>();
  /** Answers on connections the relay cannot pass on (no process serves), never listening itself. */
  private readonly answering: HttpServer;
  private closed = false;

  private constructor(
    private readonly parts: HeldPortParts,
    handle: TcpHandle,
  ) {
    this.handle = handle;
    this.answering = this.standInServer();
  }

  /**
   * Binds host:port and listens (answering for the service until a process serves it); rejects with
   * PortTakenError when another program holds it. `host` may be a name (`localhost`), resolved as Node's
   * own listen does.
   */
  static async bind(parts: HeldPortParts): Promise<HeldPort> {
    const bare = parts.host.replace(/^\[|\]$/g, '');
    const { address, family } = net.isIP(bare)
      ? { address: bare, family: net.isIP(bare) }
      : await lookup(bare, { verbatim: true });
    const made = createServerHandle(address, parts.port, family === 6 ? 6 : 4, undefined, 0);
    if (typeof made === 'number') {
      const name = getSystemErrorName(made);
      if (name === 'EADDRINUSE') throw new PortTakenError(`Port ${parts.port} on ${parts.host} is in use.`);
      throw new Error(`Port ${parts.port} on ${parts.host} cannot be bound (${name}).`);
    }
    const held = new HeldPort(parts, made);
    await held.listenForService();
    return held;
  }

  /** The port actually bound (the same as asked, unless 0 was asked). */
  get port(): number {
    const out: { port?: number } = {};
    this.handle.getsockname(out);
    return out.port ?? this.parts.port;
  }

  /** Handle mode: the socket a new process of the service listens on (sent over its IPC channel). */
  socketForChild(): unknown {
    return this.handle;
  }

  /**
   * A process of the service serves the port now: in handle mode it sent back its copy of the socket
   * (the supervisor's listener closes and the copy is kept); in relay mode it listens on `path`.
   */
  served(by: { handle: unknown } | { path: string }): void {
    if (this.closed) {
      if ('handle' in by) (by.handle as TcpHandle).close();
      return;
    }
    if ('path' in by) {
      this.relayTo = by.path;
      return;
    }
    const copy = by.handle as TcpHandle;
    if (!this.standIn) {
      // Already served (a copy from a process that is no longer the current one): the one kept is enough.
      copy.close();
      return;
    }
    // Closing the listener closes its descriptor; the copy, taken first, keeps the socket bound and listening.
    const standIn = this.standIn;
    this.standIn = undefined;
    this.handle = copy;
    standIn.close();
    standIn.closeIdleConnections();
  }

  /** No process of the service serves the port: the supervisor answers its callers (503, `answer`). */
  unserved(): void {
    if (this.closed) return;
    if (this.parts.mode === 'relay') {
      this.relayTo = undefined;
      return;
    }
    if (!this.standIn) void this.listenForService().catch(() => undefined);
  }

  /** Releases the port (the app quits). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const socket of this.relayed) socket.destroy();
    const listener = this.standIn ?? this.relay;
    this.standIn = undefined;
    this.relay = undefined;
    if (listener) {
      // The listener owns the handle: closing it releases the port.
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    } else {
      this.handle.close();
    }
    this.answering.closeAllConnections();
  }

  private async listenForService(): Promise<void> {
    const listener = this.parts.mode === 'relay' ? net.createServer({ pauseOnConnect: true }) : this.standInServer();
    if (this.parts.mode === 'relay') listener.on('connection', (socket: Socket) => this.relayConnection(socket));
    await new Promise<void>((resolve, reject) => {
      listener.once('error', (err: NodeJS.ErrnoException) => {
        // libuv reports a bind to a port in use only when the socket starts listening.
        reject(
          err.code === 'EADDRINUSE'
            ? new PortTakenError(`Port ${this.parts.port} on ${this.parts.host} is in use.`)
            : err,
        );
      });
      listener.listen(this.handle, () => resolve());
    });
    if (this.parts.mode === 'relay') this.relay = listener;
    else this.standIn = listener as HttpServer;
  }

  private standInServer(): HttpServer {
    const { early, speaker } = this.parts;
    return httpShell({
      handle: (_req, res) => {
        const { detail, retryAfterSeconds } = this.parts.answer();
        const { type, body } = early(503, detail);
        res.shouldKeepAlive = false;
        res
          .writeHead(503, {
            'Content-Type': type,
            ...(retryAfterSeconds !== undefined ? { 'Retry-After': String(retryAfterSeconds) } : {}),
          })
          .end(body);
      },
      // It answers as soon as a request's headers are in: the services' bound for headers is enough for all of it.
      headersTimeoutMs: STAND_IN_TIMEOUT_MS,
      requestTimeoutMs: STAND_IN_TIMEOUT_MS,
      maxConnections: 512,
      early,
      speaker,
    });
  }

  /** Relay mode: pipes the connection to the service's socket file, or answers it here when nothing serves. */
  private relayConnection(socket: Socket): void {
    const target = this.relayTo;
    if (!target) {
      this.answer(socket);
      return;
    }
    const upstream = net.connect(target);
    let connected = false;
    this.relayed.add(socket);
    socket.once('close', () => {
      this.relayed.delete(socket);
      upstream.destroy();
    });
    socket.on('error', () => upstream.destroy());
    upstream.once('connect', () => {
      connected = true;
      socket.pipe(upstream);
      upstream.pipe(socket);
      socket.resume();
    });
    upstream.once('close', () => {
      if (connected) socket.destroy();
    });
    upstream.on('error', () => {
      if (connected) return socket.destroy();
      // The process went away between the check and the connect: answered as for a service nothing serves.
      this.relayed.delete(socket);
      this.answer(socket);
    });
  }

  private answer(socket: Socket): void {
    // This server never listens, so Node's own header timeout does not run for it: the bound is set here.
    const bound = setTimeout(() => socket.destroy(), STAND_IN_TIMEOUT_MS);
    socket.once('close', () => clearTimeout(bound));
    this.answering.emit('connection', socket);
    socket.resume();
  }
}
