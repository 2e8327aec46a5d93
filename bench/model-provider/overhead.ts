/**
 * The chat-model provider's cost over the CLI it runs. With the stand-in CLI: the time the service
 * adds per completion over spawning the same stand-in directly (p50, p95, runs interleaved), and
 * completions per second at the concurrency cap against the bare stand-in at the same concurrency.
 * With the real CLI (not signed in, empty HOME): the round trip through the service against the bare
 * CLI. Targets: added p50 <= 5 ms, throughput >= 95% of bare. Then what making blind retries cheap costs:
 * the request identity digest for prompts up to the body limit, and the failure memory at its bound.
 * `--smoke` runs a few of each, to check that the script works; its figures mean nothing.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FailureMemory, requestKey } from '../../services/model-provider/identical-requests.ts';
import { providerError } from '../../services/model-provider/errors.ts';
import { cliArgs, cliEnvironment } from '../../services/model-provider/invocation.ts';
import { startModelProvider } from '../../services/model-provider/service.ts';
import { standInBinary } from '../../services/model-provider/test-support/stand-in.ts';
import { ROOT } from '../../test/support/process.ts';
import { ms, summarize, time } from '../stats.ts';

const SYSTEM = 'You are a helpful assistant. You have no tools: answer directly in text.';
const CAP = 2;
const SMOKE = process.argv.includes('--smoke');
/** The service's whole environment (it reads no other); bare runs get the same, stripped as the service strips it. */
const BASE_ENV = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir() };
const BARE_ENV = cliEnvironment(BASE_ENV);

function bare(binary: string, prompt: string, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, cliArgs({ model: 'sonnet', systemPrompt: SYSTEM }), { cwd, env: BARE_ENV, stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', () => resolve(out));
    child.stdin.end(prompt);
  });
}

async function viaService(url: string, prompt: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: prompt }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function throughput(n: number, concurrency: number, one: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const [elapsed] = await time(() =>
    Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) await one(next++);
      }),
    ),
  );
  return n / (elapsed / 1000);
}

const dir = mkdtempSync(join(tmpdir(), 'bench-modelprov-'));
const standIn = standInBinary(dir);
const bareCwd = mkdtempSync(join(tmpdir(), 'bench-modelprov-cwd-'));

// --- stand-in ---------------------------------------------------------------------------------
{
  const service = await startModelProvider({
    ...BASE_ENV,
    MODELPROV_PORT: '0',
    MODELPROV_DATA_DIR: join(dir, 'data'),
    MODELPROV_CLI_BINARY: standIn.binary,
    MODELPROV_LOG_LEVEL: 'silent',
    MODELPROV_MAX_CONCURRENT: String(CAP),
    MODELPROV_MAX_QUEUE: '100',
  });
  try {
    await service.lockdownProbed();
    for (let i = 0; i < (SMOKE ? 2 : 10); i++) {
      await viaService(service.url, `warm up ${i}`);
      await bare(standIn.binary, `warm up ${i}`, bareCwd);
    }
    const N = SMOKE ? 10 : 150;
    const svc: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < N; i++) {
      const [a, status] = await time(() => viaService(service.url, `latency ${i}`));
      if (status !== 200) throw new Error(`completion answered ${status}`);
      svc.push(a);
      raw.push((await time(() => bare(standIn.binary, `latency ${i}`, bareCwd)))[0]);
    }
    const s = summarize(svc);
    const b = summarize(raw);
    // Alternating rounds, so that load from elsewhere on the machine falls on both sides alike.
    const ROUNDS = SMOKE ? 1 : 4;
    const M = SMOKE ? 8 : 40;
    const bareRates: number[] = [];
    const svcRates: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      bareRates.push(await throughput(M, CAP, (i) => bare(standIn.binary, `throughput ${r} ${i}`, bareCwd)));
      svcRates.push(await throughput(M, CAP, (i) => viaService(service.url, `throughput ${r} ${i}`)));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const bareRate = mean(bareRates);
    const svcRate = mean(svcRates);
    if (SMOKE) console.log('(smoke run: a few of each, to check the script; the figures mean nothing)');
    console.log('model-provider / stand-in CLI');
    console.log(`  bare stand-in spawn (${b.n} runs):       p50 ${ms(b.p50)}  p95 ${ms(b.p95)}`);
    console.log(`  through the service (${s.n} completions): p50 ${ms(s.p50)}  p95 ${ms(s.p95)}`);
    console.log(`  added by the service:                 p50 ${ms(s.p50 - b.p50)}  p95 ${ms(s.p95 - b.p95)}  (target p50 <= 5 ms)`);
    console.log(`  throughput at the cap (${CAP} at once, ${ROUNDS} alternating rounds of ${M}): service ${svcRate.toFixed(1)}/s, bare ${bareRate.toFixed(1)}/s`);
    console.log(`    per round: service ${svcRates.map((x) => x.toFixed(1)).join(', ')}; bare ${bareRates.map((x) => x.toFixed(1)).join(', ')}`);
    console.log(`  service / bare throughput:            ${((svcRate / bareRate) * 100).toFixed(1)}%  (target >= 95%)`);
  } finally {
    await service.close();
  }
}

