/**
 * The chat-model provider's cost over the CLI it runs, side by side with its peer. With the stand-in
 * CLI on PATH as `claude`, in one run and in alternating rounds: the bare CLI, the peer
 * (`claude-max-api-proxy`, started by its own `claude-max-api` entry) and this provider (its bundle,
 * `out/services/model-provider.mjs`, as the app runs it; `npm run build`'s services target is brought up
 * to date first), each server in plain Node in its own process at its default log level (to /dev/null).
 * The bare CLI is run by `_bare-cli.mjs`, a plain Node process with nothing else loaded, with the
 * provider's argv, environment and spawn options, timed by itself from the spawn to the close of the pipes.
 *
 * Printed, at concurrency 1 and 2: p50 and p95 per non-streaming completion, and what each server adds
 * over the bare CLI. The stand-in records when its process started and ended, so each completion's time
 * splits into the CLI run itself and everything around it (spawning, pipes, HTTP, the server's own
 * work); "added" compares that remainder with the bare CLI's (p50 with p50, p95 with p95), which keeps
 * the run's own time (a Node start, the part that swings most when the machine is busy) out of it. Then
 * completions per second at the provider's concurrency cap (2) against the bare CLI at the same
 * concurrency, each server's own CPU time per completion (from /proc) and its memory. The servers are
 * called through node:http with a keep-alive agent (see `_completion-request.ts`). Targets: the
 * provider adds no more than the peer (p50, c=1 and c=2), spends no more CPU per completion than the
 * peer, and reaches >= 97 % of the bare CLI's throughput at its cap (two clients) in each of five runs.
 *
 * With the real CLI (not signed in, empty HOME): the round trip through the service against the bare
 * CLI. Then what making blind retries cheap costs: the request identity digest for prompts up to the
 * body limit, and the failure memory at its bound.
 * `--smoke` runs a few of each, to check that the script works; its figures mean nothing.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { build, buildErrors } from '../../main/build/build.ts';
import { bundlePath } from '../../main/supervisor/service-bundles.ts';
import { FailureMemory, requestKey } from '../../services/model-provider/identical-requests.ts';
import { providerError } from '../../services/model-provider/errors.ts';
import { cliArgs, runEnvironment } from '../../services/model-provider/invocation.ts';
import { startModelProvider } from '../../services/model-provider/service.ts';
import { standInBinary } from '../../services/model-provider/test-support/stand-in.ts';
import { freePort, ROOT } from '../../test/support/process.ts';
import { completionRequest } from './_completion-request.ts';
import { BareCli, signedOutRealCli, startServer, stopServer } from './_servers.ts';
import { ms, rssMb, summarize, time } from '../stats.ts';

const SYSTEM = 'You are a helpful assistant. You have no tools: answer directly in text.';
/** The provider's default MODELPROV_MAX_CONCURRENT. */
const CAP = 2;
const SMOKE = process.argv.includes('--smoke');
/** The service's whole environment (it reads no other); bare runs get the same, stripped as the service strips it. */
const BASE_ENV = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir() };
const PEER = join(ROOT, 'node_modules', 'claude-max-api-proxy');
const PEER_ENTRY = join(PEER, 'dist', 'server', 'standalone.js');
const PEER_VERSION = (JSON.parse(readFileSync(join(PEER, 'package.json'), 'utf8')) as { version: string }).version;
/** Linux's clock ticks per second for /proc/<pid>/stat (USER_HZ). */
const TICKS_PER_SECOND = 100;

/** One non-streaming completion request: its status and body. */
function post(url: string, prompt: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    completionRequest(url, { system: SYSTEM, prompt, stream: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** One non-streaming completion; throws unless it is the stand-in's answer. */
async function completion(url: string, prompt: string): Promise<void> {
  const { status, text } = await post(url, prompt);
  if (status !== 200 || !text.includes('Stand-in reply'))
    throw new Error(`${url} answered ${status}: ${text.slice(0, 200)}`);
}

/** The calls `concurrency` at a time: the whole batch's time in ms. */
async function batch(
  prompts: string[],
  concurrency: number,
  one: (prompt: string) => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const [elapsed] = await time(() =>
    Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < prompts.length) await one(prompts[next++]!);
      }),
    ),
  );
  return elapsed;
}

