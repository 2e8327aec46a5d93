/**
 * One seed per test file for everything random in a test: fast-check properties and hand-rolled draws
 * (corpus strings, markers). `TEST_SEED=<n> npx vitest run <file>` replays a failure; without it a seed
 * is drawn, and it is printed whenever a test of the file fails, so every random failure can be replayed.
 */
import { randomInt } from 'node:crypto';
import { beforeEach } from 'vitest';

function initialSeed(): number {
  const given = process.env.TEST_SEED;
  if (given !== undefined && given !== '') {
    const n = Number(given);
    if (!Number.isInteger(n) || n < 0 || n > 0xffffffff)
      throw new Error(`TEST_SEED must be a whole number 0-4294967295, not ${given}`);
    return n;
  }
  return randomInt(0x7fffffff);
}

/** The seed this test file runs with. */
export const TEST_SEED = initialSeed();

/** Registers a hook that prints the seed beside any failing test of the calling file. Call it once at the top of a file. */
export function reportSeedOnFailure(): void {
  beforeEach((context) => {
    context.onTestFailed(() => {
      process.stderr.write(`\n[seed] "${context.task.name}" failed; replay with TEST_SEED=${TEST_SEED}\n`);
    });
  });
}

/** Options for `fc.assert`: this file's seed, and the seed named in the failure message (fast-check does that). */
export function propertyOptions<T extends object>(options: T = {} as T): T & { seed: number } {
  return { ...options, seed: TEST_SEED };
}

/**
 * A deterministic generator of integers in [0, n) (mulberry32), for draws that are not fast-check
 * properties. Each call of `seededRandom()` gives a stream derived from the file's seed and `stream`.
 */
export function seededRandom(stream = 0): (n: number) => number {
  let a = (TEST_SEED ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
  return (n: number) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const r = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    return Math.floor(r * n);
  };
}