// --- the real CLI, not signed in ----------------------------------------------------------------
{
  const real = join(ROOT, 'node_modules', '.bin', 'claude');
  if (!existsSync(real)) {
    console.log('model-provider / real CLI: skipped, the pinned CLI package is not installed (run npm ci)');
  } else {
    const home = mkdtempSync(join(tmpdir(), 'bench-modelprov-home-'));
    const wrapper = join(dir, 'real-claude');
    writeFileSync(wrapper, `#!/bin/sh\nexec env -i PATH=/usr/bin:/bin HOME='${home}' TERM=dumb '${real}' "$@"\n`);
    chmodSync(wrapper, 0o755);
    const service = await startModelProvider({ ...BASE_ENV, MODELPROV_PORT: '0', MODELPROV_DATA_DIR: join(dir, 'data-real'), MODELPROV_CLI_BINARY: wrapper, MODELPROV_LOG_LEVEL: 'silent' });
    try {
      await service.lockdownProbed();
      const N = SMOKE ? 2 : 12;
      const svc: number[] = [];
      const raw: number[] = [];
      await viaService(service.url, 'warm up');
      await bare(wrapper, 'warm up', bareCwd);
      for (let i = 0; i < N; i++) {
        const [a, status] = await time(() => viaService(service.url, `hello ${i}`));
        if (status !== 401) throw new Error(`expected not_logged_in (401), got ${status}`);
        svc.push(a);
        raw.push((await time(() => bare(wrapper, `hello ${i}`, bareCwd)))[0]);
      }
      const s = summarize(svc);
      const b = summarize(raw);
      console.log('model-provider / real CLI 2.1.197, not signed in (answers not_logged_in)');
      console.log(`  bare CLI run (${b.n} runs):                 p50 ${ms(b.p50)}  p95 ${ms(b.p95)}`);
      console.log(`  round trip through the service (${s.n}):    p50 ${ms(s.p50)}  p95 ${ms(s.p95)}`);
      console.log(`  added by the service:                  p50 ${ms(s.p50 - b.p50)} (${((s.p50 / b.p50 - 1) * 100).toFixed(1)}%)  p95 ${ms(s.p95 - b.p95)}`);
    } finally {
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
    for (let i = 0; i < (SMOKE ? 3 : 50); i++) samples.push((await time(async () => requestKey('Bearer key', '/usr/local/bin/claude', args, prompt)))[0]);
    const s = summarize(samples);
    console.log(`  request digest, ${String(size).padStart(7)}-byte prompt:  p50 ${ms(s.p50)}  p95 ${ms(s.p95)}`);
  }
  // Every entry a real failure's message: the memory's bound holds whatever the requests were.
  const memory = new FailureMemory({ seconds: 60 });
  const failures = SMOKE ? 2_000 : 100_000;
  for (let i = 0; i < failures; i++) memory.remember(requestKey('Bearer key', '/usr/local/bin/claude', args, `prompt ${i}`), providerError.timeout(300));
  console.log(`  failure memory after ${failures} distinct timeouts: ${memory.size} kept, ${(memory.bytes / 1024).toFixed(0)} KiB counted (bound 512 KiB)`);
}