/** The CPU time a process has used itself (user + system, its children left out), in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

const dir = mkdtempSync(join(tmpdir(), 'bench-modelprov-'));
const standIn = standInBinary(join(dir, 'bin'));
const bareCwd = mkdtempSync(join(tmpdir(), 'bench-modelprov-cwd-'));

// --- stand-in: bare, the peer, this provider ---------------------------------------------------
{
  // The whole services target, as `npm run build` makes it (building one service alone would leave a manifest without the others).
  const failed = buildErrors(await build({ targets: ['services'] }));
  if (failed) throw new Error(`The provider's bundle could not be built: ${failed}`);
  // Both servers find the stand-in as `claude` on PATH, as they would find the real one.
  const path = `${dirname(standIn.binary)}${delimiter}${BASE_ENV.PATH}`;
  const [peerPort, providerPort] = [await freePort(), await freePort()];
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const providerUrl = `http://127.0.0.1:${providerPort}`;
  const peerCwd = join(dir, 'peer-cwd');
  mkdirSync(peerCwd);
  const bareCli = new BareCli({
    binary: standIn.binary,
    args: cliArgs({ model: 'sonnet', systemPrompt: SYSTEM }),
    cwd: bareCwd,
    env: runEnvironment({ ...BASE_ENV, PATH: path }),
  });
  const servers: Partial<Record<'peer' | 'provider', ChildProcess>> = {};
  try {
    servers.peer = await startServer(
      'claude-max-api-proxy',
      [PEER_ENTRY, String(peerPort)],
      { PATH: path, HOME: BASE_ENV.HOME },
      peerCwd,
      peerUrl,
      '/health',
    );
    servers.provider = await startServer(
      'model-provider',
      [bundlePath('model-provider')],
      {
        PATH: path,
        HOME: BASE_ENV.HOME,
        MODELPROV_PORT: String(providerPort),
        MODELPROV_DATA_DIR: join(dir, 'data'),
        MODELPROV_MAX_CONCURRENT: String(CAP),
        MODELPROV_MAX_QUEUE: '100',
      },
      ROOT,
      providerUrl,
      '/ready',
    );
    const server = (url: string) => ({
      many: (prompts: string[]) => Promise.all(prompts.map(async (p) => (await time(() => completion(url, p)))[0])),
      batch: (prompts: string[], concurrency: number) => batch(prompts, concurrency, (p) => completion(url, p)),
    });
    const sides = { bare: bareCli, peer: server(peerUrl), provider: server(providerUrl) };
    type Side = keyof typeof sides;
    const names = Object.keys(sides) as Side[];
    /** The sides in another order each round, so that none always follows the same one. */
    const rotated = (r: number) => names.map((_, k) => names[(k + r) % names.length]!);
    for (let i = 0; i < (SMOKE ? 2 : 10); i++) for (const side of names) await sides[side].many([`warm up ${i}`]);
    const cpuBefore = { peer: cpuMs(servers.peer.pid!), provider: cpuMs(servers.provider.pid!) };
    let served = 0;

    // Latency, in rounds: `c` completions at once on each side in turn, every prompt tagged so that its
    // run's own record (start, end) can be found afterwards.
    const LATENCY_ROUNDS = SMOKE ? 3 : 60;
    const latency: Record<number, Record<Side, { tag: string; ms: number }[]>> = {};
    for (const c of [1, CAP]) {
      latency[c] = { bare: [], peer: [], provider: [] };
      for (let r = 0; r < LATENCY_ROUNDS; r++) {
        for (const side of rotated(r)) {
          const tags = Array.from({ length: c }, (_, k) => `${side} c${c} r${r} k${k}`);
          const times = await sides[side].many(tags.map((tag) => `[bench:${tag}] Say hello.`));
          latency[c]![side].push(...times.map((t, k) => ({ tag: tags[k]!, ms: t })));
        }
        served += c;
      }
    }
    // Throughput at the cap: short batches, the sides alternating, the ratio taken per round; five runs, each
    // the median of its rounds (the target holds in five runs out of five).
    const RATE_RUNS = SMOKE ? 2 : 5;
    const RATE_ROUNDS = SMOKE ? 1 : 15;
    const PER_BATCH = SMOKE ? 6 : 16;
    const rates: Record<Side, number[]> = { bare: [], peer: [], provider: [] };
    const runRatios: { provider: number; peer: number }[] = [];
    for (let run = 0; run < RATE_RUNS; run++) {
      const from = rates.bare.length;
      for (let r = 0; r < RATE_ROUNDS; r++) {
        for (const side of rotated(r + run)) {
          const prompts = Array.from(
            { length: PER_BATCH },
            (_, i) => `[bench:rate ${side} ${run}.${r} i${i}] Say hello.`,
          );
          rates[side].push(PER_BATCH / ((await sides[side].batch(prompts, CAP)) / 1000));
        }
        served += PER_BATCH;
      }
      const inRun = (side: Side) => summarize(rates[side].slice(from).map((x, i) => x / rates.bare[from + i]!)).p50;
      runRatios.push({ provider: inRun('provider'), peer: inRun('peer') });
    }
    const cpuPerCompletion = {
      // The service's own process, children not counted (their CPU is the CLI runs').
      peer: (cpuMs(servers.peer.pid!) - cpuBefore.peer) / served,
      provider: (cpuMs(servers.provider.pid!) - cpuBefore.provider) / served,
    };
    const memory = { peer: rssMb(servers.peer.pid!), provider: rssMb(servers.provider.pid!) };

    // Each run's own time, by its tag (the peer puts the system message into the prompt, so the tag is searched for).
    const runMs = new Map<string, number>();
    for (const run of standIn.runs()) {
      const tag = /\[bench:([^\]]+)\]/.exec(run.stdin)?.[1];
      if (tag !== undefined && run.endedAt !== undefined) runMs.set(tag, run.endedAt - run.startedAt);
    }
    const around = (c: number, side: Side) =>
      summarize(
        latency[c]![side].map(({ tag, ms: t }) => {
          const own = runMs.get(tag);
          if (own === undefined) throw new Error(`no record of the run tagged ${tag}`);
          return t - own;
        }),
      );
    const added = (c: number, side: Side) => ({
      p50: around(c, side).p50 - around(c, 'bare').p50,
      p95: around(c, side).p95 - around(c, 'bare').p95,
    });
    const median = (xs: number[]) => summarize(xs).p50;
    const ratio = (side: Side) => median(rates[side].map((x, i) => x / rates.bare[i]!));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
    const label: Record<Side, string> = {
      bare: 'bare stand-in CLI   ',
      peer: 'claude-max-api-proxy',
      provider: 'this provider       ',
    };

    if (SMOKE) console.log('(smoke run: a few of each, to check the script; the figures mean nothing)');
    console.log(
      `model-provider / stand-in CLI, side by side: the bare CLI, claude-max-api-proxy ${PEER_VERSION}, this provider (${LATENCY_ROUNDS} rounds per concurrency, the sides' turns rotating)`,
    );
    for (const c of [1, CAP]) {
      console.log(`  concurrency ${c} (${latency[c]!.bare.length} completions per side):`);
      for (const side of names) {
        const whole = summarize(latency[c]![side].map((x) => x.ms));
        const rest = around(c, side);
        const extra = side === 'bare' ? '' : `  added p50 ${ms(added(c, side).p50)}  p95 ${ms(added(c, side).p95)}`;
        console.log(
          `    ${label[side]}  p50 ${ms(whole.p50)}  p95 ${ms(whole.p95)}  around the CLI run p50 ${ms(rest.p50)}  p95 ${ms(rest.p95)}${extra}`,
        );
      }
    }
    const notMore =
      added(1, 'provider').p50 <= added(1, 'peer').p50 && added(CAP, 'provider').p50 <= added(CAP, 'peer').p50;
    console.log(
      `  added p50, provider vs peer: c=1 ${ms(added(1, 'provider').p50)} vs ${ms(added(1, 'peer').p50)}; c=${CAP} ${ms(added(CAP, 'provider').p50)} vs ${ms(added(CAP, 'peer').p50)}  (target no more than the peer: ${verdict(notMore)})`,
    );
    console.log(
      `  own CPU per completion: peer ${ms(cpuPerCompletion.peer)}, provider ${ms(cpuPerCompletion.provider)} (target no more than the peer: ${verdict(cpuPerCompletion.provider <= cpuPerCompletion.peer)}); memory (RSS) after the runs: peer ${memory.peer.toFixed(0)} MB, provider ${memory.provider.toFixed(0)} MB`,
    );
    console.log(
      `  throughput at the provider's cap (${CAP} clients at once), ${RATE_RUNS} runs of ${RATE_ROUNDS} alternating rounds of ${PER_BATCH}: bare ${mean(rates.bare).toFixed(1)}/s, peer ${mean(rates.peer).toFixed(1)}/s, provider ${mean(rates.provider).toFixed(1)}/s`,
    );
    console.log(
      `  throughput against the bare CLI, each run's median of rounds: provider ${runRatios.map((r) => `${(r.provider * 100).toFixed(1)}%`).join(', ')}; peer ${runRatios.map((r) => `${(r.peer * 100).toFixed(1)}%`).join(', ')}`,
    );
    const atLeast = runRatios.filter((r) => r.provider >= 0.97).length;
    console.log(
      `  provider >= 97% of the bare CLI in ${atLeast} of ${RATE_RUNS} runs (target ${RATE_RUNS} of ${RATE_RUNS}: ${verdict(atLeast === RATE_RUNS)}); all rounds: provider ${(ratio('provider') * 100).toFixed(1)}%, peer ${(ratio('peer') * 100).toFixed(1)}%`,
    );
  } finally {
    bareCli.close();
    await Promise.all(Object.values(servers).map(stopServer));
  }
}

