import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { propertyOptions, reportSeedOnFailure } from '../../test/support/seed.ts';
import { forEachEngine, field, note, startTestbed, type Client, type Testbed } from './test-support/harness.ts';

reportSeedOnFailure();

forEachEngine(() => {
  let c: Client;

  const KEYS = ['alpha', 'beta', 'gamma', 'delta'];
  const WORDS = ['apple', 'river', 'violin', 'garden'];

  type Op =
    | { op: 'put'; key: string; value: number; pinned: boolean }
    | { op: 'forgetField'; key: string }
    | { op: 'addNote'; word: string }
    | { op: 'revise'; index: number; word: string; pinned?: boolean }
    | { op: 'forgetNote'; index: number }
    | { op: 'card'; name: string };

  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      op: fc.constant('put' as const),
      key: fc.constantFrom(...KEYS),
      value: fc.integer({ min: 0, max: 2 }),
      pinned: fc.boolean(),
    }),
    fc.record({ op: fc.constant('forgetField' as const), key: fc.constantFrom(...KEYS) }),
    fc.record({ op: fc.constant('addNote' as const), word: fc.constantFrom(...WORDS) }),
    fc.record({
      op: fc.constant('revise' as const),
      index: fc.nat(6),
      word: fc.constantFrom(...WORDS),
      pinned: fc.option(fc.boolean(), { nil: undefined }),
    }),
    fc.record({ op: fc.constant('forgetNote' as const), index: fc.nat(6) }),
    fc.record({ op: fc.constant('card' as const), name: fc.constantFrom('Ada', 'Bea') }),
  );

  interface Event {
    action: string;
    target_kind: string;
    target: string;
  }

  async function allEvents(profile: string): Promise<Event[]> {
    const out: Event[] = [];
    let after = 0;
    for (;;) {
      const page = await c.call<{ events: (Event & { id: number })[]; next_after: number | null }>(
        'GET',
        `/v1/personas/${profile}/events?after=${after}`,
      );
      out.push(...page.body.events);
      if (page.body.next_after === null) return out;
      after = page.body.next_after;
    }
  }

  /** The live keys and note ids that replaying the change log gives. */
  function replay(events: Event[]): { fields: string[]; notes: string[] } {
    const fields = new Set<string>();
    const notes = new Set<string>();
    for (const e of events) {
      const set = e.target_kind === 'field' ? fields : e.target_kind === 'note' ? notes : undefined;
      if (!set) continue;
      if (/_(set|revised|pinned|unpinned|revived|added)$/.test(e.action)) set.add(e.target);
      if (/_(forgotten|destroyed)$/.test(e.action)) set.delete(e.target);
    }
    fields.delete('(destroyed field)');
    return { fields: [...fields].sort(), notes: [...notes].sort() };
  }

  let run = 0;

  describe.each(['keep', 'destroy_now'])(
    'the change log, under random sequences of operations, forget mode %s',
    (mode) => {
      let bed: Testbed;
      beforeAll(async () => {
        bed = await startTestbed({
          PERSONA_PIN_CAP_FIELDS: '1000',
          PERSONA_PIN_CAP_NOTES: '1000',
          PERSONA_FORGET_MODE: mode,
        });
        c = bed.owner;
      });
      afterAll(async () => {
        await bed?.close();
      });

      it('holds exactly one entry per change, and replaying it gives the live set the API reports', async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
            const profile = `prop${run++}`;
            await c.call('POST', '/v1/personas', { profile, display_name: 'Ada' });
            let changes = 1; // persona_created
            const live = new Map<string, { value: number; pinned: boolean }>();
            const kept = new Set<string>();
            const notes: { id: string; word: string; pinned: boolean; live: boolean }[] = [];
            let card = 'Ada';
            for (const o of ops) {
              if (o.op === 'put') {
                const r = await c.call(
                  'PUT',
                  `/v1/personas/${profile}/fields/${o.key}`,
                  field(o.value, { pinned: o.pinned }),
                );
                expect(r.status).toBe(200);
                const before = live.get(o.key);
                if (!before || before.value !== o.value || before.pinned !== o.pinned) changes++;
                live.set(o.key, { value: o.value, pinned: o.pinned });
                kept.delete(o.key);
              } else if (o.op === 'forgetField') {
                const r = await c.call('DELETE', `/v1/personas/${profile}/fields/${o.key}`);
                expect(r.status).toBe(live.has(o.key) ? 200 : 404);
                if (live.delete(o.key)) {
                  changes++;
                  if (mode === 'keep') kept.add(o.key);
                }
              } else if (o.op === 'addNote') {
                const r = await c.call('POST', `/v1/personas/${profile}/notes`, note(`about the ${o.word}`));
                expect(r.status).toBe(201);
                notes.push({ id: r.body.id as string, word: o.word, pinned: false, live: true });
                changes++;
              } else if (o.op === 'revise' || o.op === 'forgetNote') {
                const n = notes[o.index];
                if (!n) continue;
                if (o.op === 'revise') {
                  const r = await c.call('PATCH', `/v1/personas/${profile}/notes/${n.id}`, {
                    content: `about the ${o.word}`,
                    ...(o.pinned === undefined ? {} : { pinned: o.pinned }),
                  });
                  expect(r.status).toBe(n.live ? 200 : 404);
                  if (n.live && (n.word !== o.word || (o.pinned !== undefined && o.pinned !== n.pinned))) changes++;
                  if (n.live) {
                    n.word = o.word;
                    n.pinned = o.pinned ?? n.pinned;
                  }
                } else {
                  const r = await c.call('DELETE', `/v1/personas/${profile}/notes/${n.id}`);
                  expect(r.status).toBe(n.live ? 200 : 404);
                  if (n.live) changes++;
                  n.live = false;
                }
              } else {
                await c.call('PATCH', `/v1/personas/${profile}`, { display_name: o.name });
                if (o.name !== card) changes++;
                card = o.name;
              }
            }
            const events = await allEvents(profile);
            expect(events).toHaveLength(changes);
            const fromLog = replay(events);
            const fields = await c.call<{ fields: { key: string }[] }>(
              'GET',
              `/v1/personas/${profile}/fields?limit=100`,
            );
            const listed = await c.call<{ notes: { id: string }[] }>('GET', `/v1/personas/${profile}/notes?limit=100`);
            expect(fromLog.fields).toEqual(fields.body.fields.map((f) => f.key).sort());
            expect(fromLog.notes).toEqual(listed.body.notes.map((n) => n.id).sort());
            expect(fromLog.fields).toEqual([...live.keys()].sort());
            const block = await c.call('GET', `/v1/personas/${profile}`);
            expect([block.body.field_count, block.body.note_count]).toEqual([
              fromLog.fields.length,
              fromLog.notes.length,
            ]);
            // The full-text index holds exactly the live notes.
            for (const word of WORDS) {
              const hits = await c.call<{ notes: { id: string }[] }>(
                'GET',
                `/v1/personas/${profile}/recall?q=${word}&limit=50`,
              );
              expect(hits.body.notes.map((h) => h.id).sort()).toEqual(
                notes
                  .filter((n) => n.live && n.word === word)
                  .map((n) => n.id)
                  .sort(),
              );
            }
          }),
          propertyOptions({ numRuns: 25 }),
        );
      });
    },
  );
});
