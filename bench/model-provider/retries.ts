/**
 * What one slow request costs a client that retries it: llama-index's OpenAI LLM at its defaults
 * (test-support/llama-index.ts: the official openai client's 3 retries inside its own 3 attempts, its
 * waits between attempts real) with a client timeout shorter than the reply, against this provider on the
 * stand-in CLI taking SLOW_MS to answer. Printed: the CLI runs the one call cost, whether the call got its
 * answer, how many requests it sent and how long it took, with the default retry window
 * (MODELPROV_RETRY_GRACE_SECONDS) and with it off (0, each attempt its own run, as before it existed).
 * Target: at most 3 runs for one slow request. `--smoke` shortens the reply and the timeout.
 */
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelProviderSettings } from '../../services/model-provider/config.ts';
import { PROBE_PROMPT } from '../../services/model-provider/lockdown.ts';
import { startModelProvider } from '../../services/model-provider/service.ts';
import { llamaIndexChat, llamaIndexClient } from '../../services/model-provider/test-support/llama-index.ts';
import { standInBinary } from '../../services/model-provider/test-support/stand-in.ts';

const SMOKE = process.argv.includes('--smoke');
/** How long the stand-in takes to answer, and the client's timeout (llama-index's `timeout`), in ms. */
const SLOW_MS = SMOKE ? 2_500 : 12_000;
const TIMEOUT_MS = SMOKE ? 800 : 3_000;
const DEFAULT_GRACE = modelProviderSettings.retryGraceSeconds.fallback!;

async function oneSlowCall(grace: string) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-modelprov-retries-'));
  const standIn = standInBinary(join(dir, 'bin'));
  const service = await startModelProvider({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? tmpdir(),
    MODELPROV_PORT: '0',
    MODELPROV_DATA_DIR: join(dir, 'data'),
    MODELPROV_CLI_BINARY: standIn.binary,
    MODELPROV_LOG_LEVEL: 'silent',
    MODELPROV_RETRY_GRACE_SECONDS: grace,
  });
  try {
    await service.lockdownProbed();
    let requests = 0;
    const client = llamaIndexClient(`${service.url}/v1`, TIMEOUT_MS);
    const started = performance.now();
    const outcome = await llamaIndexChat(
      client.withOptions({
        fetch: (url, init) => {
          requests++;
          return fetch(url, init);
        },
      }),
      { model: 'sonnet', messages: [{ role: 'user', content: `A slow question [stand-in:slow=${SLOW_MS}]` }] },
    ).then(
      (c) => (c.choices[0]?.message.content ? 'answered' : 'empty'),
      (err: unknown) => `failed (${(err as Error).constructor.name})`,
    );
    const seconds = (performance.now() - started) / 1000;
    const runs = standIn.started().length - standIn.runs().filter((r) => r.stdin === PROBE_PROMPT).length;
    return { runs, outcome, requests, seconds };
  } finally {
    await service.close();
  }
}

if (SMOKE) console.log('(smoke run: a short reply and timeout, to check the script; the figures mean nothing)');
console.log(
  `model-provider / one slow request, llama-index's default retries (the openai client's 3 inside its own 3), client timeout ${TIMEOUT_MS / 1000} s, reply after ${SLOW_MS / 1000} s, ${new Date().toISOString().slice(0, 16)}Z, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const withWindow = await oneSlowCall(String(DEFAULT_GRACE));
const without = await oneSlowCall('0');
for (const [label, r] of [
  [`retry window ${DEFAULT_GRACE} s (default)`, withWindow],
  ['retry window off (0)', without],
] as const)
  console.log(
    `  ${label.padEnd(28)} CLI runs ${String(r.runs).padStart(2)}, ${r.outcome}, ${r.requests} requests in ${r.seconds.toFixed(1)} s`,
  );
console.log(
  `  runs for one slow request with the default window: ${withWindow.runs} (target <= 3: ${withWindow.runs <= 3 ? 'met' : 'NOT met'})`,
);