// --- the real CLI, not signed in ----------------------------------------------------------------
{
  const real = signedOutRealCli(ROOT);
  if (real) {
    const bareCli = new BareCli({
      binary: real.binary,
      args: cliArgs({ model: 'sonnet', systemPrompt: SYSTEM }),
      cwd: bareCwd,
      env: runEnvironment(real.env),
    });
    const service = await startModelProvider({
      ...real.env,
      MODELPROV_PORT: '0',
      MODELPROV_DATA_DIR: join(dir, 'data-real'),
      MODELPROV_CLI_BINARY: real.binary,
      MODELPROV_LOG_LEVEL: 'silent',
    });
    try {
      await service.lockdownProbed();
      const N = SMOKE ? 2 : 12;
      const svc: number[] = [];
      const raw: number[] = [];
      await post(service.url, 'warm up');
      await bareCli.many(['warm up']);
      for (let i = 0; i < N; i++) {
        const [a, { status }] = await time(() => post(service.url, `hello ${i}`));
        if (status !== 401) throw new Error(`expected not_logged_in (401), got ${status}`);
        svc.push(a);
        raw.push(...(await bareCli.many([`hello ${i}`])));
      }
      const s = summarize(svc);
      const b = summarize(raw);
      console.log('model-provider / real CLI 2.1.197, not signed in (answers not_logged_in)');
      console.log(`  bare CLI run (${b.n} runs):                 p50 ${ms(b.p50)}  p95 ${ms(b.p95)}`);
      console.log(`  round trip through the service (${s.n}):    p50 ${ms(s.p50)}  p95 ${ms(s.p95)}`);
      console.log(
        `  added by the service:                  p50 ${ms(s.p50 - b.p50)} (${((s.p50 / b.p50 - 1) * 100).toFixed(1)}%)  p95 ${ms(s.p95 - b.p95)}`,
      );
    } finally {
      bareCli.close();
      await service.close();
    }
  }
}

