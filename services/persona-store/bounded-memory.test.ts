import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../kit/auth.ts';
import { reportSeedOnFailure, seededRandom } from '../../test/support/seed.ts';
import { ACTIONS } from './change-log.ts';
import { Client, field, forEachEngine, note, startTestbed, type Testbed } from './test-support/harness.ts';
import { rememberVerifiedTokens } from '../kit/verified-tokens.ts';

reportSeedOnFailure();

/**
 * What a request can make the service keep in memory stays within its bound, whatever is sent. The
 * bound is observed through the service's own inspector (`held()`), never through RSS or timings;
 * bench/persona-store/memory-under-attack.ts measures the RSS the same attack costs.
 */

/** Room for about three remembered tokens (a token is about 500 characters, plus the entry's overhead). */
const TOKEN_BUDGET = 2_500;

/** A testbed on the current engine with one persona, one field and one note. */
async function startBed(): Promise<{ bed: Testbed; c: Client }> {
  const bed = await startTestbed({ PERSONA_VERIFIED_TOKENS_BYTES: String(TOKEN_BUDGET) });
  const c = bed.owner;
  await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
  await c.call('PUT', '/v1/personas/ada/fields/city', field('Lisbon'));
  await c.call('POST', '/v1/personas/ada/notes', note('a first note'));
  return { bed, c };
}

