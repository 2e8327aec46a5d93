/**
 * The kit's side of the channel to the supervisor that started this process (main/supervisor/): where
 * the service listens, and the liveness question. The supervisor holds each service's port for the
 * app's life, so a service it started never binds the port itself: it asks for the supervisor's bound
 * socket over the IPC channel (`handle`), or, in a process that cannot receive one (an Electron utility
 * process), listens on a socket file in the data folder that the supervisor relays the port to
 * (`socket:<path>`). A service started alone (no `HUB_LISTEN`) binds its own address as before.
 *
 * The messages are this module's; the supervisor imports them from here.
 */
import { isIP, type Server } from 'node:net';

/** Set by the supervisor for the process it starts: `handle`, or `socket:<path>` (a Unix socket, or a Windows named pipe). */
export const LISTEN_VARIABLE = 'HUB_LISTEN';

/**
 * The `app.locals` member that names the peer of a request relayed by the supervisor (which arrives over a
 * socket file, with no address): a loopback address when the relayed port is bound to loopback only,
 * so that what only this machine may call (`/metrics`) stays callable through the relay; absent otherwise.
 */
export const RELAYED_PEER = 'relayedPeer';

export function relayedPeer(host: string): string | undefined {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === '::1') return '::1';
  if (isIP(bare) === 4 && bare.startsWith('127.')) return '127.0.0.1';
  return bare === 'localhost' ? '127.0.0.1' : undefined;
}

/** Sent by a service: asks for its port's socket (with a handle mode), says it listens (with the socket back), answers a ping. */
export type ServiceMessage =
  { hub: 'listen'; host: string; port: number } | { hub: 'listening' } | { hub: 'pong'; id: number };

/** Sent by the supervisor: the socket asked for (or why there is none), a liveness question. */
export type SupervisorMessage = { hub: 'listen'; refused?: string } | { hub: 'ping'; id: number };

/** Where a supervised service listens: on the socket the supervisor hands it, or on a socket file it relays to. */
export type SupervisedListen = { kind: 'handle' } | { kind: 'socket'; path: string };

/** What `HUB_LISTEN` says; undefined for a service started alone (or a value this kit does not know, which it refuses). */
export function supervisedListen(env: NodeJS.ProcessEnv = process.env): SupervisedListen | undefined {
  const value = env[LISTEN_VARIABLE];
  if (value === undefined || value === '') return undefined;
  if (value === 'handle') return { kind: 'handle' };
  if (value.startsWith('socket:') && value.length > 'socket:'.length)
    return { kind: 'socket', path: value.slice('socket:'.length) };
  throw new Error(
    `${LISTEN_VARIABLE} is "${value.slice(0, 40)}", which is neither "handle" nor "socket:<path>"; it is set by the supervisor, not by hand.`,
  );
}

/** The channel to the parent: a Node child's IPC (which carries handles), or an Electron utility process's parentPort (which does not). */
export interface ParentChannel {
  readonly carriesHandles: boolean;
  send(message: ServiceMessage, handle?: unknown): void;
  onMessage(listener: (message: unknown, handle?: unknown) => void): void;
}

interface ElectronParentPort {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (event: { data: unknown }) => void): void;
}

function isParentPort(port: unknown): port is ElectronParentPort {
  return (
    typeof port === 'object' &&
    port !== null &&
    'postMessage' in port &&
    typeof port.postMessage === 'function' &&
    'on' in port &&
    typeof port.on === 'function'
  );
}

export function parentChannel(): ParentChannel | undefined {
  if (typeof process.send === 'function') {
    return {
      carriesHandles: true,
      send: (message, handle) => {
        // A supervisor that is gone cannot be told: the 'disconnect' event stops the service.
        if (process.connected) process.send!(message, handle as never);
      },
      onMessage: (listener) => void process.on('message', (message, handle) => listener(message, handle)),
    };
  }
  // Electron's utility process has `process.parentPort`; plain Node has none.
  const port: unknown = 'parentPort' in process ? process.parentPort : undefined;
  if (isParentPort(port)) {
    return {
      carriesHandles: false,
      send: (message) => port.postMessage(message),
      onMessage: (listener) => port.on('message', (event) => listener(event.data)),
    };
  }
  return undefined;
}

function isMessage(message: unknown): message is { hub: string } {
  return typeof message === 'object' && message !== null && typeof (message as { hub?: unknown }).hub === 'string';
}

/**
 * Listens as the supervisor said: on the socket it hands over (and hands a copy back, so that it holds
 * the port while no process of this service does), or on the socket file it relays to. Then answers its
 * liveness pings from this event loop, so that a ping never waits behind the public listener's queue.
 */
export async function listenSupervised(
  server: Server,
  where: SupervisedListen,
  address: { host: string; port: number },
): Promise<void> {
  const channel = parentChannel();
  if (!channel)
    throw new Error(
      `${LISTEN_VARIABLE} is set, but this process has no channel to a supervisor; start the service alone without it.`,
    );
  if (where.kind === 'handle') {
    if (!channel.carriesHandles)
      throw new Error(`${LISTEN_VARIABLE}=handle needs an IPC channel that carries sockets; this process's does not.`);
    const handle = await new Promise<unknown>((resolve, reject) => {
      const gone = () => reject(new Error('The supervisor went away before it handed over the port.'));
      process.once('disconnect', gone);
      const onAnswer = (message: unknown, handle?: unknown) => {
        if (!isMessage(message) || message.hub !== 'listen') return;
        process.off('message', onAnswer);
        process.off('disconnect', gone);
        const refused = (message as { refused?: unknown }).refused;
        if (typeof refused === 'string') reject(new Error(refused));
        else if (!handle) reject(new Error('The supervisor answered without the port\u2019s socket.'));
        else resolve(handle);
      };
      process.on('message', onAnswer);
      channel.send({ hub: 'listen', host: address.host, port: address.port });
    });
    await listenOn(server, handle);
    channel.send({ hub: 'listening' }, handle);
  } else {
    await listenOn(server, where.path);
    channel.send({ hub: 'listening' });
  }
  channel.onMessage((message) => {
    if (isMessage(message) && message.hub === 'ping')
      channel.send({ hub: 'pong', id: Number((message as { id?: unknown }).id) });
  });
}

function listenOn(server: Server, target: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(target as string, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
