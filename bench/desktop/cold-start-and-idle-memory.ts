/**
 * Headless cold start and idle memory of the four services under the supervisor, as `npm run serve`
 * runs them: `npm run bench -- desktop` (three rounds), or `npx tsx bench/desktop/cold-start-and-idle-memory.ts [rounds]`.
 *
 * Bundles: the supervisor runs each service from its bundle (main/build/, rebuilt only when a source
 * changed); the bench builds them first, as `npm run serve` does, and prints how long that took (a
 * first start after an install or an edit pays it once).
 * Cold start: from startAll() on an empty data folder (first run: databases, signing keys, the local
 * account) to every service ready. The provider's CLI probe is excluded: the provider counts from when
 * it answers /healthy (its readiness waits for the CLI, up to two minutes with a real one); its ready
 * time with a stand-in CLI is printed apart. The gateway's platform is a local stand-in that answers /.
 * The CPU time each process used until then is printed too: unlike wall time, it hardly depends on
 * what else the machine is doing.
 * Idle memory: after 5 s without requests, each process's resident set (RSS) and proportional set
 * (PSS: pages shared between the four Node processes, such as Node's own code, counted once across
 * them). "All together" is the sum of PSS, the memory the four actually take; the sum of RSS counts
 * every shared page four times and is printed beside it.
 * Targets: <= 2 s to ready, <= 250 MB idle for all services together.
 */
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceSupervisor } from '../../main/supervisor/supervisor.ts';
import { build, buildErrors } from '../../main/build/build.ts';
import type { ServiceName, ServiceStatus } from '../../main/supervisor/types.ts';
import { standInBinary } from '../../services/model-provider/test-support/stand-in.ts';
import { freePort } from '../../test/support/process.ts';

const rounds = Number(process.argv[2] ?? 3);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

const platform = createServer((_req, res) => res.end('{}'));
await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', () => resolve()));
const platformUrl = `http://127.0.0.1:${(platform.address() as { port: number }).port}`;
const standIn = standInBinary(mkdtempSync(join(tmpdir(), 'bench-desktop-cli-')));

interface Round {
  coldStartMs: number;
  perService: Record<string, number>;
  providerReadyMs: number;
  cpuMs: Record<string, number>;
  rss: Record<string, number>;
  pss: Record<string, number>;
}

/** User plus system CPU time of a process so far, from /proc (clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Resident and proportional set sizes in bytes, from /proc/<pid>/smaps_rollup. */
function memory(pid: number): { rss: number; pss: number } {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb('Rss'), pss: kb('Pss') };
}

async function round(): Promise<Round> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-desktop-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dataDir,
    IDENTITY_PORT: String(await freePort()),
    PERSONA_PORT: String(await freePort()),
    REPOHOST_PORT: String(await freePort()),
    MODELPROV_PORT: String(await freePort()),
    REPOHOST_PLATFORM_URL: platformUrl,
    MODELPROV_CLI_BINARY: standIn.binary,
  };
  const supervisor = new ServiceSupervisor({ dataDir, env });
  const reached = new Map<string, number>();
  const t0 = performance.now();
  supervisor.on('status', (st: ServiceStatus) => {
    const mark =
      st.name === 'model-provider' && (st.state === 'live' || st.state === 'ready') ? 'model-provider:live' : undefined;
    if (mark && !reached.has(mark)) reached.set(mark, performance.now() - t0);
    if (st.state === 'ready' && !reached.has(st.name)) reached.set(st.name, performance.now() - t0);
    if (st.state === 'gave-up') throw new Error(`${st.name} gave up: ${st.lastError}`);
  });
  await supervisor.startAll();
  await supervisor.waitUntilSettled(undefined, 180_000);
  const perService: Record<string, number> = {
    identity: reached.get('identity')!,
    'persona-store': reached.get('persona-store')!,
    'repohost-gateway': reached.get('repohost-gateway')!,
    'model-provider (healthy)': reached.get('model-provider:live')!,
  };
  const coldStartMs = Math.max(...Object.values(perService));
  const cpu: Record<string, number> = {};
  for (const st of supervisor.status()) cpu[st.name] = st.pid ? cpuMs(st.pid) : Number.NaN;
  await new Promise((r) => setTimeout(r, 5_000));
  const rss: Record<string, number> = {};
  const pss: Record<string, number> = {};
  for (const st of supervisor.status()) {
    const m = st.pid ? memory(st.pid) : { rss: Number.NaN, pss: Number.NaN };
    rss[st.name] = m.rss;
    pss[st.name] = m.pss;
  }
  await supervisor.close();
  rmSync(dataDir, { recursive: true, force: true });
  return { coldStartMs, perService, providerReadyMs: reached.get('model-provider')!, cpuMs: cpu, rss, pss };
}

console.log(`machine: ${cpus().length} cores, Node ${process.version}; ${rounds} rounds, each on an empty data folder`);
const tb = performance.now();
const bundles = await build({ targets: ['services'] });
const failed = buildErrors(bundles);
if (failed) throw new Error(`service bundles: ${failed}`);
console.log(
  `service bundles ${bundles.services!.built ? 'built' : 'already up to date, checked'} in ${(performance.now() - tb).toFixed(0)} ms`,
);
const results: Round[] = [];
for (let i = 0; i < rounds; i++) {
  const load = loadavg()[0]!.toFixed(2);
  const r = await round();
  results.push(r);
  console.log(
    `round ${i + 1}: cold start to every service ready ${s(r.coldStartMs)} (` +
      Object.entries(r.perService)
        .map(([n, v]) => `${n} ${s(v)}`)
        .join(', ') +
      `; provider ready with the stand-in CLI ${s(r.providerReadyMs)}); CPU used until then: ` +
      Object.entries(r.cpuMs)
        .map(([n, v]) => `${n} ${v} ms`)
        .join(', ') +
      `; load average ${load} at its start`,
  );
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`cold start, median of ${rounds}: ${s(median(results.map((r) => r.coldStartMs)))} (target <= 2 s)`);
const names = Object.keys(results[0]!.rss) as ServiceName[];
let totalRss = 0;
let totalPss = 0;
for (const name of names) {
  const rss = median(results.map((r) => r.rss[name]!));
  const pss = median(results.map((r) => r.pss[name]!));
  totalRss += rss;
  totalPss += pss;
  console.log(`idle ${name}: RSS ${mb(rss)}, PSS ${mb(pss)}`);
}
console.log(`idle, all services together: ${mb(totalPss)} (sum of PSS; target <= 250 MB); sum of RSS ${mb(totalRss)}`);
platform.close();
