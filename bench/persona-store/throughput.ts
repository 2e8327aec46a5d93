/**
 * The persona store on both engines, same data set, one run: a real service process on SQLite (the
 * data folder's file) and one on PostgreSQL (a server of the benchmark's own, over loopback), each
 * answering p50/p95/p99 latency and requests per second for each operation, beside a bare Express
 * endpoint in a process of its own as the ceiling.
 *
 * The data set is seeded once, on SQLite, through the same operations the routes call: 10,000 notes and
 * 1,000 fields in one persona, 19 more personas (500 notes, 50 fields each) for recall across 20, and,
 * under a second account, one persona of 100,000 notes for recall at that size (written in one transaction). Then the persona
 * store's own move-in (services/persona-store/move-in.ts) copies it into PostgreSQL, so that both
 * engines answer over the very same rows; its time is printed too, and the time of its screen alone
 * (move-in-screen.ts) over the same rows. The round trips one PUT of a field and one POST of a note take
 * on PostgreSQL are counted in process. The run ends with the figures of issue 33, each beside its target,
 * the machine's load average and the bare Express ceiling of the same run.
 *
 *   npx tsx bench/persona-store/throughput.ts          (or: npm run bench -- persona-store)
 *   npx tsx bench/persona-store/throughput.ts --smoke  (a small data set and a few requests: checks the script; the figures mean nothing)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { loadavg, cpus } from 'node:os';
import { join } from 'node:path';
import { openPostgresEngine } from '../../services/persona-store/engines/postgres.ts';
import { openSqliteEngine } from '../../services/persona-store/engines/sqlite.ts';
import { deploymentPolicy, type Policy } from '../../services/persona-store/settings.ts';
import { loadPersonaConfig } from '../../services/persona-store/config.ts';
import { moveIn, readSource, writePersona } from '../../services/persona-store/move-in.ts';
import { screenSource } from '../../services/persona-store/move-in-screen.ts';
import { Personas } from '../../services/persona-store/personas.ts';
import { DATABASE_FILE } from '../../services/persona-store/service.ts';
import { PersonaSql } from '../../services/persona-store/store.ts';
import { startTestIdentity, tempDir } from '../../test/support/identity.ts';
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test/support/postgres.ts';
import { freePort, ROOT, spawnService, type ServiceProcess } from '../../test/support/process.ts';
import { ms, summarize } from '../stats.ts';
import { queryWord, sentence, VOCABULARY } from './_text.ts';

const SMOKE = process.argv.includes('--smoke');
const NOTES = SMOKE ? 300 : 10_000;
const FIELDS = SMOKE ? 30 : 1_000;
const OTHER_PERSONAS = SMOKE ? 3 : 19;
const OTHER_NOTES = SMOKE ? 20 : 500;
const OTHER_FIELDS = SMOKE ? 5 : 50;
const BIG_NOTES = SMOKE ? 2_000 : 100_000;
const SAMPLES = SMOKE ? 30 : Number(process.env.BENCH_SAMPLES ?? 1000);
const WARM_UP = SMOKE ? 5 : 200;
const CONCURRENCY = 8;
const RPS_SECONDS = SMOKE ? 0.5 : 3;

const WORDS = VOCABULARY;
const skipPostgres = postgresUnavailable();

interface Op {
  name: string;
  /** The target on both engines (issue 33; the others of issue 13, met), printed beside the figures. */
  target: string;
  request: (url: string) => [string, RequestInit];
}

interface Result {
  p50: number;
  p95: number;
  p99: number;
  rps: number;
  inside: { p50: number; p95: number; p99: number; n: number };
}

