/**
 * The credential detector's cost per write, in process: every string of a write (path segments and
 * the whole JSON body, as the write gate collects them) through `findCredential`, for the bodies the
 * throughput benchmark sends (PUT field, POST note) and for the hand-written ordinary corpus (prose,
 * code, configuration). Prints the mean and percentiles per call, the best of five rounds, and how
 * many of the writes secretlint had to read.
 *
 *   npx tsx bench/persona-store/detector.ts        (or: npm run bench -- persona-store)
 */
import { findCredential, worthSecretlint, type WrittenString } from '../../services/persona-store/credential-screen.ts';
import { readBody } from '../../services/persona-store/write-gate.ts';
import { ordinaryCorpus } from '../../services/persona-store/test-support/ordinary-corpus.ts';
import { summarize } from '../stats.ts';
import { sentence } from './_text.ts';

const CALLS = Number(process.env.BENCH_SAMPLES ?? 5000);
const ROUNDS = 5;

/** The strings the write gate checks for one write: the caller's path segments, then the body. */
function writeStrings(segments: string[], body: unknown): WrittenString[] {
  const strings: WrittenString[] = segments.map((text, i) => ({ where: `path ${i}`, text }));
  readBody(body, strings);
  return strings;
}

let counter = 0;
const workloads: { name: string; write: () => WrittenString[] }[] = [
  {
    name: 'PUT field (benchmark body)',
    write: () =>
      writeStrings(['bench', `field_${counter++ % 1000}`], {
        description: 'a benchmarked field',
        value: { text: sentence(6), n: counter },
        source: 'assistant',
      }),
  },
  {
    name: 'POST note (benchmark body)',
    write: () => writeStrings(['bench'], { content: sentence(14), kind: 'episode', source: 'assistant' }),
  },
  {
    // Line breaks take the screen off its plain-ASCII path (what a person reads has none).
    name: 'POST note, several lines',
    write: () =>
      writeStrings(['bench'], {
        content: `${sentence(6)}\n${sentence(5)}\n\n${sentence(4)}`,
        kind: 'episode',
        source: 'assistant',
      }),
  },
  {
    // Text beyond ASCII is normalised (NFKC, invisible characters) before it is screened.
    name: 'POST note, not ASCII',
    write: () =>
      writeStrings(['bench'], {
        content: `${sentence(5)} caf\u00e9 na\u00efve \u201cquoted\u201d \u00fcber ${sentence(4)} \u6771\u4eac \ud83d\ude42 ${(counter++ % 100) + 1}\u00a0%`,
        kind: 'episode',
        source: 'assistant',
      }),
  },
  (() => {
    const ordinary = ordinaryCorpus();
    return {
      name: `ordinary corpus (${ordinary.length} texts)`,
      write: () =>
        writeStrings(['bench'], {
          content: ordinary[counter++ % ordinary.length],
          kind: 'episode',
          source: 'assistant',
        }),
    };
  })(),
];

console.log(`credential detector, ${CALLS} writes per round, best of ${ROUNDS} rounds (in process, no HTTP)`);
console.log('write                              mean        p50        p99     secretlint read');
for (const w of workloads) {
  const writes = Array.from({ length: CALLS }, w.write);
  const read = writes.filter((strings) => strings.some((s) => worthSecretlint(s.text))).length;
  for (const strings of writes.slice(0, 200)) await findCredential(strings); // warm-up
  let best: { mean: number; p50: number; p99: number } | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const samples: number[] = [];
    const t0 = process.hrtime.bigint();
    for (const strings of writes) {
      const s0 = process.hrtime.bigint();
      if (await findCredential(strings)) throw new Error(`${w.name}: an ordinary write was taken for a credential`);
      samples.push(Number(process.hrtime.bigint() - s0) / 1e3);
    }
    const mean = Number(process.hrtime.bigint() - t0) / 1e3 / CALLS;
    const s = summarize(samples);
    if (!best || mean < best.mean) best = { mean, p50: s.p50, p99: s.p99 };
  }
  const us = (x: number) => `${x.toFixed(1)} \u00b5s`.padStart(10);
  console.log(
    `${w.name.padEnd(32)} ${us(best!.mean)} ${us(best!.p50)} ${us(best!.p99)}     ${((100 * read) / CALLS).toFixed(1)} %`,
  );
}
