import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../kit/logger.ts';
import { credentialCorpus } from './test-support/credential-corpus.ts';
import { ordinaryCorpus } from './test-support/ordinary-corpus.ts';
import { field, note, startTestbed, type Client, type Testbed } from './test-support/harness.ts';

let bed: Testbed;
let c: Client;
let noteId: string;
let logged = '';

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logged += chunk.toString();
      done();
    },
  });
  bed = await startTestbed({ PERSONA_MAX_VALUE_BYTES: '65536', PERSONA_MAX_NOTE_CHARS: '65536' }, undefined, createLogger('persona-store', 'info', sink));
  c = bed.owner;
  await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
  noteId = (await c.call('POST', '/v1/personas/ada/notes', note('a note to revise'))).body.id as string;
});
afterAll(async () => {
  await bed?.close();
});

/** Every write path that takes a string, as (name, request) pairs putting `s` in that string. */
const writePaths: [string, (s: string) => [string, string, unknown]][] = [
  ['create_persona speaking_style', (s) => ['POST', '/v1/personas', { profile: 'fresh', display_name: 'Fresh', speaking_style: s }]],
  ['update_persona speaking_style', (s) => ['PATCH', '/v1/personas/ada', { speaking_style: s }]],
  ['put_field key', (s) => ['PUT', `/v1/personas/ada/fields/${encodeURIComponent(s)}`, field(1)]],
  ['put_field description', (s) => ['PUT', '/v1/personas/ada/fields/notes_on_access', field(1, { description: s })]],
  ['put_field value, nested', (s) => ['PUT', '/v1/personas/ada/fields/servers', field([{ name: 'db', settings: { url: s } }])]],
  ['put_field value, member name', (s) => ['PUT', '/v1/personas/ada/fields/lookup', field({ [s]: true })]],
  ['add_note content', (s) => ['POST', '/v1/personas/ada/notes', note(`Remember this for later: ${s}`)]],
  ['revise_note content', (s) => ['PATCH', `/v1/personas/ada/notes/${noteId}`, { content: s }]],
];

describe('credential refusal', () => {
  const corpus = credentialCorpus();

  it('the corpus has at least 40 strings from at least 15 providers', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(40);
    expect(new Set(corpus.map((e) => e.provider)).size).toBeGreaterThanOrEqual(15);
  });

  it('refuses every credential through every write path with 422 naming the identity service, never echoing it', async () => {
    const misses: string[] = [];
    for (const { provider, secret } of corpus) {
      for (const [path, request] of writePaths) {
        const [method, url, body] = request(secret);
        const r = await c.call(method, url, body);
        if (r.status !== 422 || r.body?.type !== 'urn:persona-store:credential-refused') {
          misses.push(`${provider} via ${path}: ${r.status}`);
          continue;
        }
        expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
        expect(r.body.detail as string).toMatch(/identity service/);
        expect(r.text).not.toContain(secret);
        expect(r.text).not.toContain(secret.slice(0, 24));
      }
    }
    expect(misses).toEqual([]);
    // Nothing was stored and nothing was logged.
    const exported = await c.call('GET', '/v1/personas/ada/export');
    for (const { secret } of corpus) {
      expect(exported.text).not.toContain(secret);
      expect(logged).not.toContain(secret.slice(0, 24));
    }
    expect(logged).toMatch(/Credential Refused/);
  });

  it('accepts at least 200 ordinary sentences, code snippets and config lines', async () => {
    const ordinary = ordinaryCorpus();
    expect(ordinary.length).toBeGreaterThanOrEqual(200);
    const refused: string[] = [];
    for (const [i, text] of ordinary.entries()) {
      const asNote = await c.call('POST', '/v1/personas/ada/notes', note(text));
      const asValue = await c.call('PUT', `/v1/personas/ada/fields/ordinary_${i}`, field({ text }, { description: text.slice(0, 1000) }));
      if (asNote.status !== 201 || asValue.status !== 200) refused.push(`${asNote.status}/${asValue.status}: ${text}`);
    }
    expect(refused).toEqual([]);
  });
});

describe('the detector', () => {
  it('uses secretlint for the shapes its own regexes do not list', async () => {
    const { fastShape, findCredential } = await import('./credentials.ts');
    const onlySecretlint = credentialCorpus().filter((e) => ['Figma', 'Grafana', 'HashiCorp Vault'].includes(e.provider));
    expect(onlySecretlint).toHaveLength(3);
    for (const { provider, secret } of onlySecretlint) {
      expect(fastShape(secret), provider).toBeUndefined();
      expect(await findCredential([{ where: 'body.content', text: `my token is ${secret}` }]), provider).toEqual({ kind: 'a credential', where: 'body.content' });
    }
  });
});

describe('the detector, over many random draws of the corpus', () => {
  it('finds every credential shape in 100 fresh draws of the corpus', async () => {
    const { findCredential } = await import('./credentials.ts');
    const misses: string[] = [];
    for (let draw = 0; draw < 100; draw++) {
      for (const { provider, secret } of credentialCorpus()) {
        if (!(await findCredential([{ where: 'body.content', text: secret }]))) misses.push(`${provider}: ${secret.slice(0, 6)}...`);
      }
    }
    expect(misses).toEqual([]);
  });
});
