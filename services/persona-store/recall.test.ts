import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RECALL_CANDIDATES } from './recall.ts';
import { forEachEngine, note, startTestbed, type Client, type Testbed } from './test-support/harness.ts';

/**
 * Recall ranks at most RECALL_CANDIDATES matching entries per list: a word in more entries than that has
 * the newest of them ranked, and the answer says so (stopped_early); with fewer, every match is ranked and
 * the answer is what it always was. The same answers on both engines.
 */

vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

interface Hit {
  id: string;
  profile: string;
  content: string;
  score: number;
}
interface Answer {
  fields: unknown[];
  notes: Hit[];
  stopped_early?: { fields?: number; notes?: number };
}

/** Writes the notes, a few at a time (their order among themselves does not matter to the tests). */
async function write(c: Client, profile: string, contents: string[]): Promise<void> {
  for (let i = 0; i < contents.length; i += 8) {
    const answers = await Promise.all(
      contents.slice(i, i + 8).map((content) => c.call('POST', `/v1/personas/${profile}/notes`, note(content))),
    );
    for (const a of answers) expect(a.status, a.text).toBe(201);
  }
}

forEachEngine(() => {
  describe('recall of a word in more entries than it ranks', () => {
    let bed: Testbed;
    let c: Client;
    /** In the order written (the store's own order, from list_notes): the oldest notes, each holding "lantern" four times. */
    let oldest: string[];
    let threefold: Set<string>;

    beforeAll(async () => {
      bed = await startTestbed();
      c = bed.owner;
      await c.call('POST', '/v1/personas', { profile: 'keeper', display_name: 'Keeper' });
      // Every note is five words, so that only how often "lantern" occurs tells their scores apart. The oldest
      // hundred hold it four times; the newest RECALL_CANDIDATES hold it once, but for ten that hold it three times.
      await write(
        c,
        'keeper',
        Array.from({ length: 100 }, () => 'lantern lantern lantern lantern beacon'),
      );
      const newest = Array.from({ length: RECALL_CANDIDATES }, (_, i) =>
        i % 100 === 50 ? 'lantern lantern lantern harbour tide' : 'lantern quiet harbour evening tide',
      );
      await write(c, 'keeper', newest);
      const listed: { id: string; content: string }[] = [];
      for (let after: string | null = '0'; after !== null;) {
        const page: { body: { notes: { id: string; content: string }[]; next_after: string | null } } = await c.call(
          'GET',
          `/v1/personas/keeper/notes?after=${after}&limit=100`,
        );
        listed.push(...page.body.notes);
        after = page.body.next_after;
      }
      expect(listed).toHaveLength(100 + RECALL_CANDIDATES);
      oldest = listed.slice(0, 100).map((n) => n.id);
      threefold = new Set(
        listed.filter((n) => n.content.startsWith('lantern lantern lantern harbour')).map((n) => n.id),
      );
      expect(threefold.size).toBe(10);
    });

    afterAll(async () => bed?.close());

    it('ranks the newest RECALL_CANDIDATES matches and says so: a better match older than those is not among the hits', async () => {
      const r = await c.call<Answer>('GET', '/v1/personas/keeper/recall?q=lantern&limit=10');
      expect(r.status, r.text).toBe(200);
      expect(r.body.stopped_early).toEqual({ notes: RECALL_CANDIDATES });
      expect(new Set(r.body.notes.map((n) => n.id))).toEqual(threefold);
      expect(r.body.notes.some((n) => oldest.includes(n.id))).toBe(false);
      const scores = r.body.notes.map((n) => n.score);
      expect(scores).toEqual([...scores].sort((a, b) => b - a));
    });

    it('ranks every match when there are no more than RECALL_CANDIDATES, ties the older first, and answers as it always did', async () => {
      const r = await c.call<Answer>('GET', '/v1/personas/keeper/recall?q=beacon&limit=10');
      expect(Object.keys(r.body).sort()).toEqual(['fields', 'notes']);
      expect(r.body.notes.map((n) => n.id)).toEqual(oldest.slice(0, 10));
      const none = await c.call<Answer>('GET', '/v1/personas/keeper/recall?q=nowhere');
      expect(none.body).toEqual({ fields: [], notes: [] });
    });

    it('across personas, the newest matches of all of them are ranked together', async () => {
      await c.call('POST', '/v1/personas', { profile: 'visitor', display_name: 'Visitor' });
      await write(c, 'visitor', ['lantern lantern lantern lantern lantern']);
      const r = await c.call<Answer>('GET', '/v1/recall?q=lantern&limit=11');
      expect(r.body.stopped_early).toEqual({ notes: RECALL_CANDIDATES });
      expect(r.body.notes[0]!.profile).toBe('visitor');
      expect(new Set(r.body.notes.slice(1).map((n) => n.id))).toEqual(threefold);
      // Another account's recall neither sees these nor is capped by them.
      const stranger = await bed.account('stranger');
      const theirs = await stranger.call<Answer>('GET', '/v1/recall?q=lantern');
      expect(theirs.body).toEqual({ fields: [], notes: [] });
    });
  });
});
