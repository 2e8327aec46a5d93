/**
 * Time to the first words of a streamed completion, side by side in one run on the paced stand-in CLI
 * (`--include-partial-messages`, twenty text deltas 25 ms apart): the bare CLI (run by `_bare-cli.mjs`, a
 * plain Node process with nothing else loaded, as the provider spawns it, timed from the spawn to its first
 * text delta on stdout), the peer `claude-max-api-proxy` (which streams partial messages) and this
 * provider's bundle with MODELPROV_STREAM=deltas, and, beside them, the same provider with
 * MODELPROV_STREAM=whole. Each server in plain Node in its own process and session, called through
 * node:http with a keep-alive agent.
 *
 * Printed per side at concurrency 1 and 2, p50 and p95: the time from sending the request to the first
 * chunk that carries reply text at the client (the bare CLI: from the spawn to its first text delta), and
 * the whole reply's time; for the servers, how long after the CLI printed its first text delta that chunk
 * reached the client (the stand-in records when it printed it; both clocks are this machine's wall clock).
 * Targets (`deltas`, p50, at c=1 and c=2): the first content at most 3 ms after the bare CLI's first delta,
 * and no later than the peer's plus 1 ms; the whole reply no slower than before.
 *
 * Then the real CLI, not signed in (it writes no text, so only the error path): the time to the
 * not_logged_in answer through the provider in each mode. `--rounds N` sets the rounds per concurrency
 * (40 by default); `--smoke` runs a few of each, its figures mean nothing.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { build, buildErrors } from '../../main/build/build.ts';
import { bundlePath } from '../../main/supervisor/service-bundles.ts';
import { cliArgs, runEnvironment } from '../../services/model-provider/invocation.ts';
import { startModelProvider } from '../../services/model-provider/service.ts';
import type { StreamMode } from '../../services/model-provider/shapes.ts';
import { processAlive, standInBinary } from '../../services/model-provider/test-support/stand-in.ts';
import { freePort, ROOT } from '../../test/support/process.ts';
import { completionRequest } from './_completion-request.ts';
import { BareCli, signedOutRealCli, startServer, stopServer } from './_servers.ts';
import { ms, summarize } from '../stats.ts';

const SMOKE = process.argv.includes('--smoke');
const roundsArg = process.argv.indexOf('--rounds');
// The figures compared are a millisecond or two apart on a shared machine: enough rounds for a p50 that holds.
const ROUNDS = SMOKE ? 2 : roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 40;
const PACE = '20x25';
const SYSTEM = 'You are a helpful assistant. You have no tools: answer directly in text.';
const BASE_ENV = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir() };
const PEER_ENTRY = join(ROOT, 'node_modules', 'claude-max-api-proxy', 'dist', 'server', 'standalone.js');
const now = () => performance.timeOrigin + performance.now();
const sign = (x: number) => `${x >= 0 ? '+' : ''}${ms(x)}`;

interface Timing {
  /** ms from the request to the first chunk with reply text (the bare CLI: from the spawn to its first text delta). */
  first: number;
  /** ms from the request to the end of the stream. */
  total: number;
  /** When the first text arrived (ms since the epoch). */
  firstAt: number;
  /** ms from the response's status and headers to its first text (the bare CLI: 0). */
  afterHead: number;
  /** When the bytes of the first text reached the client's socket, before node:http parsed them (ms since the epoch; the bare CLI: firstAt). */
  socketAt: number;
  status: number;
  /** When the request was sent (the bare CLI: when it was spawned), ms since the epoch. */
  sentAt: number;
}

/** One streamed completion through node:http: when its first reply text arrived and when it ended. */
function streamed(url: string, prompt: string): Promise<Timing> {
  const started = now();
  return new Promise((resolve, reject) => {
    let socketAt = Number.NaN;
    let raw = '';
    const onBytes = (bytes: Buffer) => {
      if (!Number.isNaN(socketAt)) return;
      raw += bytes.toString('latin1');
      if (/"content":"[^"]/.test(raw)) socketAt = now();
    };
    const req = completionRequest(url, { system: SYSTEM, prompt, stream: true }, (res) => {
      const headAt = now();
      let firstAt = Number.NaN;
      let seen = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (!Number.isNaN(firstAt)) return;
        seen += chunk;
        // The first event whose delta carries text (the peer sends an SSE comment and a role-only chunk first).
        if (/"content":"[^"]/.test(seen)) firstAt = now();
      });
      res.on('end', () => {
        req.socket?.off('data', onBytes);
        resolve({
          sentAt: started,
          first: firstAt - started,
          total: now() - started,
          firstAt,
          afterHead: firstAt - headAt,
          socketAt,
          status: res.statusCode ?? 0,
        });
      });
      res.on('error', reject);
    });
    // Ahead of node:http's own listener: when the bytes arrived, before they were parsed ('socket' comes on a later tick).
    req.on('socket', (socket) => socket.prependListener('data', onBytes));
    req.on('error', reject);
  });
}

