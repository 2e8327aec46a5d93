/**
 * `npm run serve` (and `npm start` where Electron's binary is not available): builds what changed (the
 * console and the service bundles, through main/build/), then every service as a plain Node child, the
 * console over loopback with a per-launch secret, all stopped on Ctrl-C.
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { appDataDir } from '../services/kit/config.ts';
import { build, buildErrors } from './build/build.ts';
import { refuseOtherNodeLine } from './node-line.ts';
import type { ServiceStatus } from '../common/contract.ts';
import { serviceNeed } from '../common/needs.ts';
import { SERVICES } from '../common/services.ts';
import type { ConsoleServer } from './console/server-parts.ts';
import { startConsoleServer } from './console/server.ts';
import { ServiceSupervisor } from './supervisor/supervisor.ts';

const USAGE = `Usage: npm run serve -- [--data-dir <path>] [--console-port <port>]

Starts every service on loopback, waits until each is ready, prints the URLs, and stops them all on Ctrl-C.
  --data-dir <path>      keep all state in this folder (default: ${appDataDir()})
  --console-port <port>  port for the console (default: any free port)
Each service's port comes from its own variable (${SERVICES.map((s) => `${s.prefix}PORT`).join(', ')}).`;

function line(s: ServiceStatus): string {
  const head = `  ${s.name.padEnd(17)} ${s.state.padEnd(11)} ${s.url}`;
  const text = s.lastError && s.state !== 'ready' ? `${head}\n${' '.repeat(20)}${s.lastError}` : head;
  // A port another program holds: the one thing to do, and where to start the service afterwards.
  const need = s.portTaken ? serviceNeed(s) : undefined;
  return need
    ? `${text}\n${' '.repeat(20)}What to do: ${need.action} (on the console's Services page, or stop this with Ctrl-C and run \`npm run serve\` again).`
    : text;
}

async function main(): Promise<void> {
  refuseOtherNodeLine();
  let args;
  try {
    args = parseArgs({
      options: {
        'data-dir': { type: 'string' },
        'console-port': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const consolePort = args['console-port'] === undefined ? 0 : Number(args['console-port']);
  if (!Number.isInteger(consolePort) || consolePort < 0 || consolePort > 65535) {
    process.stderr.write(`--console-port must be a port number 0-65535.\n\n${USAGE}\n`);
    process.exit(2);
  }
  const dataDir = resolve(args['data-dir'] ?? appDataDir());
  const built = await build({ targets: ['console', 'services'] });
  const fresh = Object.entries(built)
    .filter(([, r]) => r.built)
    .map(([t]) => t);
  if (fresh.length) process.stdout.write(`Built ${fresh.join(' and ')} (only what changed).\n`);
  const errors = buildErrors(built);
  // A service that does not compile then fails from source with the same error in its log.
  if (errors)
    process.stderr.write(`The build failed:\n${errors}\nServices whose bundles are out of date run from source.\n`);
  const supervisor = new ServiceSupervisor({ dataDir });
  process.stdout.write(`Data folder: ${dataDir}\nStarting ${supervisor.services().join(', ')}...\n`);

  let stopping = false;
  let stoppingSince = 0;
  let consoleServer: ConsoleServer | undefined;
  const shutdown = async (signal: string) => {
    if (stopping) {
      // Ctrl-C reaches npm and us at once, and npm passes it on too: only a later press forces the exit.
      if (Date.now() - stoppingSince < 1_000) return;
      process.stdout.write(
        'Stopping already; exiting now. The services end by themselves when this process is gone.\n',
      );
      process.exit(130);
    }
    stopping = true;
    stoppingSince = Date.now();
    process.stdout.write(`\n${signal}: stopping every service...\n`);
    // Mark every service as stopped at once, so that none of them is restarted while the console closes.
    const closing = supervisor.close();
    await consoleServer?.close().catch(() => undefined);
    await closing;
    process.stdout.write('Stopped.\n');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  supervisor.on('status', (s: ServiceStatus) => {
    if (!stopping && ['ready', 'degraded', 'backing-off', 'gave-up'].includes(s.state))
      process.stdout.write(`${line(s)}\n`);
  });

  // The console first: its port must be known before the gateway starts, which refuses signals to it.
  let consoleLine: string;
  try {
    consoleServer = await startConsoleServer({ supervisor, host: '127.0.0.1', port: consolePort });
    supervisor.refuseSignalsTo(Number(new URL(consoleServer.url).port));
    consoleLine = `Console: ${consoleServer.url}`;
  } catch (err) {
    consoleLine = `Console: could not start (${(err as Error).message}); the services run without it.`;
  }

  await supervisor.startAll();

  // Summarise once everything has settled, or after 20 s with the reason each one is not ready yet
  // (the provider's probe of its CLI alone may take two minutes); later changes are printed as they come.
  const statuses = await supervisor.waitUntilSettled(undefined, 20_000).catch(() => supervisor.status());
  if (stopping) return;
  const ready = statuses.filter((s) => s.state === 'ready').length;
  process.stdout.write(
    `\n${ready === statuses.length ? 'All services are ready' : `${ready} of ${statuses.length} services are ready`}:\n`,
  );
  for (const s of statuses) process.stdout.write(`${line(s)}\n`);
  if (statuses.some((s) => s.state === 'starting' || s.state === 'live')) {
    process.stdout.write(
      'Services not ready yet are still being checked; each is printed here when it becomes ready.\n',
    );
  }
  process.stdout.write(`${consoleLine}\nLogs: ${join(dataDir, 'logs')}\nPress Ctrl-C to stop.\n`);
}

await main();
