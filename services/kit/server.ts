import type { Express } from 'express';
import { PROBLEM_ENVELOPE, type ErrorEnvelope } from './api.ts';
import { ConfigError } from './config.ts';
import { DEFAULT_MAX_CONNECTIONS } from './connections.ts';
import { httpShell } from './shell.ts';
import { RELAYED_PEER, listenSupervised, relayedPeer, supervisedListen } from './supervised.ts';
import { errorSummary, type Logger } from './logger.ts';

export interface RunningService {
  /** Base URL, e.g. http://127.0.0.1:8004 */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, lets in-flight requests finish (up to a limit), then runs the service's own cleanup. */
  close(): Promise<void>;
}

export interface ListenOptions {
  app: Express;
  host: string;
  port: number;
  logger: Logger;
  /** Releases what the service holds (database, timers, child processes), after the last request. */
  onClose?: () => Promise<void> | void;
  /** How long in-flight requests may take to finish when stopping. */
  drainMs?: number;
  /** Longest time a client may take to send a request's headers (Slowloris); past it 408 and the connection closes. */
  headersTimeoutMs?: number;
  /**
   * Longest time a client may take to send a whole request, headers and body; past it 408 and the
   * connection closes. It ends when the request has arrived: a long answer (a provider run) is not bounded by it.
   */
  requestTimeoutMs?: number;
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveTimeoutMs?: number;
  /** Connections kept open at most (`DEFAULT_MAX_CONNECTIONS`); past it idle ones are closed first, see connections.ts. */
  maxConnections?: number;
}

/** The `app.locals` member where `listen` records the address it listens on (the OpenAPI document's server). */
export const LISTEN_URL = 'listenUrl';

/** The `app.locals` member where `createApp` records the app's `ErrorEnvelope`, so that `listen` answers early refusals in it. */
export const ERROR_ENVELOPE = 'errorEnvelope';

/**
 * Ten seconds for headers (a few hundred bytes), a minute for a body (2 MB commits, 4 MB prompts, on
 * loopback). An idle connection stays open 65 s, well past the idle time of the clients' pools (fetch
 * lets a connection go 1 s before the server's announced timeout, checked about once a second): with
 * Node's 5 s, a client whose event loop was held a few seconds sent its next request on a connection the
 * server was closing at that moment, and the request failed with a reset (seen in tests on a busy machine).
 */
export const DEFAULT_TIMEOUTS = { headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 65_000 };

let supervisedPortTaken = false;

export async function listen(options: ListenOptions): Promise<RunningService> {
  // The app's own envelope (createApp records it); problem+json for an app built otherwise.
  const envelope = (options.app.locals[ERROR_ENVELOPE] as ErrorEnvelope | undefined) ?? PROBLEM_ENVELOPE;
  const server = httpShell({
    handle: options.app,
    headersTimeoutMs: options.headersTimeoutMs ?? DEFAULT_TIMEOUTS.headersTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_TIMEOUTS.requestTimeoutMs,
    keepAliveTimeoutMs: options.keepAliveTimeoutMs ?? DEFAULT_TIMEOUTS.keepAliveTimeoutMs,
    maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    early: (status, detail) => envelope.early(status, detail),
    speaker: 'This service',
  });
  // Started by the supervisor: its port is held for the app's life and handed over (or relayed), never bound here.
  // Only the first listen of a process is its port (a second listener, on a socket file of its own, binds as it says).
  const supervised = supervisedPortTaken ? undefined : supervisedListen();
  if (supervised) supervisedPortTaken = true;
  if (supervised) await listenSupervised(server, supervised, { host: options.host, port: options.port });
  else {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE') {
          reject(
            new Error(
              `Port ${options.port} on ${options.host} is already in use; stop what holds it or choose another port.`,
            ),
          );
        } else reject(err);
      });
      server.listen(options.port, options.host, () => resolve());
    });
  }
  const address = server.address();
  // On a relayed socket file the callers' port is the one the supervisor holds.
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}`;
  options.app.locals[LISTEN_URL] = url;
  if (supervised?.kind === 'socket') options.app.locals[RELAYED_PEER] = relayedPeer(options.host);
  options.logger.info(
    {
      url,
      ...(supervised
        ? { through: supervised.kind === 'handle' ? "the supervisor's socket" : "the supervisor's relay" }
        : {}),
    },
    'listening',
  );

  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    close() {
      closing ??= (async () => {
        const drained = new Promise<void>((resolve) => server.close(() => resolve()));
        // A keep-alive connection goes idle when its last answer is sent; close it then, not when the client gives up on it.
        server.closeIdleConnections();
        const sweep = setInterval(() => server.closeIdleConnections(), 25);
        const timer = setTimeout(() => server.closeAllConnections(), options.drainMs ?? 10_000);
        await drained;
        clearInterval(sweep);
        clearTimeout(timer);
        await options.onClose?.();
        options.logger.info('stopped');
      })();
      return closing;
    },
  };
}

/**
 * A service's app on the address its settings name (HOST and PORT, `commonSettings`), logging as the
 * service; `onClose` releases what it holds once the last request is done.
 */
export function serve(
  app: Express,
  settings: { host: string; port: number },
  logger: Logger,
  onClose: () => Promise<void> | void,
  options: Pick<ListenOptions, 'drainMs'> = {},
): Promise<RunningService> {
  return listen({ app, host: settings.host, port: settings.port, logger, onClose, ...options });
}

/**
 * The foreground entry of every service: start it, stop cleanly on SIGTERM/SIGINT and exit 0; a
 * configuration error prints one line naming what to fix and exits 78 (EX_CONFIG).
 */
export async function runUntilSignalled(
  name: string,
  start: () => Promise<RunningService>,
  logger?: Logger,
): Promise<void> {
  let service: RunningService;
  try {
    service = await start();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof ConfigError) {
      process.stderr.write(`${name}: configuration error: ${message}\n`);
      process.exit(78);
    }
    if (logger) logger.fatal({ err: errorSummary(err) }, 'could not start');
    process.stderr.write(`${name}: could not start: ${message}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger?.info({ signal }, 'stopping');
    service.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger?.error({ err: errorSummary(err) }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // When started by the supervisor over IPC, a closed channel means the parent is gone: stop with it.
  process.on('disconnect', () => stop('parent-gone'));
}