const dir = mkdtempSync(join(tmpdir(), 'bench-modelprov-first-'));
const standIn = standInBinary(join(dir, 'bin'), { pace: PACE });
const bareCwd = join(dir, 'bare-cwd');
mkdirSync(bareCwd);
const date = `${new Date().toISOString().slice(0, 16)}Z`;

// --- the paced stand-in: bare, the peer, the provider (deltas), the provider (whole) ------------------------
{
  const failed = buildErrors(await build({ targets: ['services'] }));
  if (failed) throw new Error(`The provider's bundle could not be built: ${failed}`);
  const path = `${dirname(standIn.binary)}${delimiter}${BASE_ENV.PATH}`;
  const ports = { peer: await freePort(), deltas: await freePort(), whole: await freePort() };
  const urls = {
    peer: `http://127.0.0.1:${ports.peer}`,
    deltas: `http://127.0.0.1:${ports.deltas}`,
    whole: `http://127.0.0.1:${ports.whole}`,
  };
  const peerCwd = join(dir, 'peer-cwd');
  mkdirSync(peerCwd);
  const provider = (mode: StreamMode) =>
    startServer(
      `model-provider (${mode})`,
      [bundlePath('model-provider')],
      {
        PATH: path,
        HOME: BASE_ENV.HOME,
        MODELPROV_PORT: String(ports[mode]),
        MODELPROV_DATA_DIR: join(dir, `data-${mode}`),
        MODELPROV_STREAM: mode,
        MODELPROV_MAX_QUEUE: '100',
      },
      ROOT,
      urls[mode],
      '/ready',
    );
  const servers: ChildProcess[] = [];
  let bareCli: BareCli | undefined;
  try {
    servers.push(
      await startServer(
        'claude-max-api-proxy',
        [PEER_ENTRY, String(ports.peer)],
        { PATH: path, HOME: BASE_ENV.HOME },
        peerCwd,
        urls.peer,
        '/health',
      ),
    );
    servers.push(await provider('deltas'), await provider('whole'));
    bareCli = new BareCli({
      binary: standIn.binary,
      args: cliArgs({ model: 'sonnet', systemPrompt: SYSTEM, partialMessages: true }),
      cwd: bareCwd,
      env: runEnvironment({ ...BASE_ENV, PATH: path }),
    });
    const runBare = bareCli;
    const sides = {
      bare: async (prompt: string): Promise<Timing> => {
        const [t] = await runBare.streamed([prompt]);
        return {
          first: t!.first,
          total: t!.total,
          firstAt: t!.spawnedAt + t!.first,
          afterHead: 0,
          socketAt: Number.NaN,
          status: 0,
          sentAt: t!.spawnedAt,
        };
      },
      peer: (prompt: string) => streamed(urls.peer, prompt),
      deltas: (prompt: string) => streamed(urls.deltas, prompt),
      whole: (prompt: string) => streamed(urls.whole, prompt),
    };
    type Side = keyof typeof sides;
    const names = Object.keys(sides) as Side[];
    for (let i = 0; i < (SMOKE ? 1 : 3); i++) for (const side of names) await sides[side](`warm up ${side} ${i}`);

    const results: Record<number, Record<Side, (Timing & { tag: string })[]>> = {};
    for (const c of [1, 2]) {
      results[c] = { bare: [], peer: [], deltas: [], whole: [] };
      for (let r = 0; r < ROUNDS; r++) {
        for (let k = 0; k < names.length; k++) {
          const side = names[(k + r) % names.length]!;
          const tags = Array.from({ length: c }, (_, j) => `${side} c${c} r${r} k${j}`);
          const timings = await Promise.all(tags.map((tag) => sides[side](`[bench:${tag}] Say hello.`)));
          for (const [j, t] of timings.entries()) {
            if (side !== 'bare' && t.status !== 200) throw new Error(`${side} answered ${t.status}`);
            results[c]![side].push({ ...t, tag: tags[j]! });
          }
        }
      }
    }
    // A run answered at its result event writes its record as it exits, after the client has its answer: wait for every run to be gone.
    while (standIn.started().some(processAlive)) await new Promise((r) => setTimeout(r, 50));
    // When each run printed its first delta, by its tag (the peer puts the system message into the prompt, so the tag is searched for).
    // The whole mode asks for no partial messages: its first text is compared with the run's exit instead.
    const firstDelta = new Map<string, number>();
    const cliStart = new Map<string, number>();
    for (const run of standIn.runs()) {
      const tag = /\[bench:([^\]]+)\]/.exec(run.stdin)?.[1];
      const at = run.firstDeltaAt ?? run.endedAt;
      if (tag !== undefined && at !== undefined) firstDelta.set(tag, at);
      if (tag !== undefined) cliStart.set(tag, run.startedAt);
    }
    /** p50 of one leg of each side's path to the first words: the request (or spawn) to the CLI's start, that start to its first delta. */
    const leg = (c: number, side: Side, which: 'toStart' | 'toDelta') =>
      summarize(
        results[c]![side].map((t) => {
          const start = cliStart.get(t.tag)!;
          return which === 'toStart' ? start - t.sentAt : firstDelta.get(t.tag)! - start;
        }),
      ).p50;
    const after = (c: number, side: Side, at: 'firstAt' | 'socketAt' = 'firstAt') =>
      summarize(
        results[c]![side].map((t) => {
          const printed = firstDelta.get(t.tag);
          if (printed === undefined) throw new Error(`no record of the run tagged ${t.tag}`);
          return t[at] - printed;
        }),
      );
    const label: Record<Side, string> = {
      bare: 'bare stand-in CLI       ',
      peer: 'claude-max-api-proxy    ',
      deltas: 'this provider, deltas   ',
      whole: 'this provider, whole    ',
    };
    if (SMOKE) console.log('(smoke run: a few of each, to check the script; the figures mean nothing)');
    console.log(
      `model-provider / first words (streamed), stand-in CLI with partial messages (${PACE.replace('x', ' deltas, ms apart: ')}), ${ROUNDS} rounds per concurrency, ${date}, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    const verdicts: string[] = [];
    const wholeReply: string[] = [];
    for (const c of [1, 2]) {
      console.log(`  concurrency ${c}:`);
      const p50 = (side: Side, of: 'first' | 'total') => summarize(results[c]![side].map((t) => t[of])).p50;
      for (const side of names) {
        const first = summarize(results[c]![side].map((t) => t.first));
        const total = summarize(results[c]![side].map((t) => t.total));
        const over = side === 'bare' ? '' : ` (bare CLI ${sign(first.p50 - p50('bare', 'first'))})`;
        const behind =
          side === 'bare'
            ? ''
            : `  after the CLI's ${side === 'whole' ? 'exit' : 'first delta'} p50 ${ms(after(c, side).p50)}`;
        // Where the status and headers wait for the first text, the client reads them on its path to that text.
        const head =
          side === 'bare' || side === 'whole'
            ? ''
            : ` (socket ${ms(after(c, side, 'socketAt').p50)}${side === 'deltas' ? `, after the head ${ms(summarize(results[c]![side].map((t) => t.afterHead)).p50)}` : ''})`;
        console.log(
          `    ${label[side]} first content p50 ${ms(first.p50)}${over}  p95 ${ms(first.p95)}  whole reply p50 ${ms(total.p50)}  p95 ${ms(total.p95)}${behind}${head}`,
        );
      }
      console.log(
        `    where the time goes, p50: ${(['bare', 'peer', 'deltas'] as const).map((side) => `${label[side].trim()}: request (bare: spawn) to the CLI's start ${ms(leg(c, side, 'toStart'))}, then to its first delta ${ms(leg(c, side, 'toDelta'))}${side === 'bare' ? '' : `, then to the client ${ms(after(c, side).p50)}`}`).join('; ')}`,
      );
      const overBare = p50('deltas', 'first') - p50('bare', 'first');
      const overPeer = p50('deltas', 'first') - p50('peer', 'first');
      verdicts.push(
        `c=${c}: ${sign(overBare)} over the bare CLI (target <= +3 ms: ${overBare <= 3 ? 'met' : 'NOT met'}), ${sign(overPeer)} against the peer (target <= +1 ms: ${overPeer <= 1 ? 'met' : 'NOT met'})`,
      );
      wholeReply.push(
        `c=${c}: provider ${ms(p50('deltas', 'total'))}, peer ${ms(p50('peer', 'total'))}, bare CLI ${ms(p50('bare', 'total'))}`,
      );
    }
    console.log(
      `  first content, provider (deltas), request to first words at the client, p50: ${verdicts.join('; ')}`,
    );
    console.log(`  whole reply p50: ${wholeReply.join('; ')}`);
  } finally {
    bareCli?.close();
    await Promise.all(servers.map(stopServer));
  }
}

