/**
 * What a caller can make the gateway hold (issue 10: bound every cache a request can grow, ETag answers
 * by bytes). Against the GitHub double over real HTTP, with a 1 MiB ETag budget so that a few dozen
 * file reads overflow it. The bound is observed through the gateway's own inspector (`held()`), never
 * through RSS or timings; bench/repohost-gateway/memory-under-large-reads.ts prints the RSS figure.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from '../../test/github-double/world.ts';
import { propertyOptions, reportSeedOnFailure } from '../../test/support/seed.ts';
import { ConfigError } from '../kit/config.ts';
import { loadRepohostConfig } from './config.ts';
import { answerBytes, EtagCache, LARGEST_SHARE } from './platform/etag-cache.ts';

reportSeedOnFailure();

const BUDGET = 1024 * 1024;
const ALICE = `github_pat_${'c3'.repeat(20)}`;
const BOB = `github_pat_${'d4'.repeat(20)}`;
/** 40,000 characters: its contents answer (base64 and the file's metadata) takes about 55 KB, so about 18 fit in the budget. */
const LARGE = 40_000;
const FILES = 60;
const fileText = (owner: string, i: number) => `${owner} file ${i}\n`.padEnd(LARGE, `${i} `);

let world: World;

beforeAll(async () => {
  world = await startWorld({ REPOHOST_ETAG_CACHE_BYTES: String(BUDGET) });
  const d = world.double;
  d.addToken(ALICE, 'alice', 'all');
  d.addToken(BOB, 'bob', 'all');
  const files = (owner: string) =>
    Object.fromEntries(Array.from({ length: FILES }, (_, i) => [`f${i}.txt`, fileText(owner, i)]));
  d.addRepo('alice/big', {
    files: {
      ...files('alice'),
      // Over an eighth of the budget (its answer is about 160 KB), and over the whole budget (about 1.2 MB).
      'over-share.txt': 'o'.repeat(120_000),
      'over-budget.txt': 'b'.repeat(900_000),
    },
  });
  d.addRepo('bob/big', { files: files('bob') });
  await world.connect('work', { kind: 'token', token: ALICE });
  await world.connect('other', { kind: 'token', token: BOB });
});

afterAll(async () => {
  expect(world?.double.violations ?? []).toEqual([]);
  await world?.close();
});

const held = () => world.gateway.held().etagAnswers;
/** The double's last call: its status says whether the gateway revalidated (304) or read anew (200). */
const lastCall = () => world.double.calls.at(-1)!;

async function readFile(profile: string, repo: string, path: string): Promise<string> {
  const res = await world.call('GET', `/v1/repos/${repo}/contents?path=${path}&max_bytes=1000000`, { profile });
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  expect(res.body.cut_bytes).toBe(0);
  return res.body.content as string;
}

