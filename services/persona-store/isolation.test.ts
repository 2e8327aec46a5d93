import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_IDS } from './routes.ts';
import { forEachEngine, field, note, startTestbed, type Client, type Testbed } from './test-support/harness.ts';

forEachEngine(() => {
  let bed: Testbed;
  let alice: Client;
  let bob: Client;
  let noteId: string;

  /** Everything alice can see of her persona: if any of it moves, bob changed something. */
  async function aliceState(): Promise<string> {
    const parts = await Promise.all([
      alice.call('GET', '/v1/personas/ada'),
      alice.call('GET', '/v1/personas/ada/export'),
      alice.call('GET', '/v1/personas/ada/events'),
      alice.call('GET', `/v1/personas/ada/notes/${noteId}`),
      alice.call('GET', '/v1/recall?q=secretive'),
    ]);
    return JSON.stringify(parts.map((p) => [p.status, p.body]));
  }

  beforeAll(async () => {
    bed = await startTestbed();
    alice = bed.owner;
    bob = await bed.account('bob');
    await alice.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
    await alice.call('PUT', '/v1/personas/ada/fields/hobby', field('secretive gardening', { pinned: true }));
    noteId = (await alice.call('POST', '/v1/personas/ada/notes', note('a secretive observation', { pinned: true })))
      .body.id as string;
    await bob.call('POST', '/v1/personas', { profile: 'bee', display_name: 'Bee' });
  });
  afterAll(async () => {
    await bed?.close();
  });

  describe('isolation between accounts', () => {
    it('answers 404 to every operation of another account on the first one\u2019s profile, field and note, exactly like a missing row, and changes nothing', async () => {
      const before = await aliceState();
      const n = noteId;
      // [operation id, method, path on alice's rows, the same path on rows that do not exist, body]
      const addressed: [string, string, string, string, unknown?][] = [
        ['get_persona', 'GET', '/v1/personas/ada', '/v1/personas/nobody'],
        ['update_persona', 'PATCH', '/v1/personas/ada', '/v1/personas/nobody', { display_name: 'Mallory' }],
        ['put_field', 'PUT', '/v1/personas/ada/fields/hobby', '/v1/personas/nobody/fields/hobby', field('overwritten')],
        ['get_field', 'GET', '/v1/personas/ada/fields/hobby', '/v1/personas/nobody/fields/hobby'],
        ['list_fields', 'GET', '/v1/personas/ada/fields', '/v1/personas/nobody/fields'],
        ['forget_field', 'DELETE', '/v1/personas/ada/fields/hobby', '/v1/personas/nobody/fields/hobby'],
        ['describe_persona_schema', 'GET', '/v1/personas/ada/fields/_schema', '/v1/personas/nobody/fields/_schema'],
        ['add_note', 'POST', '/v1/personas/ada/notes', '/v1/personas/nobody/notes', note('planted')],
        ['list_notes', 'GET', '/v1/personas/ada/notes', '/v1/personas/nobody/notes'],
        [
          'get_note',
          'GET',
          `/v1/personas/ada/notes/${n}`,
          '/v1/personas/nobody/notes/00000000-0000-0000-0000-000000000000',
        ],
        [
          'revise_note',
          'PATCH',
          `/v1/personas/ada/notes/${n}`,
          '/v1/personas/nobody/notes/00000000-0000-0000-0000-000000000000',
          { content: 'rewritten' },
        ],
        [
          'forget_note',
          'DELETE',
          `/v1/personas/ada/notes/${n}`,
          '/v1/personas/nobody/notes/00000000-0000-0000-0000-000000000000',
        ],
        ['recall', 'GET', '/v1/personas/ada/recall?q=secretive', '/v1/personas/nobody/recall?q=secretive'],
        ['export_persona', 'GET', '/v1/personas/ada/export', '/v1/personas/nobody/export'],
        ['list_events', 'GET', '/v1/personas/ada/events', '/v1/personas/nobody/events'],
        ['delete_persona', 'DELETE', '/v1/personas/ada', '/v1/personas/nobody'],
      ];
      for (const [op, method, path, missing, body] of addressed) {
        const theirs = await bob.call(method, path, body);
        const none = await bob.call(method, missing, body);
        expect(theirs.status, op).toBe(404);
        expect(none.status, op).toBe(404);
        const neutral = (text: string) =>
          text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID');
        expect(neutral(theirs.text).replaceAll('/ada', '/nobody').replaceAll('\\"ada\\"', '\\"nobody\\"'), op).toBe(
          neutral(none.text),
        );
      }
      // Alice's note id under bob's own persona is no more his than under hers.
      expect((await bob.call('GET', `/v1/personas/bee/notes/${n}`)).status).toBe(404);
      expect((await bob.call('PATCH', `/v1/personas/bee/notes/${n}`, { content: 'x' })).status).toBe(404);
      expect((await bob.call('DELETE', `/v1/personas/bee/notes/${n}`)).status).toBe(404);

      // Operations that address no row of alice's: they show nothing of hers.
      const list = await bob.call<{ personas: { profile: string }[] }>('GET', '/v1/personas');
      expect(list.body.personas.map((p) => p.profile)).toEqual(['bee']);
      const all = await bob.call('GET', '/v1/recall?q=secretive');
      expect(all.body).toEqual({ fields: [], notes: [] });
      for (const probe of ['/healthy', '/ready'])
        expect(await (await fetch(bed.store.url + probe)).text()).not.toMatch(/ada|secretive/);
      // create_persona with her profile name makes bob's own persona; hers is untouched.
      expect((await bob.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Bob\u2019s Ada' })).status).toBe(
        201,
      );
      expect((await bob.call('GET', '/v1/personas/ada')).body).toMatchObject({
        persona: { display_name: 'Bob\u2019s Ada' },
        field_count: 0,
        note_count: 0,
      });
      expect((await bob.call('GET', `/v1/personas/ada/notes/${n}`)).status).toBe(404);

      expect(await aliceState()).toBe(before);
      const covered = new Set([
        ...addressed.map((a) => a[0]),
        'list_personas',
        'recall_all',
        'healthy',
        'ready',
        'create_persona',
      ]);
      expect([...covered].sort()).toEqual([...OPERATION_IDS].sort());
    });
  });
});