// --- the real CLI, not signed in: no text, only the error path ---------------------------------------------
{
  const real = signedOutRealCli(ROOT);
  if (real) {
    const N = SMOKE ? 2 : 12;
    const figures: string[] = [];
    for (const mode of ['deltas', 'whole'] as const) {
      const service = await startModelProvider({
        ...real.env,
        MODELPROV_PORT: '0',
        MODELPROV_DATA_DIR: join(dir, `real-${mode}`),
        MODELPROV_CLI_BINARY: real.binary,
        MODELPROV_LOG_LEVEL: 'silent',
        MODELPROV_STREAM: mode,
        MODELPROV_FAILURE_MEMORY_SECONDS: '0',
      });
      try {
        await service.lockdownProbed();
        await streamed(service.url, 'warm up');
        const times: number[] = [];
        for (let i = 0; i < N; i++) {
          const t = await streamed(service.url, `hello ${i}`);
          if (t.status !== 401) throw new Error(`expected not_logged_in (401), got ${t.status}`);
          times.push(t.total);
        }
        const s = summarize(times);
        figures.push(`${mode}: p50 ${ms(s.p50)}  p95 ${ms(s.p95)}`);
      } finally {
        await service.close();
      }
    }
    console.log(
      `model-provider / real CLI 2.1.197, not signed in, stream: true (answers 401 not_logged_in, ${N} each): ${figures.join('; ')}`,
    );
  }
}
