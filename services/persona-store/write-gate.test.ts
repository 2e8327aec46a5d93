import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../kit/problem.ts';
import type { WrittenString } from './credential-screen.ts';
import { searchableText } from './recall.ts';
import { Client, field, forEachEngine, note, startTestbed, type Answer, type Testbed } from './test-support/harness.ts';
import { MAX_DEPTH, readBody } from './write-gate.ts';

let bed: Testbed;
let c: Client;
let noteId: string;

/** JSON text of arrays nested `levels` deep around `inner`, written out rather than stringified (the test process would overflow first). */
const deepArrays = (levels: number, inner = '1') => '['.repeat(levels) + inner + ']'.repeat(levels);
const deepObjects = (levels: number, inner = '1') => '{"a":'.repeat(levels) + inner + '}'.repeat(levels);

function expectTooDeep(r: Answer, member: string): void {
  expect(r.status, r.text.slice(0, 200)).toBe(422);
  expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
  expect(r.body).toMatchObject({ member, max_depth: MAX_DEPTH });
  expect(r.body.detail as string).toMatch(
    new RegExp(`${member.replace(/[.[\]]/g, '\\$&')} nests arrays and objects more than ${MAX_DEPTH} levels deep`),
  );
  expect(r.text).not.toMatch(/stack|RangeError|at [a-zA-Z]+ \(/);
}

// Every request on both engines (what reaches the engine is stored there); the walks called directly need none.
forEachEngine(() => {
  beforeAll(async () => {
    bed = await startTestbed();
    c = bed.owner;
    await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
    noteId = (await c.call('POST', '/v1/personas/ada/notes', note('a note to revise'))).body.id as string;
  });
  afterAll(async () => {
    await bed?.close();
  });

  describe('bodies nested deep', () => {
    it('a field value nested 2,000 and 100,000 levels deep, as arrays or objects, is 422 naming body.value and the limit, and nothing is stored', async () => {
      for (const value of [deepArrays(2_000), deepArrays(100_000), deepObjects(2_000), deepObjects(30_000)]) {
        const r = await c.send(
          'PUT',
          '/v1/personas/ada/fields/deep',
          `{"description":"deep","source":"owner","value":${value}}`,
        );
        expectTooDeep(r, 'body.value');
      }
      expect((await c.call('GET', '/v1/personas/ada/fields/deep')).status).toBe(404);
      const log = await c.call<{ events: unknown[] }>('GET', '/v1/personas/ada/events?target=deep');
      expect(log.body.events).toEqual([]);
    });

    it('every write route refuses a deep body the same way, in whatever member it is, known to the route or not', async () => {
      const deep = deepArrays(2_000);
      const cases: [string, string, string, string][] = [
        ['POST', '/v1/personas', `{"profile":"deep","display_name":${deep}}`, 'body.display_name'],
        ['PATCH', '/v1/personas/ada', `{"tone":${deep}}`, 'body.tone'],
        [
          'PUT',
          '/v1/personas/ada/fields/deep',
          `{"description":${deep},"source":"owner","value":1}`,
          'body.description',
        ],
        [
          'POST',
          '/v1/personas/ada/notes',
          `{"content":"x","kind":"episode","source":"owner","extra":${deep}}`,
          'body.extra',
        ],
        ['PATCH', `/v1/personas/ada/notes/${noteId}`, `{"content":${deep}}`, 'body.content'],
        ['PUT', '/v1/personas/ada/fields/deep', deep, 'body[0]'],
      ];
      for (const [method, path, body, member] of cases) expectTooDeep(await c.send(method, path, body), member);
      expect((await c.call('GET', '/v1/personas/deep')).status).toBe(404);
      expect((await c.call('GET', `/v1/personas/ada/notes/${noteId}`)).body).toMatchObject({
        content: 'a note to revise',
        revision: 1,
      });
    });

    it(`a value exactly ${MAX_DEPTH} levels deep is kept, read back, exported and found by recall; one level more is refused`, async () => {
      const kept = await c.send(
        'PUT',
        '/v1/personas/ada/fields/nested',
        `{"description":"nested","source":"owner","value":${deepArrays(MAX_DEPTH, '"bathyscaphe"')}}`,
      );
      expect(kept.status, kept.text.slice(0, 200)).toBe(200);
      let value = (await c.call<{ value: unknown }>('GET', '/v1/personas/ada/fields/nested')).body.value;
      for (let level = 0; level < MAX_DEPTH; level++) {
        expect(Array.isArray(value)).toBe(true);
        value = (value as unknown[])[0];
      }
      expect(value).toBe('bathyscaphe');
      expect(
        (await c.call<{ fields: { key: string }[] }>('GET', '/v1/personas/ada/recall?q=bathyscaphe')).body.fields.map(
          (f) => f.key,
        ),
      ).toEqual(['nested']);
      expect((await c.call('GET', '/v1/personas/ada/export')).text).toContain('bathyscaphe');
      expectTooDeep(
        await c.send(
          'PUT',
          '/v1/personas/ada/fields/nested',
          `{"description":"nested","source":"owner","value":${deepArrays(MAX_DEPTH + 1)}}`,
        ),
        'body.value',
      );
    });

    it('a deep body whose token does not verify is refused by the kit before the body is read (401), never walked by the gate', async () => {
      const stranger = new Client(c.url, 'not-a-token');
      const r = await stranger.send(
        'PUT',
        '/v1/personas/ada/fields/deep',
        `{"description":"deep","source":"owner","value":${deepArrays(100_000)}}`,
      );
      expect(r.status).toBe(401);
      expect(r.body.detail as string).toMatch(/token/);
    });
  });

  describe('text and numbers no route could store as sent', () => {
    it('a lone surrogate anywhere in a body is 422 naming where, and nothing is stored', async () => {
      const cases: [string, string, string, string][] = [
        [
          'POST',
          '/v1/personas/ada/notes',
          '{"content":"a \\ud800 b","kind":"episode","source":"owner"}',
          'body.content',
        ],
        [
          'PUT',
          '/v1/personas/ada/fields/lone',
          '{"description":"d","source":"owner","value":{"\\udc00":1}}',
          'body.value (a member name)',
        ],
        [
          'PUT',
          '/v1/personas/ada/fields/lone',
          '{"description":"d","source":"owner","value":["ok","x\\udbff"]}',
          'body.value[1]',
        ],
        ['POST', '/v1/personas', '{"profile":"lone","display_name":"x\\ud800"}', 'body.display_name'],
      ];
      for (const [method, path, body, member] of cases) {
        const r = await c.send(method, path, body);
        expect(r.status, path).toBe(422);
        expect(r.body).toMatchObject({ member });
        expect(r.body.detail as string).toMatch(/lone surrogate/);
      }
      expect((await c.call('GET', '/v1/personas/ada/fields/lone')).status).toBe(404);
      expect((await c.call('GET', '/v1/personas/lone')).status).toBe(404);
    });

    it('a number JSON cannot keep digit for digit is 422 saying to send it as a string; 2^53 - 1 is kept exactly', async () => {
      for (const [number, why] of [
        ['1e400', /too large to keep/],
        ['9007199254740993', /2\^53/],
        ['-123456789012345678901234567890', /2\^53/],
      ] as const) {
        const r = await c.send(
          'PUT',
          '/v1/personas/ada/fields/big',
          `{"description":"d","source":"owner","value":{"id":${number}}}`,
        );
        expect(r.status, number).toBe(422);
        expect(r.body).toMatchObject({ member: 'body.value.id' });
        expect(r.body.detail as string).toMatch(why);
        expect(r.body.detail as string).toMatch(/send it as a string/);
      }
      const kept = await c.send(
        'PUT',
        '/v1/personas/ada/fields/big',
        '{"description":"d","source":"owner","value":{"id":9007199254740991,"small":-9007199254740991}}',
      );
      expect(kept.body).toMatchObject({
        value: { id: 9007199254740991, small: -9007199254740991 },
        value_type: 'object',
      });
    });

    it('names of Object.prototype are ordinary names: a profile, a key and members of a value are kept as written', async () => {
      expect((await c.call('POST', '/v1/personas', { profile: 'constructor', display_name: 'C' })).status).toBe(201);
      expect((await c.call('GET', '/v1/personas/constructor')).body).toMatchObject({
        persona: { profile: 'constructor' },
      });
      expect((await c.call('GET', '/v1/personas/toString')).status).toBe(404);
      expect((await c.call('PUT', '/v1/personas/ada/fields/constructor', field(1))).status).toBe(200);
      expect((await c.call('GET', '/v1/personas/ada/fields/hasOwnProperty')).status).toBe(404);
      const written = await c.send(
        'PUT',
        '/v1/personas/ada/fields/proto',
        '{"description":"d","source":"owner","value":{"__proto__":{"polluted":true},"constructor":{"prototype":1}}}',
      );
      expect(written.status).toBe(200);
      expect((await c.call('GET', '/v1/personas/ada/fields/proto')).text).toContain(
        '"value":{"__proto__":{"polluted":true},"constructor":{"prototype":1}}',
      );
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      // As a member of the body itself it is an unknown member, like any other.
      expect((await c.send('PATCH', '/v1/personas/ada', '{"__proto__":{"tone":"cold"}}')).status).toBe(422);
    });

    it('a NUL character (U+0000): SQLite keeps it; PostgreSQL cannot, so there it is 422 saying to remove it, and nothing is stored', async () => {
      const content = 'before\u0000after';
      const r = await c.call('POST', '/v1/personas/ada/notes', note(content));
      const profile = await c.call('POST', '/v1/personas', { profile: 'nul', display_name: 'N\u0000' });
      const read = await c.call('GET', '/v1/personas/ada/notes/a%00b');
      if (bed.engine === 'sqlite') {
        expect(r.status).toBe(201);
        expect((await c.call('GET', `/v1/personas/ada/notes/${r.body.id as string}`)).body).toMatchObject({ content });
        expect(profile.status).toBe(201);
      } else {
        for (const answer of [r, profile, read]) {
          expect(answer.status, answer.text).toBe(422);
          expect(answer.body.detail as string).toMatch(
            /U\+0000 \(NUL\), which the PostgreSQL database cannot store or compare; remove it/,
          );
        }
        expect((await c.call('GET', '/v1/personas/nul')).status).toBe(404);
        expect(
          (await c.call<{ events: { action: string }[] }>('GET', '/v1/personas/ada/events?action=note_added')).body
            .events,
        ).toHaveLength(1);
      }
      // A NUL inside a field value is kept by both: the value is stored as JSON text, where it is written \u0000.
      expect((await c.call('PUT', '/v1/personas/ada/fields/with_nul', field({ text: content }))).status).toBe(200);
      expect((await c.call('GET', '/v1/personas/ada/fields/with_nul')).body).toMatchObject({
        value: { text: content },
      });
    });
  });
});

describe('the walks over a body, called directly', () => {
  /** A value nested `levels` deep, built in a loop (JSON.parse is not needed to make one, and nothing here recurses). */
  const built = (levels: number, leaf: unknown) => {
    let v: unknown = leaf;
    for (let i = 0; i < levels; i++) v = i % 2 === 0 ? [v] : { inner: v };
    return v;
  };

  it('readBody refuses a body nested 1,000,000 levels deep with the problem, never a stack overflow', () => {
    const strings: WrittenString[] = [];
    let thrown: unknown;
    try {
      readBody({ value: built(1_000_000, 'x') }, strings);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(Problem);
    expect(thrown).toMatchObject({ status: 422, extra: { members: { member: 'body.value', max_depth: MAX_DEPTH } } });
  });

  it('readBody collects every string and member name of a body at the limit, in document order, with where it sits', () => {
    const strings: WrittenString[] = [];
    expect(readBody({ description: 'd', value: built(MAX_DEPTH - 1, 'leaf'), tail: ['t'] }, strings)).toBeUndefined();
    const where = (s: WrittenString) => (typeof s.where === 'string' ? s.where : s.where());
    expect(strings.map((s) => s.text).filter((t) => t !== 'inner')).toEqual([
      'description',
      'd',
      'value',
      'leaf',
      'tail',
      't',
    ]);
    expect(where(strings.find((s) => s.text === 'leaf')!)).toMatch(/^body\.value(?:\[0\]|\.inner)+$/);
    expect(where(strings.find((s) => s.text === 't')!)).toBe('body.tail[0]');
  });

  it('searchableText walks a value nested 1,000,000 levels deep without recursion, and keeps document order', () => {
    expect(searchableText(built(1_000_000, 'abyss'))).toMatch(/ abyss$/);
    expect(searchableText({ a: ['one', { b: 2, c: [true, null] }], d: 'four' })).toBe('a one b 2 c true d four');
  });
});
