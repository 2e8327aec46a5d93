import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportSeedOnFailure, seededRandom } from '../../test/support/seed.ts';
import { createLogger } from '../kit/logger.ts';
import { credentialCorpus, SECRETLINT_ONLY, VARIANTS } from './test-support/credential-corpus.ts';
import { ordinaryCorpus } from './test-support/ordinary-corpus.ts';
import { CARD_MEMBERS } from './personas.ts';
import { Client, field, forEachEngine, note, startTestbed, type Answer, type Testbed } from './test-support/harness.ts';

reportSeedOnFailure();

let bed: Testbed;
let c: Client;
let noteId: string;
let logged = '';

type Request = [method: string, path: string, body: unknown, headers?: Record<string, string>];

/** Every write path that takes a string: (name, the member the refusal must name, request putting `s` in that string). */
const writePaths: [string, string, (s: string) => Request][] = [
  ['create_persona profile', 'body.profile', (s) => ['POST', '/v1/personas', { profile: s, display_name: 'Fresh' }]],
  ...(['display_name', 'pronouns', 'tone', 'language', 'verbosity', 'speaking_style'] as const).flatMap(
    (m): [string, string, (s: string) => Request][] => [
      [
        `create_persona ${m}`,
        `body.${m}`,
        (s) => ['POST', '/v1/personas', { profile: 'fresh', display_name: 'Fresh', [m]: s }],
      ],
      [`update_persona ${m}`, `body.${m}`, (s) => ['PATCH', '/v1/personas/ada', { [m]: s }]],
    ],
  ),
  ['put_field key', 'path key', (s) => ['PUT', `/v1/personas/ada/fields/${encodeURIComponent(s)}`, field(1)]],
  [
    'put_field description',
    'body.description',
    (s) => ['PUT', '/v1/personas/ada/fields/notes_on_access', field(1, { description: s })],
  ],
  [
    'put_field value, nested',
    'body.value[0].settings.url',
    (s) => ['PUT', '/v1/personas/ada/fields/servers', field([{ name: 'db', settings: { url: s } }])],
  ],
  [
    'put_field value, member name',
    'body.value (a member name)',
    (s) => ['PUT', '/v1/personas/ada/fields/lookup', field({ [s]: true })],
  ],
  [
    'add_note content',
    'body.content',
    (s) => ['POST', '/v1/personas/ada/notes', note(`Remember this for later: ${s}`)],
  ],
  // A header holds one line: a multi-line secret (a PEM key) goes in with its line breaks as spaces.
  [
    'add_note Idempotency-Key',
    'header Idempotency-Key',
    (s) => ['POST', '/v1/personas/ada/notes', note('a note'), { 'idempotency-key': s.replace(/\n/g, ' ') }],
  ],
  ['revise_note content', 'body.content', (s) => ['PATCH', `/v1/personas/ada/notes/${noteId}`, { content: s }]],
];

async function expectRefused(r: Answer, secret: string, member: string): Promise<void> {
  expect(r.status).toBe(422);
  expect(r.body.type).toBe('urn:persona-store:credential-refused');
  expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
  expect(r.body.detail as string).toMatch(/identity service, the vault for secrets/);
  expect(r.body.member).toBe(member);
  expect(r.text).not.toContain(secret);
  expect(r.text).not.toContain(secret.slice(0, 24));
  expect(r.text).not.toContain(secret.slice(-24));
}

