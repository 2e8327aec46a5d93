/**
 * Time to serve a real client while 540 slow requests hold a service (issue 30's finding 2): for
 * identity, the persona store and the provider, each running as `npm run serve` runs it (its bundle, a
 * Node child of the real supervisor, handed its port), one at a time:
 * `npm run bench -- desktop`, or `npx tsx bench/desktop/slow-requests.ts [--smoke]`.
 *
 * The flood: 540 connections, each a POST whose body announces 1 MB and sends a byte every 5 s, never
 * finishing; a connection the service closes is opened again a second later (test/support/slow-flood.ts).
 * Identity's flood goes to `POST /v1/auth/token-status` (no credential needed), the persona store's to
 * `POST /v1/personas` with a valid token (a caller without one is refused before its body), the
 * provider's to `POST /v1/chat/completions`. For 25 s a real client sends one request every 250 ms on
 * a connection of its own (the worst case: every one must be let in past the full bound), and its time
 * to a complete answer is recorded: identity `GET /.well-known/jwks.json`, the persona store
 * `GET /v1/personas`, the provider `GET /v1/models`. Target: every real client served within 3 s, and no
 * restart. The same client without the flood is measured first, for comparison. `--relayed` runs the
 * services as the installed app does, behind the supervisor's relay (main/supervisor/held-port.ts).
 */
import { loadavg } from 'node:os';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, buildErrors } from '../../main/build/build.ts';
import type { ServiceName } from '../../common/services.ts';
import { nodeChildLauncher } from '../../main/supervisor/launcher.ts';
import { ServiceSupervisor } from '../../main/supervisor/supervisor.ts';
import { standInBinary } from '../../services/model-provider/test-support/stand-in.ts';
import { freePort } from '../../test/support/process.ts';
import { SlowFlood, realRequest } from '../../test/support/slow-flood.ts';
import { ms, summarize } from '../stats.ts';

const smoke = process.argv.includes('--smoke');
// `--relayed`: the services listen on socket files the supervisor relays to, as the installed app's utility processes do.
const relayed = process.argv.includes('--relayed');
const SLOW = smoke ? 60 : 540;
const FLOOD_MS = smoke ? 3_000 : 25_000;
const EVERY_MS = 250;
const BASELINE = smoke ? 5 : 40;

const built = await build({ targets: ['services'] });
const errors = buildErrors(built);
if (errors) throw new Error(`The service bundles did not build:\n${errors}`);

const dir = mkdtempSync(join(tmpdir(), 'bench-slow-'));
const standIn = standInBinary(join(dir, 'cli'));
const supervisor = new ServiceSupervisor({
  dataDir: join(dir, 'data'),
  services: ['identity', 'persona-store', 'model-provider'],
  launcher: nodeChildLauncher({ takesHandles: !relayed }),
  env: {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    IDENTITY_PORT: String(await freePort()),
    PERSONA_PORT: String(await freePort()),
    MODELPROV_PORT: String(await freePort()),
    MODELPROV_CLI_BINARY: standIn.binary,
    IDENTITY_LOG_LEVEL: 'warn',
    PERSONA_LOG_LEVEL: 'warn',
    MODELPROV_LOG_LEVEL: 'warn',
  },
  startTimeoutMs: 150_000,
});
let restarts = 0;
supervisor.on('status', (s: { state: string }) => {
  if (s.state === 'backing-off' || s.state === 'crashed') restarts += 1;
});
await supervisor.startAll();
await supervisor.waitUntilSettled(undefined, 180_000);
const credential = await supervisor.localCredential();
const token = (
  JSON.parse(
    (
      await realRequest(`${supervisor.url('identity')}/v1/auth/service-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}` },
        body: { audience: 'persona' },
      })
    ).body,
  ) as { token: string }
).token;

const plan: Record<
  string,
  { flood: string; headers?: Record<string, string>; client: string; clientHeaders?: Record<string, string> }
> = {
  identity: { flood: '/v1/auth/token-status', client: '/.well-known/jwks.json' },
  'persona-store': {
    flood: '/v1/personas',
    headers: { authorization: `Bearer ${token}` },
    client: '/v1/personas',
    clientHeaders: { authorization: `Bearer ${token}` },
  },
  'model-provider': { flood: '/v1/chat/completions', client: '/v1/models' },
};

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));
console.log(
  `${SLOW} slow requests for ${FLOOD_MS / 1000} s per service${relayed ? ', each port relayed to its service' : ''}; a real client every ${EVERY_MS} ms on a new connection. Load average at start: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')}.`,
);
for (const name of ['identity', 'persona-store', 'model-provider'] as ServiceName[]) {
  const url = supervisor.url(name);
  const { flood: floodPath, headers, client, clientHeaders } = plan[name]!;
  const ask = () => realRequest(`${url}${client}`, clientHeaders ? { headers: clientHeaders } : {});
  const quiet: number[] = [];
  for (let i = 0; i < BASELINE; i++) quiet.push((await ask()).ms);
  const pid = supervisor.status().find((s) => s.name === name)!.pid;
  const flood = new SlowFlood({
    port: Number(new URL(url).port),
    path: floodPath,
    ...(headers ? { headers } : {}),
    count: SLOW,
  });
  await flood.start();
  const under: number[] = [];
  const failed: string[] = [];
  const until = Date.now() + FLOOD_MS;
  const pending: Promise<void>[] = [];
  while (Date.now() < until) {
    pending.push(
      ask().then(
        (r) => void (r.status === 200 ? under.push(r.ms) : failed.push(String(r.status))),
        (err: Error) => void failed.push(err.message),
      ),
    );
    await sleep(EVERY_MS);
  }
  await Promise.all(pending);
  const openAtEnd = flood.open;
  flood.stop();
  const q = summarize(quiet);
  const u = summarize(under);
  const samePid = supervisor.status().find((s) => s.name === name)!.pid === pid;
  console.log(
    `${name.padEnd(15)} quiet p50 ${ms(q.p50)} p95 ${ms(q.p95)} | under the flood: ${u.n} served, p50 ${ms(u.p50)} p95 ${ms(u.p95)} max ${ms(Math.max(...under))}; ` +
      `${failed.length} not served${failed.length ? ` (${[...new Set(failed)].join(', ')})` : ''}; slow connections closed by the service ${flood.closedByServer}, open at the end ${openAtEnd}; ` +
      `same process: ${samePid ? 'yes' : 'NO'}`,
  );
}
console.log(
  `Restarts during the run: ${restarts}. Load average at the end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(', ')}.`,
);
await supervisor.close();
process.exit(0);
