/**
 * secretlint's profiler kept every performance mark of every run (Node's timeline and its own lists):
 * memory and time that grew with each write the persona store screened. The store turns it off.
 */
import { performance } from 'node:perf_hooks';
import { secretLintProfiler } from '@secretlint/profiler';
import { describe, expect, it } from 'vitest';
import { findCredential } from './credential-screen.ts';

describe('screening with secretlint', () => {
  it('leaves no performance mark, measure or profiler entry behind, however many writes it reads', async () => {
    // Strings secretlint reads (long token-like runs with digits), none of them a credential.
    const strings = Array.from({ length: 200 }, (_, i) => ({
      where: `notes/${i}`,
      text: `build ${i}: artifact sha a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8${i} uploaded`,
    }));
    for (const s of strings) expect(await findCredential([s])).toBeUndefined();
    // The profiler's observer is called back later (setImmediate): let it run before looking.
    await new Promise((resolve) => setImmediate(resolve));
    expect(performance.getEntriesByType('mark')).toHaveLength(0);
    expect(performance.getEntriesByType('measure')).toHaveLength(0);
    expect(await secretLintProfiler.getEntries()).toHaveLength(0);
    expect(await secretLintProfiler.getMeasures()).toHaveLength(0);
  });
});
