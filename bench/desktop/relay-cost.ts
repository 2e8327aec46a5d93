/**
 * What relaying a service's port costs (the installed app's way: its Electron utility processes cannot
 * be handed the port, so the supervisor accepts each connection and pipes it to a socket file the service
 * listens on; main/supervisor/held-port.ts) against the port handed to the service (Node children):
 * `npm run bench -- desktop`, or `npx tsx bench/desktop/relay-cost.ts [--smoke]`.
 *
 * Identity under the real supervisor, once each way, both from its bundle, as Node children (a Node child
 * told to listen on the socket file, as a utility process does). Measured: `GET /.well-known/jwks.json`
 * one after another on one kept-alive connection (what the relay adds per request), then on a new
 * connection each (what it adds per connection), and requests per second at 16 at once; and the
 * supervisor's own CPU time during the kept-alive rounds (the relay's bytes pass through its process).
 */
import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, buildErrors } from '../../main/build/build.ts';
import { nodeChildLauncher } from '../../main/supervisor/launcher.ts';
import { ServiceSupervisor } from '../../main/supervisor/supervisor.ts';
import { freePort } from '../../test/support/process.ts';
import { realRequest } from '../../test/support/slow-flood.ts';
import { ms, summarize } from '../stats.ts';

const smoke = process.argv.includes('--smoke');
const N = smoke ? 50 : 2_000;
const PARALLEL_MS = smoke ? 500 : 5_000;

const built = await build({ targets: ['services'] });
const errors = buildErrors(built);
if (errors) throw new Error(`The service bundles did not build:\n${errors}`);

function get(url: string, agent: Agent): Promise<number> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(Number(process.hrtime.bigint() - started) / 1e6));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Way {
  name: string;
  supervisor: ServiceSupervisor;
  url: string;
  kept: Agent;
  keptMs: number[];
  freshMs: number[];
  cpuMs: number;
  perSecond: number[];
}

async function startWay(takesHandles: boolean): Promise<Way> {
  const supervisor = new ServiceSupervisor({
    dataDir: join(mkdtempSync(join(tmpdir(), 'bench-relay-')), 'data'),
    services: ['identity'],
    launcher: nodeChildLauncher({ takesHandles }),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IDENTITY_PORT: String(await freePort()),
      IDENTITY_LOG_LEVEL: 'warn',
    },
  });
  await supervisor.startAll();
  await supervisor.waitUntilSettled(undefined, 120_000);
  const url = `${supervisor.url('identity')}/.well-known/jwks.json`;
  const kept = new Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 50; i++) await get(url, kept);
  return {
    name: takesHandles ? 'handed over' : 'relayed',
    supervisor,
    url,
    kept,
    keptMs: [],
    freshMs: [],
    cpuMs: 0,
    perSecond: [],
  };
}

/** One round of each measure on one way; the ways take turns, so that the machine's load falls on both alike. */
async function round(way: Way, n: number): Promise<void> {
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) way.keptMs.push(await get(way.url, way.kept));
  const cpu = process.cpuUsage(cpu0);
  way.cpuMs += (cpu.user + cpu.system) / 1000;
  for (let i = 0; i < n / 4; i++) way.freshMs.push((await realRequest(way.url)).ms);
  const pool = new Agent({ keepAlive: true, maxSockets: 16 });
  let done = 0;
  const until = Date.now() + PARALLEL_MS / ROUNDS;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (Date.now() < until) {
        await get(way.url, pool);
        done += 1;
      }
    }),
  );
  pool.destroy();
  way.perSecond.push(done / (PARALLEL_MS / ROUNDS / 1000));
}

const ROUNDS = smoke ? 1 : 5;
console.log(
  `Load average at start: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')}.`,
);
const ways = [await startWay(true), await startWay(false)];
for (let r = 0; r < ROUNDS; r++) for (const way of r % 2 ? [...ways].reverse() : ways) await round(way, N / ROUNDS);
for (const way of ways) {
  const k = summarize(way.keptMs);
  const f = summarize(way.freshMs);
  const rate = [...way.perSecond].sort((a, b) => a - b)[Math.floor(way.perSecond.length / 2)]!;
  console.log(
    `${way.name.padEnd(11)} kept-alive p50 ${ms(k.p50)} p95 ${ms(k.p95)}; new connection each p50 ${ms(f.p50)} p95 ${ms(f.p95)}; ` +
      `16 at once ${Math.round(rate)} requests/s (median of ${ROUNDS} rounds); this process's CPU (client, and the relay when relayed) ${(way.cpuMs / way.keptMs.length).toFixed(3)} ms per kept-alive request`,
  );
  way.kept.destroy();
  await way.supervisor.close();
}
console.log(
  `Load average at the end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')}.`,
);
process.exit(0);