// Refusal happens before anything reaches the engine, but what is accepted is stored: both engines.
forEachEngine(() => {
  beforeAll(async () => {
    logged = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logged += chunk.toString();
        done();
      },
    });
    bed = await startTestbed(
      { PERSONA_MAX_VALUE_BYTES: '65536', PERSONA_MAX_NOTE_CHARS: '65536' },
      undefined,
      createLogger('persona-store', 'info', sink),
    );
    c = bed.owner;
    await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
    noteId = (await c.call('POST', '/v1/personas/ada/notes', note('a note to revise'))).body.id as string;
  });
  afterAll(async () => {
    await bed?.close();
  });

  describe('credential refusal', () => {
    const corpus = credentialCorpus(seededRandom(1));

    it('the corpus has at least 40 strings from at least 15 providers', () => {
      expect(corpus.length).toBeGreaterThanOrEqual(40);
      expect(new Set(corpus.map((e) => e.provider)).size).toBeGreaterThanOrEqual(15);
    });

    it('covers every card member on create and PATCH', () => {
      const create = writePaths
        .filter(([name]) => name.startsWith('create_persona '))
        .map(([name]) => name.slice('create_persona '.length));
      const update = writePaths
        .filter(([name]) => name.startsWith('update_persona '))
        .map(([name]) => name.slice('update_persona '.length));
      expect(create.sort()).toEqual(['profile', ...CARD_MEMBERS].sort());
      expect(update.sort()).toEqual([...CARD_MEMBERS].sort());
    });

    it('refuses every credential through every write path with 422 naming the identity service and the member, never echoing it', async () => {
      const misses: string[] = [];
      for (const { provider, secret } of corpus) {
        for (const [path, member, request] of writePaths) {
          const [method, url, body, headers] = request(secret);
          const r = await c.call(method, url, body, headers);
          if (r.status !== 422 || r.body?.type !== 'urn:persona-store:credential-refused' || r.body.member !== member) {
            misses.push(`${provider} via ${path}: ${r.status} ${String(r.body?.member ?? r.body?.title)}`);
            continue;
          }
          await expectRefused(r, secret, member);
        }
      }
      expect(misses).toEqual([]);
      // Nothing was stored and nothing was logged.
      const exported = await c.call('GET', '/v1/personas/ada/export');
      expect(
        (await c.call<{ personas: { profile: string }[] }>('GET', '/v1/personas')).body.personas.map((p) => p.profile),
      ).toEqual(['ada']);
      for (const { secret } of corpus) {
        expect(exported.text).not.toContain(secret.slice(0, 24));
        expect(logged).not.toContain(secret.slice(0, 24));
        expect(logged).not.toContain(secret.slice(-24));
      }
      expect(logged).toMatch(/Credential Refused/);
      // 1,120 requests: a generous backstop for a loaded machine, not a window.
    }, 600_000);

    it('refuses a credential as a credential even where a length cap, a fixed form or a size limit would refuse the member first', async () => {
      const pem = corpus.find((e) => e.secret.includes('PRIVATE KEY'))!.secret;
      const token = corpus.find((e) => e.provider === 'GitHub')!.secret;
      expect(pem.length).toBeGreaterThan(200);
      const cases: [string, Request][] = [
        ['body.display_name', ['POST', '/v1/personas', { profile: 'capped', display_name: pem }]], // longer than 200
        ['body.display_name', ['PATCH', '/v1/personas/ada', { display_name: pem }]],
        ['body.pronouns', ['PATCH', '/v1/personas/ada', { pronouns: pem }]], // longer than 60
        ['body.language', ['PATCH', '/v1/personas/ada', { language: token }]], // not a BCP 47 tag
        ['body.verbosity', ['PATCH', '/v1/personas/ada', { verbosity: token }]], // not one of three words
        ['body.mood', ['PATCH', '/v1/personas/ada', { mood: token }]], // a member the card does not have
        ['path key', ['PUT', `/v1/personas/ada/fields/${'a'.repeat(80)}_${token}`, field(1)]], // a key longer than 64
        ['body.content', ['POST', '/v1/personas/ada/notes', note(`${'word '.repeat(14_000)}${token}`)]], // over the note limit (413)
        ['body.value', ['PUT', '/v1/personas/ada/fields/big', field(`${'x'.repeat(70_000)} ${token}`)]], // over the value limit (413)
        [
          'header Idempotency-Key',
          ['POST', '/v1/personas/ada/notes', note('a note'), { 'idempotency-key': `${token}${'k'.repeat(200)}` }],
        ], // longer than 200
      ];
      for (const [member, [method, url, body, headers]] of cases) {
        await expectRefused(
          await c.call(method, url, body, headers),
          member.startsWith('path') ? token : JSON.stringify(body).includes(pem) ? pem : token,
          member,
        );
      }
      // Without the credential, the same requests are refused for what they are.
      expect(
        (await c.call('POST', '/v1/personas', { profile: 'capped', display_name: 'n'.repeat(201) })).body.title,
      ).toBe('Unprocessable Content');
      expect((await c.call('POST', '/v1/personas/ada/notes', note('word '.repeat(14_000)))).status).toBe(413);
    });

    it('keeps a random Idempotency-Key, which is what the header is for, and refuses one of this app\u2019s secrets there', async () => {
      const key = randomBytes(32).toString('base64url');
      const kept = await c.call('POST', '/v1/personas/ada/notes', note('a note sent with a random key'), {
        'idempotency-key': key,
      });
      expect(kept.status, kept.text).toBe(201);
      const secret = await bed.identity.addAccount('idempotent');
      const refused = await c.call('POST', '/v1/personas/ada/notes', note('a note sent with a secret as its key'), {
        'idempotency-key': secret,
      });
      expect(refused.status).toBe(422);
      expect(refused.body.member).toBe('header Idempotency-Key');
      expect(refused.text).not.toContain(secret);
    });

    it('leaves a write whose token does not verify to the route: 401, and nothing stored', async () => {
      const secret = corpus[0]!.secret;
      const r = await new Client(c.url, 'not-a-token').call('POST', '/v1/personas/ada/notes', note(secret));
      expect(r.status).toBe(401);
      expect(r.text).not.toContain(secret);
    });

    it('accepts at least 200 distinct ordinary sentences, code snippets and config lines as notes, field values, descriptions and card text', async () => {
      const ordinary = ordinaryCorpus();
      expect(ordinary.length).toBeGreaterThanOrEqual(200);
      expect(new Set(ordinary).size).toBe(ordinary.length);
      const refused: string[] = [];
      for (const [i, text] of ordinary.entries()) {
        const asNote = await c.call('POST', '/v1/personas/ada/notes', note(text), {
          'idempotency-key': `ordinary-${i}`,
        });
        const asValue = await c.call(
          'PUT',
          `/v1/personas/ada/fields/ordinary_${i}`,
          field({ text }, { description: text.slice(0, 1000) }),
        );
        const asCard = await c.call('PATCH', '/v1/personas/ada', { speaking_style: text.slice(0, 2000) });
        if (asNote.status !== 201 || asValue.status !== 200 || asCard.status !== 200)
          refused.push(`${asNote.status}/${asValue.status}/${asCard.status}: ${text}`);
      }
      expect(refused).toEqual([]);
      // 735 writes: a generous backstop for a loaded machine, not a window.
    }, 600_000);
  });

  describe('the detector', () => {
    it('uses secretlint for the shapes its own regexes do not list, with and without digits', async () => {
      const { fastShape, findCredential } = await import('./credential-screen.ts');
      const random = seededRandom(2);
      const onlySecretlint = VARIANTS.flatMap((variant) => credentialCorpus(random, variant)).filter((e) =>
        SECRETLINT_ONLY.includes(e.provider),
      );
      expect(new Set(onlySecretlint.map((e) => `${e.provider} ${e.variant}`)).size).toBe(
        SECRETLINT_ONLY.length * VARIANTS.length,
      );
      for (const { provider, variant, secret } of onlySecretlint) {
        expect(fastShape(secret), `${provider} ${variant}`).toBeUndefined();
        expect(
          await findCredential([{ where: 'body.content', text: `my token is ${secret}` }]),
          `${provider} ${variant}`,
        ).toEqual({ kind: 'a credential', where: 'body.content' });
      }
    });

    it('finds a token whose random part has no digit, which it once skipped without asking secretlint', async () => {
      const { findCredential } = await import('./credential-screen.ts');
      const letters = 'kQmZxTrwPLbnVcaHdEsYgUfJiOlMpNqR';
      for (const secret of [
        `figd_${letters}${letters.slice(0, 16)}`,
        `hvs.${letters.repeat(3)}`,
        `glsa_${letters}_abcdefab`,
        `vcp_${letters}${letters.slice(0, 8)}`,
      ]) {
        expect(await findCredential([{ where: 'body.content', text: secret }]), secret.slice(0, 5)).toEqual({
          kind: 'a credential',
          where: 'body.content',
        });
      }
    });

    it('refuses a password assigned without a digit, quoted or not, under any name that ends in a secret\u2019s name', async () => {
      const { fastShape } = await import('./credential-screen.ts');
      for (const text of [
        'password = "kQmZxTrwPLbnVcaH"',
        "api_key: 'correcthorsebatterystaple'",
        'password: kQmZxTrwPLbnVcaH',
        'DB_PASSWORD=kQmZxTrwPLbnVcaHd',
        'export STRIPE_SECRET=kQmZ-xTrwPLbn_VcaH',
        '--access-token=kQmZxTrwPLbnVcaH',
        'clientSecret = "YourClientSecretHere"',
        'DB_PASSWORD=hunter2hunter2',
      ]) {
        expect(fastShape(text), text).toBe('a password or key assignment');
      }
    });

    it('refuses a password with the punctuation generated passwords hold (. , ; ?), assigned or under a secret\u2019s member name', async () => {
      const { fastShape } = await import('./credential-screen.ts');
      for (const text of [
        'password: "Tr0ub4dor&3.horse!"',
        'DB_PASSWORD=p@ss.word.1234xyz',
        "wifi_password = 'kT9.vQ2;mX7-pL4w'",
        'api_key: Summer2024?Sunny',
        'client_secret=kQmZ,xTrw,PLbn,VcaH',
      ]) {
        expect(fastShape(text), text).toBe('a password or key assignment');
      }
      // Written as JSON, the member and its value are the same assignment (write-gate.ts).
      for (const secret of ['kT9.vQ2;mX7-pL4w', 'Summer2024?Sunny']) {
        const r = await c.call('PUT', '/v1/personas/ada/fields/wifi', field({ ssid: 'home', password: secret }));
        await expectRefused(r, secret, 'body.value.password');
      }
      // Names in code and plain words stay what they were: a reference to a secret, not one.
      for (const text of [
        'password: process.env.DB_PASSWORD',
        'auth_token = os.environ.get("AUTH_TOKEN")',
        'secret: config.vault.secret_name',
        'password: "correct.horse.battery.staple"',
        'use the api_key: YOUR_CLIENT_SECRET.',
        'password = "see the vault entry"',
      ]) {
        expect(fastShape(text), text).toBeUndefined();
      }
    });

    it('refuses a refresh, session or bearer token and a private key under their names, as a JSON member too', async () => {
      const { fastShape } = await import('./credential-screen.ts');
      for (const text of [
        'refresh_token: 1//0gL5xQ7nYxK9RCgYIARAAGBASNwF-L9IrZ8x',
        'SESSION_TOKEN="kQmZ3TrwPLbn9caHdEsY"',
        'bearerToken = "kQmZxTrwPLbnVcaHdEsY"',
        'private_key: MIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
      ]) {
        expect(fastShape(text), text).toBe('a password or key assignment');
      }
      const refresh = '1//0gL5xQ7nYxK9RCgYIARAAGBASNwF-L9IrZ8x';
      await expectRefused(
        await c.call(
          'PUT',
          '/v1/personas/ada/fields/calendar_oauth',
          field({ client_id: 'calendar-sync', refresh_token: refresh }),
        ),
        refresh,
        'body.value.refresh_token',
      );
      for (const text of [
        'refresh_token = getRefreshToken()',
        'private_key: YOUR_PRIVATE_KEY',
        'max_tokens: 100000000',
      ]) {
        expect(fastShape(text), text).toBeUndefined();
      }
    });

    it('refuses an Authorization header\u2019s credentials (Bearer, Token, Basic), as text and as a JSON member, and keeps its placeholders', async () => {
      const { fastShape } = await import('./credential-screen.ts');
      const opaque = '8f3a9c2b7d1e4f6a0b5c8d2e9f1a3b4c';
      const basic = Buffer.from('ada:hunter2hunter2').toString('base64');
      for (const text of [
        `curl -H "Authorization: Bearer ${opaque}" https://api.example.com/v1/me`,
        `Authorization: token ${opaque}`,
        `authorization=Bearer kQmZxTrwPLbnVcaHdEsYgUfJ`,
        `Authorization: Basic ${basic}`,
        `Proxy-Authorization: Basic ${Buffer.from('ada:s3cret').toString('base64')}`,
      ]) {
        expect(fastShape(text), text).toBe('an Authorization header');
      }
      const headers = { Accept: 'application/json', Authorization: `Bearer ${opaque}` };
      await expectRefused(
        await c.call('PUT', '/v1/personas/ada/fields/weather_api', field({ url: 'https://api.example.com', headers })),
        opaque,
        'body.value.headers.Authorization',
      );
      await expectRefused(
        await c.call('POST', '/v1/personas/ada/notes', note(`Called it with -H "Authorization: Basic ${basic}"`)),
        basic,
        'body.content',
      );
      for (const text of [
        'Authorization: Bearer <token>',
        'Authorization: Bearer $TOKEN',
        'curl -H "Authorization: Bearer ${API_TOKEN}" https://api.example.com',
        'Authorization: Bearer YOUR_ACCESS_TOKEN',
        'Authorization: Bearer {{token}}',
        `Authorization: Basic ${Buffer.from('username:password').toString('base64')}`,
        'Send the token in the Authorization header: Bearer authentication.',
      ]) {
        expect(fastShape(text), text).toBeUndefined();
      }
      const placeholder = field({ headers: { Authorization: 'Bearer <token from the identity service>' } });
      expect((await c.call('PUT', '/v1/personas/ada/fields/weather_api', placeholder)).status).toBe(200);
    });

    it('accepts what is assigned to a secret\u2019s name when it is a placeholder or a name in code, not a secret', async () => {
      const { fastShape } = await import('./credential-screen.ts');
      for (const text of [
        'const apiKey = getApiKeyFromVault();',
        'access_token = fetchAccessToken(client)',
        'secret = process_env_value',
        'password: HTTPServerErrorMessage',
        'client_secret: YOUR_CLIENT_SECRET',
        'ANTHROPIC_API_KEY=your-api-key-here',
        'api_key: "your-api-key-here"',
        'password = "<your password>"',
        'DB_PASSWORD=${DB_PASSWORD}',
        'password = "123456789012"', // digits alone: a PIN, a phone number, an id
        'password_hint = "the name of our first cat"',
        // A path of words is where something is, not a secret: the shell's pwd, a key's file.
        'pwd: /home/ada/projects',
        'PWD=/Users/ada/src/hub-services',
        'private_key: ~/.ssh/deploy_key',
        'secret: ./config/secrets.yaml',
      ]) {
        expect(fastShape(text), text).toBeUndefined();
      }
      // A password that merely starts with a slash, or holds random pieces between slashes, still is one.
      for (const text of ['password: /Xk9mQ2pL7vR3', 'pwd=/aB3/x9Kp+Q2w/zz', 'password: /qwrtzpxkvbnm']) {
        expect(fastShape(text), text).toBe('a password or key assignment');
      }
    });

    it('refuses a JSON member named like a secret whose value is one, digits or none, and names the member', async () => {
      const secrets = ['kQmZxTrwPLbnVcaHdEsY', 'kQmZ3TrwPLbn9caHdEsY'];
      for (const secret of secrets) {
        for (const [name, body] of [
          ['body.value.password', field({ password: secret })],
          ['body.value[0].db.clientSecret', field([{ db: { clientSecret: secret } }])],
        ] as const) {
          const r = await c.call('PUT', '/v1/personas/ada/fields/login', body);
          await expectRefused(r, secret, name);
        }
      }
      // A placeholder under the same name is data about a credential, not the credential.
      expect(
        (
          await c.call(
            'PUT',
            '/v1/personas/ada/fields/login',
            field({ password: '<in the identity service>', api_key: 'your-api-key-here' }),
          )
        ).status,
      ).toBe(200);
    });
  });
});

describe('the detector, over many seeded draws of the corpus', () => {
  it('finds every credential shape in 100 draws of the corpus, each with digits, without digits and with letters only', async () => {
    const { findCredential } = await import('./credential-screen.ts');
    const random = seededRandom(3);
    const misses: string[] = [];
    for (let draw = 0; draw < 100; draw++) {
      for (const variant of VARIANTS) {
        for (const { provider, secret } of credentialCorpus(random, variant)) {
          if (!(await findCredential([{ where: 'body.content', text: secret }])))
            misses.push(`${provider} (${variant}, draw ${draw}): ${secret.slice(0, 6)}...`);
        }
      }
    }
    expect(misses).toEqual([]);
  });
});
