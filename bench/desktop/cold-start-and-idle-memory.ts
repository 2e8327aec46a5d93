/**
 * Headless cold start and idle memory of the four services under the supervisor, as `npm run serve`
 * runs them: `npx tsx bench/desktop/cold-start-and-idle-memory.ts [rounds]`.
 *
 * Cold start: from startAll() on an empty data folder (first run: databases, signing keys, the local
 * account) to every service ready. The provider's CLI probe is excluded: the provider counts from when
 * it answers /healthy (its readiness waits for the CLI, up to two minutes with a real one); its ready
 * time with a stand-in CLI is printed apart. The gateway's platform is a local stand-in that answers /.
 * Idle memory: resident set (VmRSS) of each service process after 5 s without requests.
 * Targets: <= 2 s to ready, <= 250 MB idle for all services together.
 */
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceSupervisor } from '../../main/supervisor/supervisor.ts';
import { residentBytes } from '../../main/supervisor/process-tree.ts';
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
  rss: Record<string, number>;
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
    const mark = st.name === 'model-provider' && (st.state === 'live' || st.state === 'ready') ? 'model-provider:live' : undefined;
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
  await new Promise((r) => setTimeout(r, 5_000));
  const rss: Record<string, number> = {};
  for (const st of supervisor.status()) rss[st.name] = st.pid ? (residentBytes(st.pid) ?? Number.NaN) : Number.NaN;
  await supervisor.close();
  rmSync(dataDir, { recursive: true, force: true });
  return { coldStartMs, perService, providerReadyMs: reached.get('model-provider')!, rss };
}

console.log(`machine: ${cpus().length} cores, Node ${process.version}; ${rounds} rounds, each on an empty data folder`);
const results: Round[] = [];
for (let i = 0; i < rounds; i++) {
  const r = await round();
  results.push(r);
  console.log(
    `round ${i + 1}: cold start to every service ready ${s(r.coldStartMs)} (` +
      Object.entries(r.perService)
        .map(([n, v]) => `${n} ${s(v)}`)
        .join(', ') +
      `; provider ready with the stand-in CLI ${s(r.providerReadyMs)})`,
  );
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`cold start, median of ${rounds}: ${s(median(results.map((r) => r.coldStartMs)))} (target <= 2 s)`);
const names = Object.keys(results[0]!.rss) as ServiceName[];
let total = 0;
for (const name of names) {
  const m = median(results.map((r) => r.rss[name]!));
  total += m;
  console.log(`idle RSS ${name}: ${mb(m)}`);
}
console.log(`idle RSS all services together: ${mb(total)} (target <= 250 MB)`);
platform.close();