function shuffle<T>(items: T[], random: (n: number) => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = random(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

// Both engines answer every drawn filter; the statements kept are SQLite's (better-sqlite3 keeps what it
// prepared, and the engine counts it); on PostgreSQL pg sends every query as an unnamed statement, which the
// server drops at the next one, so nothing is kept to count there (held() says 0).
forEachEngine(() => {
  let bed: Testbed;
  let c: Client;
  beforeAll(async () => {
    ({ bed, c } = await startBed());
  });
  afterAll(async () => {
    await bed?.close();
  });

  describe('the change log\u2019s filters', () => {
    it('1,500 requests with growing action lists and ever different filters prepare not one statement more', async () => {
      const random = seededRandom(1);
      // One request per order first: the change log's statement of each order is prepared the first time it is asked for.
      expect((await c.call('GET', '/v1/personas/ada/events?action=field_set&target=city')).status).toBe(200);
      expect((await c.call('GET', '/v1/personas/ada/events?action=field_set&target=city&order=newest')).status).toBe(
        200,
      );
      const before = bed.store.held().preparedStatements;
      expect(before).toBeGreaterThan(0); // the count sees the statements the requests above prepared (SQLite's, or PostgreSQL's named ones)
      const statuses = new Map<number, number>();
      for (let i = 1; i <= 1_500; i++) {
        // The attack of the audit: a list longer each time, repeats included (up to 750 actions, within Node's 16 KB of headers) ...
        const growing = Array.from({ length: Math.ceil(i / 2) }, (_, k) => ACTIONS[k % ACTIONS.length]).join(',');
        // ... and lists any client may send: distinct actions in a random order and number, with the other filters drawn too.
        const drawn = shuffle([...ACTIONS], random).slice(0, 1 + random(ACTIONS.length));
        const query = new URLSearchParams({
          action: drawn.join(','),
          target: `t${random(1_000_000)}`,
          since: new Date(random(2e12)).toISOString(),
        });
        if (random(2) === 0) query.set('until', new Date(2e12 + random(2e12)).toISOString());
        if (random(2) === 0) query.set('target_kind', ['persona', 'field', 'note'][random(3)]!);
        if (random(2) === 0) query.set('after', String(random(1_000)));
        if (random(2) === 0) query.set('order', random(2) === 0 ? 'newest' : 'oldest');
        const path =
          i % 2 === 0 ? `/v1/personas/ada/events?action=${growing}` : `/v1/personas/ada/events?${query.toString()}`;
        const r = await c.call('GET', path);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
      expect(bed.store.held().preparedStatements).toBe(before);
      // Lists past 16 actions all repeat one, and are refused; the drawn ones are answered.
      expect(statuses.get(200)).toBeGreaterThan(750);
      expect(statuses.get(422)).toBeGreaterThan(600);
      expect([...statuses.keys()].sort()).toEqual([200, 422]);
    });

    it('names each action at most once: a repeat or an unknown action is 422 saying which and the limit, all 16 at once are answered', async () => {
      const repeat = await c.call('GET', '/v1/personas/ada/events?action=field_set,note_added,field_set');
      expect(repeat.status).toBe(422);
      expect(repeat.body.detail as string).toMatch(
        /"field_set" is named twice; name each action once \(a list holds at most 16\)/,
      );
      const long = await c.call('GET', `/v1/personas/ada/events?action=${[...ACTIONS, 'field_set'].join(',')}`);
      expect(long.status).toBe(422);
      expect(long.body.detail as string).toMatch(/at most 16/);
      const unknown = await c.call('GET', '/v1/personas/ada/events?action=field_set,ghp_secretlookingthing0123456789');
      expect(unknown.status).toBe(422);
      expect(unknown.text).toMatch(/item 2 is not an action/);
      expect(unknown.text).not.toContain('ghp_secret');
      const all = await c.call<{ events: { action: string }[] }>(
        'GET',
        `/v1/personas/ada/events?action=${ACTIONS.join(',')}`,
      );
      expect(all.body.events.map((e) => e.action)).toEqual(['persona_created', 'field_set', 'note_added']);
      const some = await c.call<{ events: { action: string }[] }>(
        'GET',
        '/v1/personas/ada/events?action=note_added,persona_created',
      );
      expect(some.body.events.map((e) => e.action)).toEqual(['persona_created', 'note_added']);
    });
  });
});

// Tokens are remembered by the HTTP side, whatever the engine: one engine is enough.
describe('remembered tokens', () => {
  let bed: Testbed;
  let c: Client;
  beforeAll(async () => {
    ({ bed, c } = await startBed());
  });
  afterAll(async () => {
    await bed?.close();
  });

  it('many distinct valid tokens never hold more than the byte budget; a token let go still works, verified again', async () => {
    const tokens: string[] = [];
    for (let i = 0; i < 30; i++) tokens.push(await bed.identity.mint(bed.identity.localCredential, 'persona'));
    expect(new Set(tokens).size).toBe(30);
    let most = 0;
    for (const token of tokens) {
      expect((await new Client(c.url, token).call('GET', '/v1/personas/ada')).status).toBe(200);
      const held = bed.store.held().verifiedTokens;
      expect(held.bytes).toBeLessThanOrEqual(TOKEN_BUDGET);
      most = Math.max(most, held.entries);
    }
    expect(most).toBeGreaterThanOrEqual(2);
    expect(most).toBeLessThan(6);
    // The first token was let go long ago; it is verified again and answered.
    expect((await new Client(c.url, tokens[0]!).call('GET', '/v1/personas/ada')).status).toBe(200);
  });

  it('lets go of the least recently used token first, remembers none with a budget of 0, and never one larger than the budget', async () => {
    const real = createTokenVerifier({
      identityUrl: bed.identity.url,
      audience: 'persona',
      keys: { file: bed.identity.keysFile },
    });
    let verifications = 0;
    const counted = { ...real, verify: (h: string | undefined) => (verifications++, real.verify(h)) };
    const [a, b, d] = await Promise.all(
      [1, 2, 3].map(() => bed.identity.mint(bed.identity.localCredential, 'persona')),
    );
    const size = a!.length + 300; // a token and its entry's overhead, with room for the account
    const remembered = rememberVerifiedTokens(counted, { maxBytes: 2 * size });
    for (const t of [a, b, a, d]) await remembered.verify(`Bearer ${t}`); // d pushes out b, not a (used just before)
    expect(verifications).toBe(3);
    await remembered.verify(`Bearer ${a}`);
    expect(verifications).toBe(3);
    await remembered.verify(`Bearer ${b}`);
    expect(verifications).toBe(4);
    expect(remembered.held.entries).toBe(2);
    expect(remembered.held.bytes).toBeLessThanOrEqual(remembered.held.maxBytes);

    for (const maxBytes of [0, 100]) {
      const none = rememberVerifiedTokens(counted, { maxBytes });
      await none.verify(`Bearer ${a}`);
      await none.verify(`Bearer ${a}`);
      expect(none.held).toEqual({ entries: 0, bytes: 0, maxBytes });
    }
  });
});
