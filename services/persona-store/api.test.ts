import { request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { propertyOptions, reportSeedOnFailure } from '../../test/support/seed.ts';
import { tokenRejectionSuite } from '../../test/support/token-suite.ts';
import { OPERATION_IDS } from './routes.ts';
import {
  forEachEngine,
  field,
  note,
  startTestbed,
  type Answer,
  type Client,
  type Testbed,
} from './test-support/harness.ts';

reportSeedOnFailure();

forEachEngine(() => {
  let bed: Testbed;
  let c: Client;

  beforeAll(async () => {
    bed = await startTestbed({
      PERSONA_PIN_CAP_FIELDS: '2',
      PERSONA_PIN_CAP_NOTES: '2',
      PERSONA_MAX_NOTE_CHARS: '500',
      PERSONA_MAX_VALUE_BYTES: '256',
      PERSONA_KEEP_REPLACED_VALUES: 'true',
    });
    c = bed.owner;
    expect(
      (await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada', tone: 'warm', verbosity: 'terse' }))
        .status,
    ).toBe(201);
  });
  afterAll(async () => {
    await bed?.close();
  });

  describe('the contract', () => {
    it('serves exactly the 21 operation ids of the design in /openapi.json', async () => {
      const doc = (await (await fetch(`${bed.store.url}/openapi.json`)).json()) as {
        paths: Record<string, Record<string, { operationId: string }>>;
      };
      const ids = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
      expect(ids.sort()).toEqual([...OPERATION_IDS].sort());
      expect(ids).toHaveLength(21);
      expect(Object.keys(doc.paths)).toContain('/v1/personas/{profile}/notes/{note_id}');
      expect(Object.keys(doc.paths)).toContain('/v1/personas/{profile}/fields/_schema');
    });

    it('answers /healthy and /ready without a token', async () => {
      expect((await fetch(`${bed.store.url}/healthy`)).status).toBe(200);
      const ready = await fetch(`${bed.store.url}/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ checks: { database: 'ok', identity_keys: 'ok' } });
    });
  });

  /** One request with the Host header as given (fetch always sends the URL's own). */
  function withHost(path: string, host: string, init: { method?: string; body?: string; token?: string } = {}) {
    return new Promise<{ status: number; body: string }>((resolve, reject) => {
      const target = new URL(path, bed.store.url);
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname + target.search,
          method: init.method ?? 'GET',
          setHost: false,
          headers: {
            host,
            ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
            ...(init.body ? { 'content-type': 'application/json' } : {}),
          },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.end(init.body);
    });
  }

  describe('the Host check (the kit\u2019s, DNS rebinding)', () => {
    it('refuses a Host that is not this machine with 421 on the probes, the document and token routes, before anything is written', async () => {
      const targets: [string, string, string?][] = [
        ['GET', '/healthy'],
        ['GET', '/ready'],
        ['GET', '/openapi.json'],
        ['GET', '/v1/personas/ada'],
        ['POST', '/v1/personas', JSON.stringify({ profile: 'rebound', display_name: 'R' })],
      ];
      for (const host of ['evil.example', 'evil.example:8004', '127.0.0.1.evil.example']) {
        for (const [method, path, body] of targets) {
          const r = await withHost(path, host, { method, body, token: c.token });
          expect(r.status, `${host} ${method} ${path}`).toBe(421);
          expect(r.body).not.toContain(host);
        }
      }
      expect((await c.call('GET', '/v1/personas/rebound')).status).toBe(404);
      expect(
        (await withHost('/v1/personas/ada', `localhost:${new URL(bed.store.url).port}`, { token: c.token })).status,
      ).toBe(200);
    });

    it('names its own listen address as the document\u2019s server, whatever Host a request sent before', async () => {
      await withHost('/openapi.json', 'evil.example');
      await withHost('/openapi.json', 'localhost:1');
      const doc = (await (await fetch(`${bed.store.url}/openapi.json`)).json()) as { servers: { url: string }[] };
      expect(doc.servers).toEqual([{ url: bed.store.url }]);
    });
  });

  describe('tokens', () => {
    tokenRejectionSuite({
      audience: 'persona',
      identity: () => bed.identity,
      call: (authorization) =>
        fetch(`${bed.store.url}/v1/personas`, { headers: authorization ? { authorization } : {} }),
    });

    it('refuses a token minted for another audience (repohost-api)', async () => {
      const token = await bed.identity.mint(bed.identity.localCredential, 'repohost-api');
      const res = await fetch(`${bed.store.url}/v1/personas/ada`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/persona/);
    });
  });

  describe('the card', () => {
    it('PATCH changes only the members sent, and null clears one', async () => {
      const r = await c.call('PATCH', '/v1/personas/ada', { pronouns: 'she/her', tone: null });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ display_name: 'Ada', pronouns: 'she/her', tone: null, verbosity: 'terse' });
    });

    it('refuses an unknown card member, naming it, and a second persona of the same profile', async () => {
      const r = await c.call('PATCH', '/v1/personas/ada', { mood: 'x' });
      expect(r.status).toBe(422);
      expect(r.text).toMatch(/mood/);
      expect((await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Again' })).status).toBe(409);
    });
  });

  describe('fields', () => {
    it('normalises keys to snake_case and reads them back by any spelling', async () => {
      const r = await c.call('PUT', '/v1/personas/ada/fields/favouriteColour', field('blue'));
      expect(r.body).toMatchObject({
        key: 'favourite_colour',
        revision: 1,
        value_type: 'string',
        asserted_by: 'persona',
        source: 'assistant',
        pinned: false,
      });
      expect((await c.call('GET', '/v1/personas/ada/fields/Favourite%20Colour')).body).toMatchObject({
        key: 'favourite_colour',
        value: 'blue',
      });
    });

    it('refuses keys that normalise to nothing, are too long, or start with the reserved "_"', async () => {
      expect((await c.call('PUT', `/v1/personas/ada/fields/${encodeURIComponent('--!!--')}`, field(1))).status).toBe(
        422,
      );
      const long = await c.call('PUT', `/v1/personas/ada/fields/${'k'.repeat(65)}`, field(1));
      expect(long.status).toBe(422);
      expect(long.text).toMatch(/64 characters/);
      expect((await c.call('PUT', '/v1/personas/ada/fields/_schema', field(1))).status).toBe(422);
    });

    it('names each value type; a list yields list', async () => {
      const types: [unknown, string][] = [
        [null, 'null'],
        [true, 'boolean'],
        [3, 'integer'],
        [2.5, 'number'],
        ['x', 'string'],
        [[1, 2], 'list'],
        [{ a: 1 }, 'object'],
      ];
      for (const [value, type] of types) {
        expect((await c.call('PUT', '/v1/personas/ada/fields/typed', field(value))).body).toMatchObject({
          value_type: type,
          value,
        });
      }
    });

    it('an identical retry of a PUT keeps the revision and adds no change-log entry', async () => {
      const first = await c.call('PUT', '/v1/personas/ada/fields/hometown', field('Lisbon'));
      const before = (await c.call<{ events: unknown[] }>('GET', '/v1/personas/ada/events?target=hometown')).body.events
        .length;
      const retry = await c.call('PUT', '/v1/personas/ada/fields/hometown', field('Lisbon'));
      expect(retry.body).toEqual(first.body);
      expect(
        (await c.call<{ events: unknown[] }>('GET', '/v1/personas/ada/events?target=hometown')).body.events.length,
      ).toBe(before);
      const changed = await c.call('PUT', '/v1/personas/ada/fields/hometown', field('Porto'));
      expect(changed.body).toMatchObject({ revision: 2, value: 'Porto' });
    });

    it('a PUT that changes only pinned or source keeps the index as it was: each word finds the field once, and old values are gone after a change', async () => {
      const recallMood = async (q: string) =>
        (await c.call<{ fields: { key: string }[] }>('GET', `/v1/personas/ada/recall?q=${q}`)).body.fields.map(
          (f) => f.key,
        );
      await c.call('PUT', '/v1/personas/ada/fields/mood', field('sunny', { description: 'weather mood' }));
      expect(
        (
          await c.call(
            'PUT',
            '/v1/personas/ada/fields/mood',
            field('sunny', { description: 'weather mood', pinned: true }),
          )
        ).body,
      ).toMatchObject({ revision: 2, pinned: true });
      expect(
        (
          await c.call(
            'PUT',
            '/v1/personas/ada/fields/mood',
            field('sunny', { description: 'weather mood', pinned: true, source: 'owner' }),
          )
        ).body,
      ).toMatchObject({ revision: 3, source: 'owner' });
      expect(await recallMood('sunny')).toEqual(['mood']);
      expect(
        (
          await c.call(
            'PUT',
            '/v1/personas/ada/fields/mood',
            field('rainy', { description: 'weather mood', source: 'owner' }),
          )
        ).body,
      ).toMatchObject({ revision: 4, pinned: false });
      expect(await recallMood('sunny')).toEqual([]);
      expect(await recallMood('rainy')).toEqual(['mood']);
      expect(await recallMood('weather')).toEqual(['mood']);
      expect((await c.call('DELETE', '/v1/personas/ada/fields/mood')).body).toEqual({ outcome: 'kept' });
      expect(await recallMood('rainy')).toEqual([]);
    });

    it('the schema route lists keys and descriptions without values and never collides with a field called "schema"', async () => {
      await c.call('PUT', '/v1/personas/ada/fields/schema', field('a field whose key is schema'));
      expect((await c.call('GET', '/v1/personas/ada/fields/schema')).body).toMatchObject({
        key: 'schema',
        value: 'a field whose key is schema',
      });
      const listing = await c.call<{ fields: Record<string, unknown>[] }>('GET', '/v1/personas/ada/fields/_schema');
      expect(listing.body.fields.map((f) => f.key)).toContain('schema');
      for (const f of listing.body.fields) expect(Object.keys(f).sort()).toEqual(['description', 'key']);
    });

    it('a forgotten (kept) field leaves every answer and a PUT of its key revives it', async () => {
      await c.call('PUT', '/v1/personas/ada/fields/shoe_size', field(38));
      expect((await c.call('DELETE', '/v1/personas/ada/fields/shoe_size')).body).toEqual({ outcome: 'kept' });
      expect((await c.call('GET', '/v1/personas/ada/fields/shoe_size')).status).toBe(404);
      expect((await c.call('DELETE', '/v1/personas/ada/fields/shoe_size')).status).toBe(404);
      const revived = await c.call('PUT', '/v1/personas/ada/fields/shoe_size', field(39));
      expect(revived.body).toMatchObject({ revision: 2, value: 39 });
      const events = await c.call<{ events: { action: string }[] }>('GET', '/v1/personas/ada/events?target=shoe_size');
      expect(events.body.events.map((e) => e.action)).toEqual(['field_set', 'field_forgotten', 'field_revived']);
    });

    it('the change log newest first: order=newest pages towards older entries, the same entries reversed', async () => {
      for (const v of [1, 2, 3, 4, 5]) await c.call('PUT', '/v1/personas/ada/fields/steps', field(v));
      type Page = { events: { id: number; action: string }[]; next_after: number | null };
      const oldest = (await c.call<Page>('GET', '/v1/personas/ada/events?target=steps')).body.events.map((e) => e.id);
      expect(oldest).toHaveLength(5);
      const newest: number[] = [];
      let after: number | null = null;
      do {
        const page: Page = (
          await c.call<Page>(
            'GET',
            `/v1/personas/ada/events?target=steps&order=newest&limit=2${after === null ? '' : `&after=${after}`}`,
          )
        ).body;
        newest.push(...page.events.map((e) => e.id));
        after = page.next_after;
      } while (after !== null);
      expect(newest).toEqual([...oldest].reverse());
      expect((await c.call('GET', '/v1/personas/ada/events?order=sideways')).status).toBe(422);
    });

    it('refuses a value over the size limit with 413 naming the limit', async () => {
      const r = await c.call('PUT', '/v1/personas/ada/fields/big', field('x'.repeat(300)));
      expect(r.status).toBe(413);
      expect(r.text).toMatch(/256 bytes/);
    });

    it('caps pinned fields and says the cap', async () => {
      await c.call('PUT', '/v1/personas/ada/fields/p1', field(1, { pinned: true }));
      await c.call('PUT', '/v1/personas/ada/fields/p2', field(2, { pinned: true }));
      const third = await c.call('PUT', '/v1/personas/ada/fields/p3', field(3, { pinned: true }));
      expect(third.status).toBe(409);
      expect(third.text).toMatch(/pin cap 2/);
      // Re-sending an already pinned field is not a new pin.
      expect((await c.call('PUT', '/v1/personas/ada/fields/p2', field(22, { pinned: true }))).status).toBe(200);
    });

    it('says how many are pinned and how many to unpin when the pin cap was lowered below the pins already there', async () => {
      const lowered = await startTestbed({ PERSONA_PIN_CAP_FIELDS: '3', PERSONA_PIN_CAP_NOTES: '3' });
      try {
        const o = lowered.owner;
        await o.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
        let id = '';
        for (let i = 0; i < 3; i++) {
          expect((await o.call('PUT', `/v1/personas/ada/fields/p${i}`, field(i, { pinned: true }))).status).toBe(200);
          id = (await o.call('POST', '/v1/personas/ada/notes', note(`pinned ${i}`, { pinned: true }))).body
            .id as string;
        }
        const loose = (await o.call('POST', '/v1/personas/ada/notes', note('not pinned'))).body.id as string;
        await lowered.restart({ PERSONA_PIN_CAP_FIELDS: '1', PERSONA_PIN_CAP_NOTES: '1' });
        const refusals = [
          await lowered.owner.call('PUT', '/v1/personas/ada/fields/p9', field(9, { pinned: true })),
          await lowered.owner.call('POST', '/v1/personas/ada/notes', note('one more', { pinned: true })),
          await lowered.owner.call('PATCH', `/v1/personas/ada/notes/${loose}`, { pinned: true }),
        ];
        for (const r of refusals) {
          expect(r.status, r.text).toBe(409);
          expect(r.body.detail).toMatch(/has 3 pinned (fields|notes), more than the pin cap 1.*unpin 3 first/);
        }
        // The pins already there stay pinned; a write that keeps one pinned is not a new pin.
        expect(
          (await lowered.owner.call('PATCH', `/v1/personas/ada/notes/${id}`, { content: 'still pinned' })).status,
        ).toBe(200);
      } finally {
        await lowered.close();
      }
    });
  });

  describe('notes', () => {
    it('honours Idempotency-Key: a retry returns the first note', async () => {
      const first = await c.call('POST', '/v1/personas/ada/notes', note('Ada prefers tea'), {
        'idempotency-key': 'abc',
      });
      expect(first.status).toBe(201);
      const retry = await c.call('POST', '/v1/personas/ada/notes', note('Ada prefers tea'), {
        'idempotency-key': 'abc',
      });
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual(first.body);
    });

    it('refuses an Idempotency-Key used before for another note, rather than answer with the first and drop this one', async () => {
      const first = await c.call('POST', '/v1/personas/ada/notes', note('Ada walked to the market'), {
        'idempotency-key': 'turn-7',
      });
      expect(first.status).toBe(201);
      for (const other of [
        note('Ada bought three lemons'),
        note('Ada walked to the market', { kind: 'lesson' }),
        note('Ada walked to the market', { pinned: true }),
      ]) {
        const reused = await c.call('POST', '/v1/personas/ada/notes', other, { 'idempotency-key': 'turn-7' });
        expect(reused.status, JSON.stringify(other)).toBe(422);
        expect(reused.body.detail).toMatch(/Idempotency-Key .*another note.*new Idempotency-Key/);
      }
      const notes: { content: string }[] = [];
      for (let after: string | null = '0'; after !== null;) {
        const page: Answer<{ notes: { content: string }[]; next_after: string | null }> = await c.call(
          'GET',
          `/v1/personas/ada/notes?after=${after}`,
        );
        notes.push(...page.body.notes);
        after = page.body.next_after;
      }
      expect(notes.filter((n) => n.content.startsWith('Ada walked to the market'))).toHaveLength(1);
      expect(notes.filter((n) => n.content === 'Ada bought three lemons')).toHaveLength(0);
      // A retry of the very same note is still answered with the first.
      const retry = await c.call('POST', '/v1/personas/ada/notes', note('Ada walked to the market'), {
        'idempotency-key': 'turn-7',
      });
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual(first.body);
      // Once the note is revised, what was first sent is no longer known: a late retry is answered with the note as it is.
      const id = first.body.id as string;
      expect((await c.call('PATCH', `/v1/personas/ada/notes/${id}`, { content: 'Ada ran to the market' })).status).toBe(
        200,
      );
      const late = await c.call('POST', '/v1/personas/ada/notes', note('Ada walked to the market'), {
        'idempotency-key': 'turn-7',
      });
      expect(late.status).toBe(200);
      expect(late.body).toMatchObject({ id, content: 'Ada ran to the market', revision: 2 });
    });

    it('revising changes only the parts sent and never moves the time of writing', async () => {
      const n = (await c.call('POST', '/v1/personas/ada/notes', note('a lesson about bread', { kind: 'lesson' }))).body;
      bed.clock.advance(5); // the revision is written later than the note, by the store's clock
      const revised = await c.call('PATCH', `/v1/personas/ada/notes/${n.id as string}`, {
        content: 'a lesson about sourdough bread',
      });
      expect(revised.body).toMatchObject({
        kind: 'lesson',
        content: 'a lesson about sourdough bread',
        revision: 2,
        written_at: n.written_at,
      });
      expect(revised.body.revised_at).not.toBe(n.written_at);
      expect((await c.call('PATCH', `/v1/personas/ada/notes/${n.id as string}`, {})).status).toBe(422);
    });

    it('a kept note cannot be revived: it answers 404 like a missing one', async () => {
      const n = (await c.call('POST', '/v1/personas/ada/notes', note('soon forgotten'))).body;
      expect((await c.call('DELETE', `/v1/personas/ada/notes/${n.id as string}`)).body).toEqual({ outcome: 'kept' });
      expect((await c.call('GET', `/v1/personas/ada/notes/${n.id as string}`)).status).toBe(404);
      expect((await c.call('PATCH', `/v1/personas/ada/notes/${n.id as string}`, { pinned: true })).status).toBe(404);
    });

    it('refuses a note over the length limit with 413 naming the limit', async () => {
      const r = await c.call('POST', '/v1/personas/ada/notes', note('y'.repeat(501)));
      expect(r.status).toBe(413);
      expect(r.text).toMatch(/500 characters/);
    });
  });

  describe('identity block, export and change log', () => {
    it('the identity block has the card, pinned fields and notes only, live counts and the pin caps', async () => {
      await c.call('POST', '/v1/personas', { profile: 'block', display_name: 'Block' });
      await c.call('PUT', '/v1/personas/block/fields/a', field(1, { pinned: true }));
      await c.call('PUT', '/v1/personas/block/fields/b', field(2));
      await c.call('POST', '/v1/personas/block/notes', note('pinned note', { pinned: true }));
      await c.call('POST', '/v1/personas/block/notes', note('plain note'));
      const r = await c.call<{ fields: { key: string }[]; notes: { content: string }[] }>('GET', '/v1/personas/block');
      expect(r.body).toMatchObject({
        persona: { profile: 'block' },
        field_count: 2,
        note_count: 2,
        pin_caps: { fields: 2, notes: 2 },
      });
      expect(r.body.fields.map((f) => f.key)).toEqual(['a']);
      expect(r.body.notes.map((n) => n.content)).toEqual(['pinned note']);
    });

    it('export pages fields and notes independently in a stable order', async () => {
      await c.call('POST', '/v1/personas', { profile: 'exp', display_name: 'Exp' });
      for (const k of ['k3', 'k1', 'k2']) await c.call('PUT', `/v1/personas/exp/fields/${k}`, field(k));
      for (const t of ['n1', 'n2', 'n3', 'n4']) await c.call('POST', '/v1/personas/exp/notes', note(t));
      const keys: string[] = [];
      const texts: string[] = [];
      let fieldsAfter = '';
      let notesAfter = '0';
      for (let page = 0; page < 5; page++) {
        const r = await c.call<{
          fields: { key: string; revision: number; asserted_by: string }[];
          notes: { content: string }[];
          fields_next_after: string | null;
          notes_next_after: string | null;
        }>(
          'GET',
          `/v1/personas/exp/export?fields_limit=2&notes_limit=3&fields_after=${fieldsAfter}&notes_after=${notesAfter}`,
        );
        keys.push(...r.body.fields.map((f) => f.key));
        texts.push(...r.body.notes.map((n) => n.content));
        for (const f of r.body.fields) expect(f).toMatchObject({ revision: 1, asserted_by: 'persona' });
        if (!r.body.fields_next_after && !r.body.notes_next_after) break;
        fieldsAfter = r.body.fields_next_after ?? 'zzzz';
        notesAfter = r.body.notes_next_after ?? '999999999';
      }
      expect(keys).toEqual(['k1', 'k2', 'k3']);
      expect(texts).toEqual(['n1', 'n2', 'n3', 'n4']);
    });

    it('the change log carries no values by default and the replaced value only when the person keeps them', async () => {
      const other = await startTestbed({}, bed.identity);
      try {
        const o = other.owner;
        await o.call('POST', '/v1/personas', { profile: 'plain', display_name: 'Plainname', tone: 'Plaintone' });
        await o.call('PUT', '/v1/personas/plain/fields/city', field('Secretville'));
        await o.call('PUT', '/v1/personas/plain/fields/city', field('Quietown'));
        const n = await o.call('POST', '/v1/personas/plain/notes', note('Hushnote first words'));
        await o.call('PATCH', `/v1/personas/plain/notes/${n.body.id as string}`, { content: 'Hushnote second words' });
        await o.call('PATCH', '/v1/personas/plain', { display_name: 'Othername', tone: 'Othertone' });
        const log = await o.call<{ events: Record<string, unknown>[] }>('GET', '/v1/personas/plain/events');
        expect(log.body.events).toHaveLength(6);
        expect(log.text).not.toMatch(/Secretville|Quietown|Hushnote|Plainname|Plaintone|Othername|Othertone/);
        for (const e of log.body.events) expect(e).not.toHaveProperty('replaced');
      } finally {
        await other.close();
      }
      // This deployment keeps replaced values: only the replaced one appears, never the new one.
      await c.call('PUT', '/v1/personas/ada/fields/city', field('Oldtown'));
      await c.call('PUT', '/v1/personas/ada/fields/city', field('Newtown', { description: 'where she lives now' }));
      const log = await c.call<{ events: { action: string; replaced?: unknown }[] }>(
        'GET',
        '/v1/personas/ada/events?target=city',
      );
      expect(log.body.events.map((e) => e.replaced)).toEqual([
        undefined,
        { value: 'Oldtown', description: 'a test field' },
      ]);
      expect(log.text).not.toMatch(/Newtown|where she lives now/);

      // A note's revised content: the content it replaced, never the new one.
      const n = await c.call('POST', '/v1/personas/ada/notes', note('Oldnote: she walks to work'));
      await c.call('PATCH', `/v1/personas/ada/notes/${n.body.id as string}`, {
        content: 'Newnote: she cycles to work',
      });
      await c.call('PATCH', `/v1/personas/ada/notes/${n.body.id as string}`, { pinned: true });
      const noteLog = await c.call<{ events: { action: string; changes: string[]; replaced?: unknown }[] }>(
        'GET',
        `/v1/personas/ada/events?target=${n.body.id as string}`,
      );
      expect(noteLog.body.events.map((e) => [e.action, e.changes, e.replaced])).toEqual([
        ['note_added', ['content', 'kind', 'source', 'pinned'], undefined],
        ['note_revised', ['content'], { content: 'Oldnote: she walks to work' }],
        ['note_pinned', ['pinned'], undefined],
      ]);
      expect(noteLog.text).not.toMatch(/Newnote/);

      // Card members changed by PATCH: the members they replaced (null where there was none), never the new ones.
      await c.call('POST', '/v1/personas', {
        profile: 'cardy',
        display_name: 'Oldname',
        tone: 'Oldtone',
        verbosity: 'terse',
      });
      await c.call('PATCH', '/v1/personas/cardy', {
        display_name: 'Newname',
        tone: 'Newtone',
        pronouns: 'they/them',
        verbosity: 'terse',
      });
      const cardLog = await c.call<{ events: { action: string; changes: string[]; replaced?: unknown }[] }>(
        'GET',
        '/v1/personas/cardy/events',
      );
      expect(cardLog.body.events.map((e) => [e.action, e.changes, e.replaced])).toEqual([
        ['persona_created', ['display_name', 'tone', 'verbosity'], undefined],
        [
          'persona_updated',
          ['display_name', 'pronouns', 'tone'],
          { display_name: 'Oldname', pronouns: null, tone: 'Oldtone' },
        ],
      ]);
      expect(cardLog.text).not.toMatch(/Newname|Newtone|they\/them/);
    });

    it('filters the change log by time: since keeps entries at or after it, until those before it', async () => {
      await c.call('POST', '/v1/personas', { profile: 'timeline', display_name: 'T' });
      for (let i = 0; i < 6; i++) {
        bed.clock.advance(3); // entries a few milliseconds apart by the store's clock, so that their times differ
        await c.call('PUT', `/v1/personas/timeline/fields/step_${i}`, field(i));
      }
      const all = (await c.call<{ events: { id: number; at: string }[] }>('GET', '/v1/personas/timeline/events')).body
        .events;
      expect(all).toHaveLength(7);
      expect(new Set(all.map((e) => e.at)).size).toBe(7);
      const ids = (r: { body: { events: { id: number }[] } }) => r.body.events.map((e) => e.id);
      const at = (i: number) => encodeURIComponent(all[i]!.at);
      const since = await c.call<{ events: { id: number }[] }>('GET', `/v1/personas/timeline/events?since=${at(3)}`);
      expect(ids(since)).toEqual(all.slice(3).map((e) => e.id));
      const until = await c.call<{ events: { id: number }[] }>('GET', `/v1/personas/timeline/events?until=${at(3)}`);
      expect(ids(until)).toEqual(all.slice(0, 3).map((e) => e.id));
      const between = await c.call<{ events: { id: number }[] }>(
        'GET',
        `/v1/personas/timeline/events?since=${at(1)}&until=${at(5)}`,
      );
      expect(ids(between)).toEqual(all.slice(1, 5).map((e) => e.id));
      // Any ISO 8601 form of the time: one millisecond after entry 3 leaves it out.
      const later = new Date(Date.parse(all[3]!.at) + 1).toISOString().replace('Z', '+00:00');
      expect(ids(await c.call('GET', `/v1/personas/timeline/events?since=${encodeURIComponent(later)}`))).toEqual(
        all.slice(4).map((e) => e.id),
      );
      expect((await c.call('GET', '/v1/personas/timeline/events?since=yesterday')).status).toBe(422);
    });

    it('filters the change log by action and target kind, and pages it', async () => {
      const all: number[] = [];
      for (let after = 0; ;) {
        const page = await c.call<{ events: { id: number }[]; next_after: number | null }>(
          'GET',
          `/v1/personas/ada/events?limit=100&after=${after}`,
        );
        all.push(...page.body.events.map((e) => e.id));
        if (page.body.next_after === null) break;
        after = page.body.next_after;
      }
      const byAction = await c.call<{ events: { action: string }[] }>(
        'GET',
        '/v1/personas/ada/events?action=field_revived,note_forgotten',
      );
      expect(new Set(byAction.body.events.map((e) => e.action))).toEqual(new Set(['field_revived', 'note_forgotten']));
      const notes = await c.call<{ events: { target_kind: string }[] }>(
        'GET',
        '/v1/personas/ada/events?target_kind=note',
      );
      expect(notes.body.events.length).toBeGreaterThan(0);
      expect(notes.body.events.every((e) => e.target_kind === 'note')).toBe(true);
      const paged: number[] = [];
      let after = 0;
      for (;;) {
        const page = await c.call<{ events: { id: number }[]; next_after: number | null }>(
          'GET',
          `/v1/personas/ada/events?limit=3&after=${after}`,
        );
        paged.push(...page.body.events.map((e) => e.id));
        if (page.body.next_after === null) break;
        after = page.body.next_after;
      }
      expect(paged).toEqual(all);
      expect((await c.call('GET', '/v1/personas/ada/events?action=bogus')).status).toBe(422);
    });

    it('refuses a limit over the page size with 422 naming the limit, on every list', async () => {
      for (const [path, member] of [
        ['/v1/personas?limit=101', 'limit'],
        ['/v1/personas/ada/fields?limit=101', 'limit'],
        ['/v1/personas/ada/fields/_schema?limit=101', 'limit'],
        ['/v1/personas/ada/notes?limit=101', 'limit'],
        ['/v1/personas/ada/events?limit=101', 'limit'],
        ['/v1/personas/ada/export?fields_limit=101', 'fields_limit'],
        ['/v1/personas/ada/export?notes_limit=500', 'notes_limit'],
      ] as const) {
        const r = await c.call('GET', path);
        expect(r.status, path).toBe(422);
        expect(r.body.detail, path).toMatch(
          new RegExp(
            `^query member ${member} is \\d+, over the page size 100 \\(this deployment\u2019s PERSONA_PAGE_SIZE\\)`,
          ),
        );
        expect(r.body.page_size, path).toBe(100);
        expect((await c.call('GET', path.replace(/=\d+$/, '=100'))).status, path).toBe(200);
      }
    });
  });

  describe('recall', () => {
    beforeAll(async () => {
      await c.call('POST', '/v1/personas', { profile: 'runner', display_name: 'Runner' });
      await c.call('POST', '/v1/personas/runner/notes', note('She runs along the river every morning'));
      await c.call('POST', '/v1/personas/runner/notes', note('Cats AND dogs: NEAR the "door" * ^ col:on'));
      await c.call(
        'PUT',
        '/v1/personas/runner/fields/training_plan',
        field({ weekday: 'running intervals' }, { description: 'how she trains' }),
      );
      await c.call('POST', '/v1/personas', { profile: 'walker', display_name: 'Walker' });
      await c.call('POST', '/v1/personas/walker/notes', note('He runs a marathon once a year'));
    });

    it('stems: "running" finds "runs", and fields and notes come in two lists', async () => {
      const r = await c.call<{
        fields: { key: string; profile: string; source: string; asserted_by: string }[];
        notes: { content: string; profile: string }[];
      }>('GET', '/v1/personas/runner/recall?q=running');
      expect(r.body.notes.map((n) => n.content)).toEqual(['She runs along the river every morning']);
      expect(r.body.fields.map((f) => f.key)).toEqual(['training_plan']);
      expect(r.body.fields[0]).toMatchObject({ profile: 'runner', source: 'assistant', asserted_by: 'persona' });
    });

    it('treats operators as words: each query below would find something else if its operator were live', async () => {
      await c.call('POST', '/v1/personas', { profile: 'ops', display_name: 'Ops' });
      const ids: Record<string, string> = {};
      const texts: Record<string, string> = {
        sleepy: 'cats sleep all day long',
        pair: 'cats and dogs are not friends',
        chase: 'cats chase dogs round the yard',
        near: 'the dogs doze near cats by the stove',
        column: 'content cats purr quietly',
        drink: 'choose tea or coffee',
        cake: 'biscuits go with everything',
        prefix: 'xylophones ring in the hall',
        phrase: 'cats dogs parrots',
      };
      for (const [name, text] of Object.entries(texts))
        ids[(await c.call('POST', '/v1/personas/ops/notes', note(text))).body.id as string] = name;
      // [q, what plain words find, what the live operator would have found]
      const cases: [string, string[], string[]][] = [
        ['cats NOT dogs', ['pair'], ['column', 'sleepy']],
        ['tea OR biscuits', [], ['cake', 'drink']],
        ['NEAR(cats dogs)', ['near'], ['chase', 'near', 'pair', 'phrase']],
        ['content:cats', ['column'], ['chase', 'column', 'near', 'pair', 'phrase', 'sleepy']],
        ['xylo*', [], ['prefix']],
        ['^dogs', ['chase', 'near', 'pair', 'phrase'], []],
        ['"cats dogs"', ['chase', 'near', 'pair', 'phrase'], ['phrase']],
        ['cats AND dogs', ['pair'], ['chase', 'near', 'pair', 'phrase']],
        ['cats + dogs', ['chase', 'near', 'pair', 'phrase'], ['phrase']],
        ['(cats OR dogs)', [], ['chase', 'column', 'near', 'pair', 'phrase', 'sleepy']],
      ];
      for (const [q, plain, live] of cases) {
        expect(plain, `the case ${q} must tell the two readings apart`).not.toEqual(live);
        const r = await c.call<{ notes: { id: string }[] }>(
          'GET',
          `/v1/personas/ops/recall?q=${encodeURIComponent(q)}&limit=50`,
        );
        expect(r.status, q).toBe(200);
        expect(r.body.notes.map((n) => ids[n.id]).sort(), q).toEqual(plain);
        const all = await c.call<{ notes: { id: string }[] }>('GET', `/v1/recall?q=${encodeURIComponent(q)}&limit=50`);
        expect(
          all.body.notes
            .map((n) => ids[n.id])
            .filter(Boolean)
            .sort(),
          `/v1/recall ${q}`,
        ).toEqual(plain);
      }
    });

    it('recalls across all of the caller\u2019s personas, naming each hit\u2019s profile, and only live rows', async () => {
      const r = await c.call<{ notes: { profile: string }[] }>('GET', '/v1/recall?q=run');
      expect(r.body.notes.map((n) => n.profile).sort()).toEqual(['runner', 'walker']);
      const stranger = await bed.account('recall-stranger');
      expect((await stranger.call<{ notes: unknown[] }>('GET', '/v1/recall?q=run')).body.notes).toEqual([]);
      const walkerNote = (await c.call<{ notes: { id: string }[] }>('GET', '/v1/personas/walker/notes')).body.notes[0]!;
      await c.call('DELETE', `/v1/personas/walker/notes/${walkerNote.id}`);
      expect(
        (await c.call<{ notes: { profile: string }[] }>('GET', '/v1/recall?q=run')).body.notes.map((n) => n.profile),
      ).toEqual(['runner']);
    });

    it('answers random q strings without a server error, control characters and lone surrogates included, on both recall routes', async () => {
      // Any code point, control characters (NUL among them), lone surrogates, and FTS5 syntax.
      const unit = fc.oneof(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
        fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }),
        fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)),
        fc.constantFrom(
          '"',
          '*',
          ':',
          '(',
          ')',
          '^',
          '+',
          '-',
          '{',
          '}',
          ' AND ',
          ' OR ',
          ' NOT ',
          'NEAR(',
          ' ',
          'run',
          'cats',
        ),
      );
      const examples: [string][] = [
        ['a\u0000b'],
        ['\u0000'],
        ['cats\u0000'],
        ['\ud800runs'],
        ['runs\udfff\u0001'],
        ['NEAR(\u0000)'],
      ];
      await fc.assert(
        fc.asyncProperty(fc.string({ unit, minLength: 1, maxLength: 40 }), async (q) => {
          for (const path of ['/v1/recall', '/v1/personas/runner/recall']) {
            const r = await c.call('GET', `${path}?q=${percentEncodeWtf8(q)}`);
            expect([200, 422], `${path} ${JSON.stringify(q)}: ${r.status}`).toContain(r.status);
          }
        }),
        propertyOptions({ numRuns: 300, examples }),
      );
    });

    it('takes control characters as separators: a NUL between two words finds what the two words find', async () => {
      const r = await c.call<{ notes: { content: string }[] }>('GET', '/v1/personas/runner/recall?q=river%00morning');
      expect(r.status).toBe(200);
      expect(r.body.notes.map((n) => n.content)).toEqual(['She runs along the river every morning']);
      expect((await c.call('GET', '/v1/recall?q=%00%01%7F')).status).toBe(422);
    });
  });

  /** Percent-encodes every UTF-8 byte of q, a lone surrogate as its three bytes (WTF-8), as a client sending raw bytes would. */
  function percentEncodeWtf8(q: string): string {
    let out = '';
    for (const ch of q) {
      const cp = ch.codePointAt(0)!;
      const bytes =
        cp < 0x80
          ? [cp]
          : cp < 0x800
            ? [0xc0 | (cp >> 6), 0x80 | (cp & 63)]
            : cp < 0x10000
              ? [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)]
              : [0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 63), 0x80 | ((cp >> 6) & 63), 0x80 | (cp & 63)];
      out += bytes.map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
    }
    return out;
  }

  describe('remembered tokens', () => {
    it('a token is verified once while it is valid, and verified again once its exp has passed', async () => {
      const { rememberVerifiedTokens } = await import('../kit/verified-tokens.ts');
      const { createTokenVerifier } = await import('../kit/auth.ts');
      const real = createTokenVerifier({
        identityUrl: bed.identity.url,
        audience: 'persona',
        keys: { file: bed.identity.keysFile },
      });
      let verifications = 0;
      const counted = {
        ...real,
        verify: (h: string | undefined) => (verifications++, real.verify(h)),
        keySetLoads: 0,
      };
      let clock = Date.now();
      const verifier = rememberVerifiedTokens(counted, { maxBytes: 1 << 20, now: () => clock });
      const header = `Bearer ${await bed.identity.mint(bed.identity.localCredential, 'persona')}`;
      await verifier.verify(header);
      await verifier.verify(header);
      expect(verifications).toBe(1);
      clock += 3_600_000; // past exp (tokens live 600 s)
      await verifier.verify(header);
      expect(verifications).toBe(2);
      await expect(verifier.verify(`${header}x`)).rejects.toMatchObject({ status: 401 });
    });
  });
});