// --- identical requests: the digest per request, the failure memory at its bound ----------------
{
  console.log('model-provider / identical requests');
  const args = cliArgs({ model: 'sonnet', systemPrompt: SYSTEM });
  for (const size of [1_000, 200_000, 4 * 1024 * 1024]) {
    const prompt = 'x'.repeat(size);
    const samples: number[] = [];
    for (let i = 0; i < (SMOKE ? 3 : 50); i++)
      samples.push((await time(async () => requestKey('Bearer key', '/usr/local/bin/claude', args, prompt)))[0]);
    const s = summarize(samples);
    console.log(`  request digest, ${String(size).padStart(7)}-byte prompt:  p50 ${ms(s.p50)}  p95 ${ms(s.p95)}`);
  }
  // Every entry a real failure's message: the memory's bound holds whatever the requests were.
  const memory = new FailureMemory({ seconds: 60 });
  const failures = SMOKE ? 2_000 : 100_000;
  for (let i = 0; i < failures; i++)
    memory.remember(requestKey('Bearer key', '/usr/local/bin/claude', args, `prompt ${i}`), providerError.timeout(300));
  console.log(
    `  failure memory after ${failures} distinct timeouts: ${memory.size} kept, ${(memory.bytes / 1024).toFixed(0)} KiB counted (bound 512 KiB)`,
  );
}