describe('the ETag cache is bounded by bytes', () => {
  it('never holds more than its budget after many large distinct reads, and every answer is whole', async () => {
    expect(held().maxBytes).toBe(BUDGET);
    for (let i = 0; i < FILES; i++) {
      expect(await readFile('work', 'alice/big', `f${i}.txt`)).toBe(fileText('alice', i));
      expect(held().bytes).toBeLessThanOrEqual(BUDGET);
    }
    const after = held();
    // The budget is what stopped it: full to within one answer, far fewer answers than reads.
    expect(after.bytes).toBeGreaterThan(BUDGET - BUDGET / LARGEST_SHARE);
    expect(after.entries).toBeLessThan(FILES / 2);
    expect(after.entries).toBeGreaterThan(5);
    // The most recent reads are the ones kept: read again, they revalidate.
    const quota = world.double.quotaUsed('alice');
    expect(await readFile('work', 'alice/big', `f${FILES - 1}.txt`)).toBe(fileText('alice', FILES - 1));
    expect(lastCall().status).toBe(304);
    expect(world.double.quotaUsed('alice')).toBe(quota);
  });

  it('a small answer read between large ones still revalidates with 304 and spends no quota', async () => {
    const first = await world.call('GET', '/v1/repos/alice/big');
    expect(first.status).toBe(200);
    for (let i = 0; i < 30; i++) {
      await readFile('work', 'alice/big', `f${(i * 7) % FILES}.txt`);
      const quota = world.double.quotaUsed('alice');
      const again = await world.call('GET', '/v1/repos/alice/big');
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect(lastCall()).toMatchObject({ operationId: 'repos/get', status: 304 });
      expect(world.double.quotaUsed('alice')).toBe(quota);
      expect(held().bytes).toBeLessThanOrEqual(BUDGET);
    }
  });

  it('an answer over an eighth of the budget, or over all of it, is served whole and not kept', async () => {
    for (const [path, length] of [
      ['over-share.txt', 120_000],
      ['over-budget.txt', 900_000],
    ] as const) {
      const before = held();
      expect((await readFile('work', 'alice/big', path)).length).toBe(length);
      expect(lastCall()).toMatchObject({ operationId: 'repos/get-content', status: 200 });
      // Not kept: nothing was added, and nothing kept was pushed out for it.
      expect(held()).toEqual(before);
      const quota = world.double.quotaUsed('alice');
      expect((await readFile('work', 'alice/big', path)).length).toBe(length);
      expect(lastCall()).toMatchObject({ operationId: 'repos/get-content', status: 200 });
      expect(world.double.quotaUsed('alice')).toBe(quota + 1);
    }
  });

  it('one credential reading large answers pushes out its own before another credential’s', async () => {
    // Alice's small reads are the most recent of her answers; Bob then reads 60 large files (about three budgets).
    const small = ['/v1/repos/alice/big', '/v1/me', '/v1/repos/alice/big/issues?limit=5'];
    for (const path of small) expect((await world.call('GET', path)).status).toBe(200);
    for (let i = 0; i < FILES; i++) {
      expect(await readFile('other', 'bob/big', `f${i}.txt`)).toBe(fileText('bob', i));
      expect(held().bytes).toBeLessThanOrEqual(BUDGET);
    }
    expect(held().credentials).toBe(2);
    for (const path of small) {
      const quota = world.double.quotaUsed('alice');
      const calls = world.double.calls.length;
      expect((await world.call('GET', path)).status).toBe(200);
      // Every platform read of this answer was revalidated (a list may read a second page), so Alice spent nothing.
      expect(world.double.calls.slice(calls).map((c) => c.status)).toEqual(
        world.double.calls.slice(calls).map(() => 304),
      );
      expect(world.double.quotaUsed('alice')).toBe(quota);
    }
  });

  it('a credential no longer usable takes its answers with it', async () => {
    expect(held().entries).toBeGreaterThan(0);
    // The sweep tick's purge, at a moment when every credential has expired.
    world.gateway.parts.platform.purge(Date.now() + 365 * 86_400_000);
    expect(held()).toMatchObject({ entries: 0, bytes: 0, credentials: 0 });
    expect(world.gateway.held().platformClients).toBe(0);
  });

  it('REPOHOST_ETAG_CACHE_BYTES=0 keeps nothing: every read is answered, none revalidated', async () => {
    await world.restartGateway({ REPOHOST_ETAG_CACHE_BYTES: '0' });
    for (let i = 0; i < 2; i++) {
      expect((await world.call('GET', '/v1/repos/alice/big')).status).toBe(200);
      expect(lastCall()).toMatchObject({ operationId: 'repos/get', status: 200 });
    }
    expect(held()).toMatchObject({ entries: 0, bytes: 0, maxBytes: 0 });
  });
});

describe('the other things a request can grow are bounded', () => {
  it('many tokens of one account make one credential, one client and one sweep hold; remembered tokens stay within their bytes', async () => {
    // 100 distinct tokens of one account: the kit remembers them within its byte budget.
    for (let i = 0; i < 100; i++) {
      const token = await world.identity.mint(world.identity.localCredential, 'repohost-api');
      expect((await world.call('GET', '/v1/repos/alice/big', { token })).status).toBe(200);
    }
    const all = world.gateway.held();
    expect(all.verifiedTokens.bytes).toBeLessThanOrEqual(all.verifiedTokens.maxBytes);
    // One account, one profile: one credential, one client, however many tokens it came with.
    expect(all.credentials.credentials).toBe(1);
    expect(all.platformClients).toBe(1);
    expect(all.sweepHolds).toBeLessThanOrEqual(1);
  });
});

