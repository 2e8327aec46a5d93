import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { ConfigError } from './config.ts';
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
}

export async function listen(options: ListenOptions): Promise<RunningService> {
  const server: Server = createServer(options.app);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') {
        reject(new Error(`Port ${options.port} on ${options.host} is already in use; stop what holds it or choose another port.`));
      } else reject(err);
    });
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${host}:${port}`;
  options.logger.info({ url }, 'listening');

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
 * The foreground entry of every service: start it, stop cleanly on SIGTERM/SIGINT and exit 0; a
 * configuration error prints one line naming what to fix and exits 78 (EX_CONFIG).
 */
export async function runUntilSignalled(name: string, start: () => Promise<RunningService>, logger?: Logger): Promise<void> {
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
