import { afterEach, describe, expect, it } from 'vitest';
import { field, forEachEngine, note, startTestbed, type Testbed } from './test-support/harness.ts';

let bed: Testbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

interface Problem {
  status: number;
  detail: string;
  current_etag: string | null;
  changed: string[];
  changed_by: string[];
}

forEachEngine(() => {
  describe('conditional writes (If-Match)', () => {
    it('a field written since it was read is not reverted: 412 names what changed, and the current ETag writes', async () => {
      bed = await startTestbed();
      const c = bed.owner;
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      const first = await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
      expect(first.headers.get('etag')).toBe('"1"');
      const read = await c.call('GET', '/v1/personas/ada/fields/mood');
      expect(read.headers.get('etag')).toBe('"1"');
      // The hub writes between the person's read and write.
      await c.call('PUT', '/v1/personas/ada/fields/mood', field('cheerful'));

      const stale = await c.call<Problem>('PUT', '/v1/personas/ada/fields/mood', field('calm', { pinned: true }), {
        'if-match': read.headers.get('etag')!,
      });
      expect(stale.status).toBe(412);
      expect(stale.headers.get('etag')).toBe('"2"');
      expect(stale.body).toMatchObject({ current_etag: '"2"', changed: ['value'], changed_by: ['persona'] });
      expect(stale.body.detail).toContain('value changed');
      expect((await c.call('GET', '/v1/personas/ada/fields/mood')).body).toMatchObject({
        value: 'cheerful',
        pinned: false,
        revision: 2,
      });

      const fresh = await c.call('PUT', '/v1/personas/ada/fields/mood', field('cheerful', { pinned: true }), {
        'if-match': '2',
      });
      expect([fresh.status, fresh.headers.get('etag')]).toEqual([200, '"3"']);
      const events = await c.call<{ events: { action: string }[] }>(
        'GET',
        '/v1/personas/ada/events?target=mood&order=newest',
      );
      expect(events.body.events.map((e) => e.action)).toEqual(['field_pinned', 'field_revised', 'field_set']);
    });

    it('two writes sent with the same If-Match at once: exactly one lands, the other is told', async () => {
      bed = await startTestbed();
      const c = bed.owner;
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
      const answers = await Promise.all(
        ['one', 'two', 'three', 'four'].map((v) =>
          c.call('PUT', '/v1/personas/ada/fields/mood', field(v), { 'if-match': '"1"' }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 412, 412, 412]);
      expect((await c.call('GET', '/v1/personas/ada/fields/mood')).body).toMatchObject({ revision: 2 });
    });

    it('If-Match on an entry with no live value fails; * holds for a live one; a malformed one is refused in words', async () => {
      bed = await startTestbed();
      const c = bed.owner;
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      const create = await c.call<Problem>('PUT', '/v1/personas/ada/fields/mood', field('calm'), { 'if-match': '*' });
      expect(create.status).toBe(412);
      expect(create.body.detail).toContain('no live entry');
      expect((await c.call('GET', '/v1/personas/ada/fields/mood')).status).toBe(404);
      await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
      expect((await c.call('PUT', '/v1/personas/ada/fields/mood', field('warm'), { 'if-match': '*' })).status).toBe(
        200,
      );
      const weak = await c.call('PUT', '/v1/personas/ada/fields/mood', field('cold'), { 'if-match': 'W/"2"' });
      expect(weak.status).toBe(412);
      const bad = await c.call<Problem>('PUT', '/v1/personas/ada/fields/mood', field('cold'), {
        'if-match': 'revision two',
      });
      expect(bad.status).toBe(422);
      expect(bad.body.detail).toContain('If-Match');
    });

    it('a note revised or forgotten after a stale read is refused with what changed; the current revision goes through', async () => {
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'keep' });
      const c = bed.owner;
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      const added = await c.call<{ id: string }>('POST', '/v1/personas/ada/notes', note('first words'));
      expect(added.headers.get('etag')).toBe('"1"');
      const path = `/v1/personas/ada/notes/${added.body.id}`;
      await c.call('PATCH', path, { content: 'other words' });

      const revise = await c.call<Problem>('PATCH', path, { pinned: true }, { 'if-match': '"1"' });
      expect(revise.status).toBe(412);
      expect(revise.body.changed).toEqual(['content']);
      const forget = await c.call<Problem>('DELETE', path, undefined, { 'if-match': '"1"' });
      expect(forget.status).toBe(412);
      expect((await c.call('GET', path)).body).toMatchObject({ content: 'other words', pinned: false });

      expect((await c.call('DELETE', path, undefined, { 'if-match': '"2"' })).body).toEqual({ outcome: 'kept' });
      // Gone from answers: a conditional write on it now fails, an unknown note still answers 404.
      expect((await c.call('PATCH', path, { pinned: true }, { 'if-match': '"2"' })).status).toBe(412);
      expect(
        (await c.call('PATCH', '/v1/personas/ada/notes/no-such-note', { pinned: true }, { 'if-match': '"1"' })).status,
      ).toBe(404);
    });

    it('the card: the identity block carries its ETag; an update after another one names the members it changed', async () => {
      bed = await startTestbed();
      const c = bed.owner;
      const created = await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
      const block = await c.call('GET', '/v1/personas/ada');
      const tag = block.headers.get('etag')!;
      expect(tag).toMatch(/^"c[0-9a-z]+-[\w-]{12}"$/);
      expect(created.headers.get('etag')).toBe(tag);
      bed.clock.advance(1000);
      const other = await c.call('PATCH', '/v1/personas/ada', { tone: 'warm', language: 'en' });
      expect(other.headers.get('etag')).not.toBe(tag);

      const stale = await c.call<Problem>('PATCH', '/v1/personas/ada', { tone: 'dry' }, { 'if-match': tag });
      expect(stale.status).toBe(412);
      expect(stale.body.changed.sort()).toEqual(['language', 'tone']);
      expect(stale.body.current_etag).toBe(other.headers.get('etag'));
      expect((await c.call('GET', '/v1/personas/ada')).body).toMatchObject({ persona: { tone: 'warm' } });
      const fresh = await c.call(
        'PATCH',
        '/v1/personas/ada',
        { tone: 'dry' },
        { 'if-match': stale.body.current_etag! },
      );
      expect(fresh.status).toBe(200);
    });
  });
});

describe('the OpenAPI document tells hubs', () => {
  it('every conditional operation takes If-Match and may answer 412; reads and writes document their ETag', async () => {
    bed = await startTestbed();
    const doc = (await (await fetch(`${bed.store.url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            operationId: string;
            parameters?: { in: string; name: string }[];
            responses: Record<string, { headers?: Record<string, unknown> }>;
          }
        >
      >;
    };
    const ops = Object.values(doc.paths).flatMap((p) => Object.values(p));
    const op = (id: string) => ops.find((o) => o.operationId === id)!;
    for (const id of ['put_field', 'forget_field', 'revise_note', 'forget_note', 'update_persona']) {
      expect(
        op(id).parameters?.some((p) => p.in === 'header' && p.name === 'if-match'),
        id,
      ).toBe(true);
      expect(Object.keys(op(id).responses), id).toContain('412');
    }
    for (const [id, status] of [
      ['get_field', '200'],
      ['put_field', '200'],
      ['get_note', '200'],
      ['add_note', '201'],
      ['revise_note', '200'],
      ['get_persona', '200'],
      ['update_persona', '200'],
    ] as const)
      expect(Object.keys(op(id).responses[status]?.headers ?? {}), id).toEqual(['ETag']);
  });
});