const LIMITS = { maxValueBytes: 16384, maxNoteChars: 8000, maxKeyLength: 64 };
const loadAtStart = loadavg();
const identity = await startTestIdentity();
const dataDir = tempDir('persona-bench');
const children: ChildProcess[] = [];
let postgres: PostgresServer | undefined;
try {
  const token = await identity.mint(identity.localCredential, 'persona');
  const account = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sub as string;
  const bigCredential = await identity.addAccount('big');
  const bigToken = await identity.mint(bigCredential, 'persona');
  const bigAccount = JSON.parse(Buffer.from(bigToken.split('.')[1]!, 'base64url').toString()).sub as string;

  // Seeding goes through the same operations the routes call, without HTTP, to keep the run short.
  const seedStart = Date.now();
  console.log(
    `seeding on SQLite: ${NOTES} notes and ${FIELDS} fields in one persona, ${OTHER_PERSONAS} more personas, and ${BIG_NOTES} notes in one persona of a second account ...`,
  );
  const database = openSqliteEngine(join(dataDir, DATABASE_FILE));
  const personas = new Personas(new PersonaSql(database), {
    maxValueBytes: 16384,
    maxNoteChars: 8000,
    maxKeyLength: 64,
  });
  const principal = { account, audience: 'persona', token: '' };
  const policy: Policy = { ...deploymentPolicy(loadPersonaConfig({})), pinCapFields: 1000, pinCapNotes: 1000 };
  for (let p = 0; p <= OTHER_PERSONAS; p++) {
    const profile = p === 0 ? 'bench' : `other-${p}`;
    await personas.createPersona(principal, profile, {
      display_name: `Persona ${p}`,
      tone: 'warm',
      verbosity: 'balanced',
    });
    const notes = p === 0 ? NOTES : OTHER_NOTES;
    const fields = p === 0 ? FIELDS : OTHER_FIELDS;
    for (let i = 0; i < fields; i++) {
      await personas.putField(principal, policy, profile, `field_${i}`, {
        description: `about ${sentence(4)}`,
        value: { text: sentence(6), n: i },
        source: 'assistant',
        pinned: i < 10,
      });
    }
    for (let i = 0; i < notes; i++) {
      await personas.addNote(
        principal,
        policy,
        profile,
        { content: sentence(14), kind: 'observation', source: 'assistant', pinned: i < 10 },
        undefined,
      );
    }
  }
  // The big persona is written in one transaction by the row writer move-in and import use (the same rows
  // and full-text index as BIG_NOTES notes added one by one, without their change-log entries): one by one
  // it took over ten minutes on a loaded machine.
  const at = new Date().toISOString();
  await database.write((db) =>
    writePersona(
      database,
      db,
      {
        persona: {
          account: bigAccount,
          profile: 'big',
          display_name: 'One hundred thousand notes',
          pronouns: null,
          language: null,
          tone: null,
          verbosity: null,
          speaking_style: null,
          created_at: at,
          updated_at: at,
        },
        fields: [],
        notes: Array.from({ length: BIG_NOTES }, () => ({
          id: randomUUID(),
          kind: 'observation',
          content: sentence(14),
          revision: 1,
          source: 'assistant',
          asserted_by: 'persona',
          pinned: 0,
          state: 'live' as const,
          destroy_at: null,
          idempotency_key: null,
          written_at: at,
          revised_at: at,
        })),
        events: [],
      },
      bigAccount,
    ),
  );
  await database.close();
  console.log(`seeded in ${((Date.now() - seedStart) / 1000).toFixed(0)} s`);

  // The move-in's screen alone, over the same rows (it runs inside the move-in too, overlapped with the writes).
  const screened = await readSource(join(dataDir, DATABASE_FILE));
  const screenStart = process.hrtime.bigint();
  await screenSource(screened, LIMITS);
  const screenSeconds = Number(process.hrtime.bigint() - screenStart) / 1e9;
  console.log(`move-in's screen alone over the same rows: ${screenSeconds.toFixed(1)} s`);

  let databaseUrl: string | undefined;
  let moveInSeconds: number | undefined;
  let moveInRows = 0;
  const roundTrips: { put?: number; note?: number } = {};
  if (skipPostgres) console.log(`PostgreSQL skipped: ${skipPostgres}`);
  else {
    postgres = await startPostgres();
    databaseUrl = await postgres.createDatabase();
    const target = await openPostgresEngine({ url: databaseUrl, poolSize: 2, ssl: false, connectTimeoutMs: 10_000 });
    try {
      const started = process.hrtime.bigint();
      const source = await readSource(join(dataDir, DATABASE_FILE));
      const report = await moveIn(source, target, { limits: LIMITS });
      moveInSeconds = Number(process.hrtime.bigint() - started) / 1e9;
      moveInRows = source.personas.reduce((n, p) => n + p.fields.length + p.notes.length + p.events.length, 0);
      console.log(
        `moved in to PostgreSQL (npm run persona-store -- move-in): ${report.copied.length} personas, ${moveInRows} rows (fields, notes, change log) in ${moveInSeconds.toFixed(1)} s`,
      );
      // Round trips of one write of each kind, through the operations the routes call.
      const onPostgres = new Personas(new PersonaSql(target), LIMITS);
      const counted = async (write: () => Promise<unknown>) => {
        const before = target.roundTrips();
        await write();
        return target.roundTrips() - before;
      };
      roundTrips.put = await counted(() =>
        onPostgres.putField(principal, policy, 'bench', 'field_1', {
          description: 'a benchmarked field',
          value: { text: sentence(6), n: -1 },
          source: 'assistant',
        }),
      );
      roundTrips.note = await counted(() =>
        onPostgres.addNote(
          principal,
          policy,
          'bench',
          { content: sentence(14), kind: 'episode', source: 'assistant' },
          undefined,
        ),
      );
    } finally {
      await target.close();
    }
  }

  const barePort = await freePort();
  const bare = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench', 'persona-store', '_bare-express.ts'), String(barePort)],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(bare);
  await new Promise<void>((resolve) => bare.stdout!.once('data', () => resolve()));

  // Tokens live IDENTITY_TOKEN_TTL_SECONDS (10 min): minted again before each engine's run, since seeding and moving in take longer.
  const tokens = { main: token, big: bigToken };
  const auth = {
    get authorization() {
      return `Bearer ${tokens.main}`;
    },
  };
  const json = {
    get authorization() {
      return `Bearer ${tokens.main}`;
    },
    'content-type': 'application/json',
  };
  let counter = 0;
  const ops: Op[] = [
    {
      name: 'PUT field',
      target: 'p95 <= 5 ms',
      request: (url) => [
        `${url}/v1/personas/bench/fields/field_${counter++ % FIELDS}`,
        {
          method: 'PUT',
          headers: json,
          body: JSON.stringify({
            description: 'a benchmarked field',
            value: { text: sentence(6), n: counter },
            source: 'assistant',
          }),
        },
      ],
    },
    {
      name: 'POST note',
      target: 'p95 <= 10 ms',
      request: (url) => [
        `${url}/v1/personas/bench/notes`,
        {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ content: sentence(14), kind: 'episode', source: 'assistant' }),
        },
      ],
    },
    { name: 'GET identity block', target: '', request: (url) => [`${url}/v1/personas/bench`, { headers: auth }] },
    {
      name: 'recall, one persona',
      target: 'p95 <= 10 ms',
      request: (url) => [`${url}/v1/personas/bench/recall?q=${queryWord()}`, { headers: auth }],
    },
    {
      name: 'recall, across 20',
      target: 'p95 <= 10 ms',
      request: (url) => [`${url}/v1/recall?q=${queryWord()}`, { headers: auth }],
    },
    {
      name: `recall, ${BIG_NOTES / 1000}k notes`,
      target: 'p95 <= 10 ms',
      request: (url) => [
        `${url}/v1/personas/big/recall?q=${queryWord()}`,
        { headers: { authorization: `Bearer ${tokens.big}` } },
      ],
    },
    {
      name: 'recall, most frequent word',
      target: 'p50 <= 15 ms, p95 <= 25 ms',
      request: (url) => [`${url}/v1/personas/bench/recall?q=${WORDS[0]}`, { headers: auth }],
    },
  ];

  const once = async (req: [string, RequestInit]) => {
    const [url, init] = req;
    const res = await fetch(url, init);
    await res.arrayBuffer();
    if (res.status >= 300) throw new Error(`${url} answered ${res.status}`);
  };

  /** Latency of SAMPLES sequential requests, the time inside the service from its request log, then req/s at CONCURRENCY. */
  async function measure(request: () => [string, RequestInit], service?: ServiceProcess): Promise<Result> {
    for (let i = 0; i < WARM_UP; i++) await once(request());
    const samples: number[] = [];
    const logFrom = service?.output().length ?? 0;
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = process.hrtime.bigint();
      await once(request());
      samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const s = summarize(samples);
    // Time inside the service, from its own request log lines (the kit logs each request's duration).
    const inside = summarize(
      (service?.output() ?? '')
        .slice(logFrom)
        .split('\n')
        .filter((l) => l.startsWith('{') && l.includes('"ms"'))
        .map((l) => (JSON.parse(l) as { ms: number }).ms),
    );
    let done = 0;
    const until = Date.now() + RPS_SECONDS * 1000;
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) {
          await once(request());
          done++;
        }
      }),
    );
    return {
      p50: s.p50,
      p95: s.p95,
      p99: s.p99,
      rps: done / (Number(process.hrtime.bigint() - started) / 1e9),
      inside,
    };
  }

  const engines: { name: string; env: Record<string, string> }[] = [{ name: 'SQLite', env: {} }];
  if (databaseUrl) engines.push({ name: 'PostgreSQL', env: { PERSONA_DATABASE_URL: databaseUrl } });
  const results = new Map<string, Map<string, Result>>();
  for (const engine of engines) {
    tokens.main = await identity.mint(identity.localCredential, 'persona');
    tokens.big = await identity.mint(bigCredential, 'persona');
    const port = await freePort();
    const service = await spawnService(
      'persona-store',
      {
        PERSONA_PORT: String(port),
        PERSONA_DATA_DIR: dataDir,
        ...identity.trust('PERSONA_'),
        PERSONA_LOG_LEVEL: 'info',
        ...engine.env,
      },
      port,
    );
    children.push(service.child);
    const byOp = new Map<string, Result>();
    for (const op of ops) {
      process.stdout.write(`  ${engine.name}: ${op.name} ...\n`);
      byOp.set(op.name, await measure(() => op.request(service.url), service));
    }
    results.set(engine.name, byOp);
    await service.stop('SIGTERM');
  }
  const bareResult = await measure(() => [`http://127.0.0.1:${barePort}/bare`, {}]);

  console.log(
    `\npersona store, ${NOTES} notes + ${FIELDS} fields in one persona, ${OTHER_PERSONAS + 1} personas, and ${BIG_NOTES} notes in one persona of another account; ` +
      `${SAMPLES} sequential requests each for latency (client-measured; in-service from the request log), ${CONCURRENCY} concurrent for ${RPS_SECONDS} s for req/s`,
  );
  if (SMOKE)
    console.log('(smoke run: a small data set and a few requests, to check the script; the figures mean nothing)');
  const cell = (r: Result | undefined) =>
    r
      ? `${ms(r.p50)} / ${ms(r.p95)} / ${ms(r.p99)}`.padEnd(32) + `${Math.round(r.rps)}`.padStart(6)
      : '(skipped)'.padEnd(38);
  const inside = (r: Result | undefined) => (r && r.inside.n > 0 ? `${ms(r.inside.p95)}` : '-');
  console.log(
    `${'operation'.padEnd(28)} ${'SQLite p50 / p95 / p99'.padEnd(32)} ${'req/s'.padStart(5)}   ${'PostgreSQL p50 / p95 / p99'.padEnd(32)} ${'req/s'.padStart(5)}   in-service p95 (SQLite, PostgreSQL)   target (both engines)`,
  );
  for (const op of ops) {
    const sqlite = results.get('SQLite')?.get(op.name);
    const pg = results.get('PostgreSQL')?.get(op.name);
    console.log(
      `${op.name.padEnd(28)} ${cell(sqlite)}   ${cell(pg)}   ${`${inside(sqlite)}, ${inside(pg)}`.padEnd(36)}  ${op.target}`,
    );
  }
  console.log(`${'bare Express (ceiling)'.padEnd(28)} ${cell(bareResult)}`);

  // The figures of issue 33, each beside its target, with the ratio to the bare Express p50 of this run.
  const ceiling = bareResult.p50;
  const times = (x: number) => `${ms(x)} (${(x / ceiling).toFixed(0)}x)`;
  const of = (engine: string, op: string) => results.get(engine)?.get(op);
  const others = ops.filter((op) => op.name.startsWith('recall') && op.name !== 'recall, most frequent word');
  const figures: [string, (engine: string) => string, string][] = [
    ['PUT field p95', (e) => (of(e, 'PUT field') ? times(of(e, 'PUT field')!.p95) : '(skipped)'), '<= 5 ms on both'],
    [
      'recall, most frequent word, p50 / p95',
      (e) => {
        const r = of(e, 'recall, most frequent word');
        return r ? `${times(r.p50)} / ${times(r.p95)}` : '(skipped)';
      },
      '<= 15 ms p50, <= 25 ms p95 on both',
    ],
    [
      'recall (every other case) p95',
      (e) => {
        const p95s = others.map((op) => of(e, op.name)?.p95).filter((x): x is number => x !== undefined);
        return p95s.length ? `${ms(Math.min(...p95s))} - ${ms(Math.max(...p95s))}` : '(skipped)';
      },
      '<= 10 ms',
    ],
    [
      `move-in of ${moveInRows.toLocaleString('en-US')} rows`,
      (e) => (e === 'PostgreSQL' && moveInSeconds !== undefined ? `${moveInSeconds.toFixed(1)} s` : '-'),
      '<= 9 s',
    ],
    ["move-in's screen alone", (e) => (e === 'SQLite' ? `${screenSeconds.toFixed(1)} s` : '-'), '(inside the move-in)'],
    [
      'round trips: PUT field / POST note',
      (e) => (e === 'PostgreSQL' && roundTrips.put !== undefined ? `${roundTrips.put} / ${roundTrips.note}` : '-'),
      'as few as possible',
    ],
    ['bare Express p50 (ceiling, same run)', (e) => (e === 'SQLite' ? ms(ceiling) : ''), ''],
  ];
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `\nissue 33 figures; load average ${load(loadAtStart)} at the start, ${load(loadavg())} at the end, on ${cpus().length} cores; (Nx) = N times the bare Express p50`,
  );
  console.log(`${'measure'.padEnd(40)} ${'SQLite'.padEnd(36)} ${'PostgreSQL'.padEnd(36)} target`);
  for (const [measure, figure, target] of figures) {
    console.log(`${measure.padEnd(40)} ${figure('SQLite').padEnd(36)} ${figure('PostgreSQL').padEnd(36)} ${target}`);
  }
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await identity.close();
  await postgres?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
