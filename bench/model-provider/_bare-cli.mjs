/* global performance */
/**
 * The benchmark's bare CLI: a plain Node process with nothing else loaded that runs the CLI as the
 * provider does (detached, prompt on stdin, output read to the end) and times each run itself, from the
 * spawn to the close of its pipes. overhead.ts drives it over the IPC channel, so that the bare side's
 * spawns are not slowed by the benchmark's own large process (a fork costs more the more memory the
 * parent holds) and its times hold no message passing. Not a benchmark of its own (run.ts skips `_` files).
 *
 * Messages: `{ id, run: { binary, args, cwd, env }, prompts, concurrency? }`. Without `concurrency`, every
 * prompt runs at once and the answer is `{ id, ms: [per run], first: [per run], spawnedAt: [per run] }`,
 * `first` being the time from the spawn to the first stdout chunk holding a text delta (NaN when there was
 * none), `spawnedAt` when the spawn began (ms since the epoch); with it, the
 * prompts run that many at a time and the answer is `{ id, ms: [the whole batch] }`. A run that fails
 * answers `{ id, error }`.
 */
import { spawn } from 'node:child_process';

/** One run, spawn to close: its duration in ms, and when its first text delta came. */
function timed(run, prompt) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const spawnedAt = performance.timeOrigin + started;
    let first = Number.NaN;
    const child = spawn(run.binary, run.args, {
      cwd: run.cwd,
      env: run.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      if (Number.isNaN(first) && chunk.includes('"text_delta"')) first = performance.now() - started;
    });
    child.stdin.on('error', () => {});
    child.on('error', reject);
    child.on('close', () => resolve({ ms: performance.now() - started, first, spawnedAt }));
    child.stdin.end(prompt);
  });
}

const once = async (run, prompt) => (await timed(run, prompt)).ms;

async function batch(run, prompts, concurrency) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < prompts.length) await once(run, prompts[next++]);
    }),
  );
  return performance.now() - started;
}

process.on('message', (message) => {
  const { id, run, prompts, concurrency } = message;
  const work =
    concurrency === undefined
      ? Promise.all(prompts.map((p) => timed(run, p))).then((t) => ({
          ms: t.map((x) => x.ms),
          first: t.map((x) => x.first),
          spawnedAt: t.map((x) => x.spawnedAt),
        }))
      : batch(run, prompts, concurrency).then((ms) => ({ ms: [ms] }));
  work.then(
    (answer) => process.send({ id, ...answer }),
    (err) => process.send({ id, error: String(err?.message ?? err) }),
  );
});
// The benchmark going away ends this process too.
process.on('disconnect', () => process.exit(0));