describe('REPOHOST_ETAG_CACHE_BYTES', () => {
  it('defaults to 32 MiB and takes 0 to 4 GiB; anything else stops startup naming it', () => {
    expect(loadRepohostConfig({}).etagCacheBytes).toBe(32 * 1024 * 1024);
    expect(loadRepohostConfig({ REPOHOST_ETAG_CACHE_BYTES: '0' }).etagCacheBytes).toBe(0);
    for (const bad of ['32mb', '-1', '1.5', String(4 * 1024 ** 3 + 1)]) {
      expect(() => loadRepohostConfig({ REPOHOST_ETAG_CACHE_BYTES: bad })).toThrow(
        /REPOHOST_ETAG_CACHE_BYTES is not valid/,
      );
    }
  });

  it('REPOHOST_ETAG_CACHE_ENTRIES, which it replaced, stops startup saying what to set instead', () => {
    for (const value of ['5000', '']) {
      let error: unknown;
      try {
        loadRepohostConfig({ REPOHOST_ETAG_CACHE_ENTRIES: value });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/REPOHOST_ETAG_CACHE_ENTRIES is no longer read/);
      expect((error as Error).message).toMatch(/set REPOHOST_ETAG_CACHE_BYTES instead/);
    }
  });
});

describe('EtagCache', () => {
  const answer = (size: number) => ({
    etag: 'W/"e"',
    url: 'https://api.example/x',
    headers: [['content-type', 'application/json']] as [string, string][],
    body: new ArrayBuffer(size),
  });

  it('property: whatever is kept, got and dropped, it holds at most its budget, counts exactly, and serves an answer only to its own credential', () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('keep' as const),
        credential: fc.integer({ min: 0, max: 3 }),
        key: fc.integer({ min: 0, max: 20 }),
        size: fc.integer({ min: 0, max: 40_000 }),
      }),
      fc.record({
        kind: fc.constant('get' as const),
        credential: fc.integer({ min: 0, max: 3 }),
        key: fc.integer({ min: 0, max: 20 }),
      }),
      fc.record({ kind: fc.constant('drop' as const), credential: fc.integer({ min: 0, max: 3 }) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200_000 }), fc.array(op, { maxLength: 200 }), (maxBytes, ops) => {
        const cache = new EtagCache(maxBytes);
        // What each credential's answers are, by the body size it was kept with: a get must find exactly that or nothing.
        const model = new Map<string, number>();
        for (const o of ops) {
          const c = `cred${o.credential}`;
          if (o.kind === 'keep') {
            const keptIt = cache.keep(c, `k${o.key}`, answer(o.size));
            if (keptIt) model.set(`${c} k${o.key}`, o.size);
            else model.delete(`${c} k${o.key}`);
            expect(keptIt).toBe(answerBytes(`k${o.key}`, answer(o.size)) <= maxBytes / LARGEST_SHARE);
          } else if (o.kind === 'get') {
            const got = cache.get(c, `k${o.key}`);
            if (got) expect(got.body.byteLength).toBe(model.get(`${c} k${o.key}`));
          } else {
            cache.drop(c);
            for (const k of [...model.keys()]) if (k.startsWith(`${c} `)) model.delete(k);
          }
          const h = cache.held();
          expect(h.bytes).toBeLessThanOrEqual(maxBytes);
          expect(h.bytes).toBeGreaterThanOrEqual(0);
          const parts = [0, 1, 2, 3].map((n) => cache.heldBy(`cred${n}`));
          expect(parts.reduce((s, p) => s + p.bytes, 0)).toBe(h.bytes);
          expect(parts.reduce((s, p) => s + p.entries, 0)).toBe(h.entries);
          expect(parts.filter((p) => p.entries > 0).length).toBe(h.credentials);
        }
      }),
      propertyOptions({ numRuns: 200 }),
    );
  });
});
