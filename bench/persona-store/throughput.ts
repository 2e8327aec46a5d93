/**
 * The persona store against its targets, in one run on this machine: a real service process seeded
 * with 10,000 notes and 1,000 fields in one persona (and 19 more personas for recall across 20),
 * p50/p95/p99 latency and requests per second for each operation, and a bare Express endpoint in a
 * process of its own as the ceiling.
 *
 *   npx tsx bench/persona-store/throughput.ts        (or: npm run bench -- persona-store)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteEngine } from '../../services/persona-store/engines/sqlite.ts';
import { deploymentPolicy, type Policy } from '../../services/persona-store/settings.ts';
import { loadPersonaConfig } from '../../services/persona-store/config.ts';
import { Personas } from '../../services/persona-store/personas.ts';
import { DATABASE_FILE } from '../../services/persona-store/service.ts';
import { PersonaSql } from '../../services/persona-store/store.ts';
import { startTestIdentity, tempDir } from '../../test/support/identity.ts';
import { freePort, ROOT, spawnService } from '../../test/support/process.ts';
import { ms, summarize } from '../stats.ts';
import { queryWord, sentence, VOCABULARY } from './_text.ts';

const NOTES = 10_000;
const FIELDS = 1_000;
const OTHER_PERSONAS = 19;
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 2000);
const CONCURRENCY = 8;
const RPS_SECONDS = 3;

// Text with a Zipf-shaped vocabulary of 5,000 made-up words (_text.ts). Queries use content words
// (frequency ranks 50-2,000); a separate line shows the worst case, the single most frequent word.
const WORDS = VOCABULARY;

const identity = await startTestIdentity();
const dataDir = tempDir('persona-bench');
const children: ChildProcess[] = [];
try {
  const token = await identity.mint(identity.localCredential, 'persona');
  const account = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub as string;

  // Seeding goes through the same operations the routes call, without HTTP, to keep the run short.
  console.log(`seeding ${NOTES} notes and ${FIELDS} fields in one persona, and ${OTHER_PERSONAS} more personas ...`);
  const database = openSqliteEngine(join(dataDir, DATABASE_FILE));
  const personas = new Personas(new PersonaSql(database), { maxValueBytes: 16384, maxNoteChars: 8000, maxKeyLength: 64 });
  const principal = { account, audience: 'persona', token: '' };
  const policy: Policy = { ...deploymentPolicy(loadPersonaConfig({})), pinCapFields: 1000, pinCapNotes: 1000 };
  for (let p = 0; p <= OTHER_PERSONAS; p++) {
    const profile = p === 0 ? 'bench' : `other-${p}`;
    await personas.createPersona(principal, profile, { display_name: `Persona ${p}`, tone: 'warm', verbosity: 'balanced' });
    const notes = p === 0 ? NOTES : 500;
    const fields = p === 0 ? FIELDS : 50;
    for (let i = 0; i < fields; i++) {
      await personas.putField(principal, policy, profile, `field_${i}`, { description: `about ${sentence(4)}`, value: { text: sentence(6), n: i }, source: 'assistant', pinned: i < 10 });
    }
    for (let i = 0; i < notes; i++) {
      await personas.addNote(principal, policy, profile, { content: sentence(14), kind: 'observation', source: 'assistant', pinned: i < 10 }, undefined);
    }
  }
  await database.close();

  const port = await freePort();
  const service = await spawnService('persona-store', { PERSONA_PORT: String(port), PERSONA_DATA_DIR: dataDir, PERSONA_IDENTITY_URL: identity.url, PERSONA_LOG_LEVEL: 'info' }, port);
  children.push(service.child);
  const barePort = await freePort();
  const bare = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'persona-store', '_bare-express.ts'), String(barePort)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(bare);
  await new Promise<void>((resolve) => bare.stdout!.once('data', () => resolve()));

  const auth = { authorization: `Bearer ${token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  let counter = 0;
  const ops: { name: string; target: string; request: () => [string, RequestInit] }[] = [
    {
      name: 'PUT field',
      target: 'p95 <= 5 ms',
      request: () => [`${service.url}/v1/personas/bench/fields/field_${counter++ % FIELDS}`, { method: 'PUT', headers: json, body: JSON.stringify({ description: 'a benchmarked field', value: { text: sentence(6), n: counter }, source: 'assistant' }) }],
    },
    {
      name: 'POST note',
      target: 'p95 <= 5 ms',
      request: () => [`${service.url}/v1/personas/bench/notes`, { method: 'POST', headers: json, body: JSON.stringify({ content: sentence(14), kind: 'episode', source: 'assistant' }) }],
    },
    { name: 'GET identity block', target: '>= 50% of bare req/s', request: () => [`${service.url}/v1/personas/bench`, { headers: auth }] },
    { name: 'recall, one persona', target: 'p95 <= 10 ms', request: () => [`${service.url}/v1/personas/bench/recall?q=${queryWord()}`, { headers: auth }] },
    { name: 'recall, most frequent word', target: '(worst case)', request: () => [`${service.url}/v1/personas/bench/recall?q=${WORDS[0]}`, { headers: auth }] },
    { name: 'recall, 20 personas', target: 'p95 <= 50 ms', request: () => [`${service.url}/v1/recall?q=${queryWord()}`, { headers: auth }] },
    { name: 'bare Express (ceiling)', target: '', request: () => [`http://127.0.0.1:${barePort}/bare`, {}] },
  ];

  const once = async (req: () => [string, RequestInit]) => {
    const [url, init] = req();
    const res = await fetch(url, init);
    await res.arrayBuffer();
    if (res.status >= 300) throw new Error(`${url} answered ${res.status}`);
  };

  const results: { name: string; target: string; p50: number; p95: number; p99: number; rps: number; server: ReturnType<typeof summarize> }[] = [];
  for (const op of ops) {
    for (let i = 0; i < 200; i++) await once(op.request); // warm-up
    const samples: number[] = [];
    const logFrom = service.output().length;
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = process.hrtime.bigint();
      await once(op.request);
      samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const s = summarize(samples);
    // Time inside the service, from its own request log lines (the kit logs each request's duration).
    const serverMs = service
      .output()
      .slice(logFrom)
      .split('\n')
      .filter((l) => l.startsWith('{') && l.includes('"ms"'))
      .map((l) => (JSON.parse(l) as { ms: number }).ms);
    const server = summarize(serverMs);
    let done = 0;
    const until = Date.now() + RPS_SECONDS * 1000;
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) {
          await once(op.request);
          done++;
        }
      }),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    results.push({ name: op.name, target: op.target, p50: s.p50, p95: s.p95, p99: s.p99, rps: done / seconds, server });
  }

  const bareRps = results.find((r) => r.name.startsWith('bare'))!.rps;
  console.log(`\npersona store, ${NOTES} notes + ${FIELDS} fields in one persona, ${OTHER_PERSONAS + 1} personas; ${SAMPLES} sequential requests each for latency, ${CONCURRENCY} concurrent for ${RPS_SECONDS} s for req/s`);
  console.log('operation (client-measured)   p50        p95        p99        req/s    vs bare   in-service p50 / p95 / p99   target');
  for (const r of results) {
    const inside = r.server.n > 0 ? `${ms(r.server.p50)} / ${ms(r.server.p95)} / ${ms(r.server.p99)}` : '(not logged)';
    console.log(
      `${r.name.padEnd(28)} ${ms(r.p50).padStart(9)}  ${ms(r.p95).padStart(9)}  ${ms(r.p99).padStart(9)}  ${Math.round(r.rps).toString().padStart(7)}   ${((100 * r.rps) / bareRps).toFixed(0).padStart(4)}%   ${inside.padEnd(28)} ${r.target}`,
    );
  }
  console.log(`machine load average at the end: ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')} on ${(await import('node:os')).cpus().length} cores`);
  const block = results.find((r) => r.name === 'GET identity block')!;
  console.log(`\nidentity block / bare Express req/s: ${(block.rps / bareRps).toFixed(2)} (target >= 0.50)`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await identity.close();
  rmSync(dataDir, { recursive: true, force: true });
}
