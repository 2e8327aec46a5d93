import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appSecretIn, SECRET_FORMATS, secretPattern, type SecretFormatName } from '../common/secret-formats.ts';
import { SERVICES } from '../common/services.ts';
import { fastShape, looksRandom } from '../services/persona-store/credential-screen.ts';
import { newConsoleSecret } from '../main/console/server.ts';
import { gatewayServiceToken, GATEWAY_TOKEN_FILE } from '../main/supervisor/wiring.ts';
import { openSqliteEngine } from '../services/persona-store/engines/sqlite.ts';
import { importExport, ImportRefused } from '../services/persona-store/import.ts';
import { field, note, startTestbed, type Testbed } from '../services/persona-store/test-support/harness.ts';
import { newSignalSecret } from '../services/repohost-gateway/subscriptions.ts';
import { tempDir } from './support/identity.ts';
import { freePort, spawnService } from './support/process.ts';
import { waitFor } from './support/wait-for.ts';

/**
 * Nothing this app issues is kept as a memory: every secret format of common/secret-formats.ts,
 * made by its real issuer, is refused by a real persona store over HTTP and by import. A new format
 * without an issuer here does not compile; an issuer whose secrets leave their format fails below.
 */

let bed: Testbed;
const folders: string[] = [];
let accounts = 0;

/** Each format's real issuer: what the app hands out. */
const ISSUERS: Record<SecretFormatName, () => string | Promise<string>> = {
  // The identity service's own: a new account's session credential, made as `account add` makes it.
  sessionCredential: () => bed.identity.addAccount(`someone-${(accounts += 1)}`),
  signalSecret: newSignalSecret,
  gatewayServiceToken: () => {
    const dir = tempDir('gateway-token');
    folders.push(dir);
    return gatewayServiceToken(dir);
  },
  consoleSecret: newConsoleSecret,
};

beforeAll(async () => {
  bed = await startTestbed();
  const r = await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
  expect(r.status, r.text).toBe(201);
});

afterAll(async () => {
  await bed?.close();
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

const names = Object.keys(SECRET_FORMATS) as SecretFormatName[];

describe.each(names)('the %s this app issues', (name) => {
  it('is made in its declared format, so the list is the one place that knows it', async () => {
    const anchored = new RegExp(`^${secretPattern(SECRET_FORMATS[name]).source}$`);
    for (let i = 0; i < 20; i++) expect(await ISSUERS[name]()).toMatch(anchored);
  });

  it('is refused as a note, bare and as a NAME= line, naming what it is and never echoing it', async () => {
    for (let i = 0; i < 10; i++) {
      const secret = await ISSUERS[name]();
      const inLink = `http://127.0.0.1:9000/hook?secret=${encodeURIComponent(secret)}`;
      for (const content of [
        secret,
        `HUB_SESSION_CREDENTIAL=${secret}`,
        `the hub's settings:\nHUB_SECRET=${secret}\nHUB_BASE_URL=http://127.0.0.1:8004`,
        inLink,
      ]) {
        const r = await bed.owner.call('POST', '/v1/personas/ada/notes', note(content));
        expect(r.status, `${name} in a note`).toBe(422);
        expect(r.body.type).toBe('urn:persona-store:credential-refused');
        expect(r.body.detail).toContain(SECRET_FORMATS[name].kind);
        expect(r.text).not.toContain(secret);
        expect(r.text).not.toContain(encodeURIComponent(secret));
      }
    }
  });

  it('is refused as a field value and a description', async () => {
    const secret = await ISSUERS[name]();
    const asValue = await bed.owner.call('PUT', '/v1/personas/ada/fields/hub', field({ env: [`KEY=${secret}`] }));
    expect(asValue.status).toBe(422);
    expect(asValue.body.member).toBe('body.value.env[0]');
    const asDescription = await bed.owner.call(
      'PUT',
      '/v1/personas/ada/fields/hub',
      field(1, { description: `use ${secret}` }),
    );
    expect(asDescription.status).toBe(422);
    expect(asDescription.body.member).toBe('body.description');
  });

  it('is refused by import, naming where, with nothing written', async () => {
    const secret = await ISSUERS[name]();
    const dir = tempDir('import');
    folders.push(dir);
    const engine = await openSqliteEngine(join(dir, 'persona-store.db'));
    try {
      const at = '2026-11-01T00:00:00.000Z';
      const doc = {
        format: 'persona-export/1',
        persona: {
          profile: 'bob',
          display_name: 'Bob',
          pronouns: null,
          language: null,
          tone: null,
          verbosity: null,
          speaking_style: null,
          created_at: at,
          updated_at: at,
        },
        fields: [],
        notes: [
          {
            id: 'n1',
            kind: 'lesson',
            content: `keep ${secret}`,
            source: 'owner',
            asserted_by: 'persona',
            pinned: false,
            revision: 1,
            written_at: at,
            revised_at: at,
          },
        ],
      };
      const refused = await importExport(doc, engine, {
        account: 'acct',
        limits: { maxValueBytes: 16384, maxNoteChars: 8000, maxKeyLength: 64 },
      }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ImportRefused);
      expect((refused as Error).message).toContain('notes[0].content');
      expect((refused as Error).message).toContain(SECRET_FORMATS[name].kind);
      expect((refused as Error).message).not.toContain(secret);
      expect(await engine.db.selectFrom('personas').select('id').execute()).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});

/** Every byte as a URL's percent-escape, as a link builder that encodes everything writes it. */
const percentEncoded = (text: string) =>
  [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
/** The fullwidth form of printable ASCII (U+FF01-FF5E), as East Asian keyboards type it. */
const fullwidth = (text: string) => text.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
const inside = (secret: string, at: number, what: string) => `${secret.slice(0, at)}${what}${secret.slice(at)}`;

/** The audit's ways of writing a secret so that the screen missed it while a person still reads it. */
const WRITTEN_SO_A_PERSON_READS_IT: [string, (secret: string, prefix: string) => string][] = [
  ['with a zero-width space inside', (s) => inside(s, 12, '\u200b')],
  ['with a soft hyphen inside', (s, p) => inside(s, p.length - 2, '\u00ad')],
  ['with a word joiner, a BOM and bidi marks inside', (s) => inside(inside(s, 20, '\u2060\ufeff'), 9, '\u200e\u202e')],
  ['with %5F for its underscore', (s) => s.replace('_', '%5F')],
  ['fully percent-encoded', (s) => percentEncoded(s)],
  ['with a fullwidth prefix', (s, p) => fullwidth(p) + s.slice(p.length)],
  ['fullwidth throughout', (s) => fullwidth(s)],
  ['with a line break inside', (s) => inside(s, 17, '\n')],
  ['with a CRLF inside, in a NAME= line', (s) => `HUB_SESSION_CREDENTIAL=${inside(s, 25, '\r\n')}`],
  [
    'fullwidth, with its underscore percent-encoded and a zero-width joiner',
    (s, p) => fullwidth(inside(s.replace('_', '%5F'), p.length + 8, '\u200d')),
  ],
];

describe.each(names)('the %s this app issues, written so that a person still reads it', (name) => {
  const { prefix, kind } = SECRET_FORMATS[name];

  it.each(WRITTEN_SO_A_PERSON_READS_IT)(
    'is refused %s, naming what it is and never echoing it',
    async (_how, write) => {
      const secret = await ISSUERS[name]();
      const written = write(secret, prefix);
      expect(written).not.toContain(secret);
      const r = await bed.owner.call('POST', '/v1/personas/ada/notes', note(`for the hub: ${written}`));
      expect(r.status, r.text).toBe(422);
      expect(r.body.type).toBe('urn:persona-store:credential-refused');
      expect(r.body.detail).toContain(kind);
      expect(r.text).not.toContain(secret.slice(prefix.length, prefix.length + 16));
      expect(r.text).not.toContain(written.slice(-16));
    },
  );

  it('is refused by its random part alone, or behind another prefix, as a note, a value and a member name', async () => {
    // A random part that does not look random (about one in 200) is left to the prefixed form: see the next test.
    let secret: string;
    do secret = await ISSUERS[name]();
    while (!looksRandom(secret.slice(prefix.length)));
    const part = secret.slice(prefix.length);
    for (const written of [
      part,
      `${prefix.toUpperCase()}${part}`,
      `${prefix.slice(0, -1)}-${part}`,
      `HUB_KEY=${part}`,
    ]) {
      const asNote = await bed.owner.call('POST', '/v1/personas/ada/notes', note(`keep ${written} for later`));
      expect(asNote.status, written).toBe(422);
      expect(asNote.body.detail).toContain('the random part of a secret this app issues');
      expect(asNote.text).not.toContain(part);
    }
    const asValue = await bed.owner.call('PUT', '/v1/personas/ada/fields/hub', field({ key: part }));
    expect(asValue.status).toBe(422);
    expect(asValue.body.member).toBe('body.value.key');
    const asMember = await bed.owner.call('PUT', '/v1/personas/ada/fields/hub', field({ [part]: true }));
    expect(asMember.status).toBe(422);
    expect(asMember.text).not.toContain(part);
  });

  it('is taken for one by its random part alone in all but a few of 2,000 draws', () => {
    // Drawn as the issuer draws them (its format is pinned above), 2,000 at once.
    const { bytes, encoding } = SECRET_FORMATS[name];
    let missed = 0;
    for (let i = 0; i < 2000; i++) {
      if (fastShape(`the hub's key is ${randomBytes(bytes).toString(encoding)}.`) === undefined) missed++;
    }
    // At most one in 200 (the 32-character signal secret, mostly for want of a digit); the bound leaves room.
    expect(missed).toBeLessThan(30);
  });
});

describe('every service\u2019s own log', () => {
  /**
   * A request whose path holds each secret this app issues, to each service's real program with its own
   * logger: the request line names no path sent (an unknown one as `/v1/…`), and nothing else of the
   * request leaves a secret in the log. (The identity service, the gateway and the provider once logged
   * such paths as they came; the kit's logger knew none of `hubsvc_`, `hubcon_`.)
   */
  it.each(SERVICES.map((s) => [s.name, s] as const))(
    'of %s never holds one of them, from the list its logger is given',
    async (_name, service) => {
      const port = await freePort();
      const dataDir = tempDir(`${service.name}-log`);
      folders.push(dataDir);
      const running = await spawnService(
        service.name,
        {
          [`${service.prefix}PORT`]: String(port),
          [`${service.prefix}DATA_DIR`]: dataDir,
          [`${service.prefix}LOG_LEVEL`]: 'info',
        },
        port,
      );
      try {
        const secrets = await Promise.all(names.map((name) => ISSUERS[name]()));
        for (const secret of secrets) {
          const before = running.output().split('\n').length;
          const r = await fetch(`${running.url}/v1/profiles/${encodeURIComponent(secret)}`);
          await r.text();
          expect(r.status).toBeGreaterThanOrEqual(400);
          // The request's line is written as its answer goes; it is read here once it has come through the pipe.
          await waitFor('the request line', () =>
            running
              .output()
              .split('\n')
              .slice(before - 1)
              .some((line) => line.includes('"path":"/v1/\u2026"')),
          );
        }
        const logged = running.output();
        for (const secret of secrets) {
          const random = secret.slice(secret.indexOf('_') + 1);
          expect(logged).not.toContain(random.slice(0, 12));
          expect(logged).not.toContain(encodeURIComponent(random).slice(0, 12));
        }
      } finally {
        await running.stop();
      }
    },
  );
});

describe('near misses and old files', () => {
  it('a prefix with too short a random part, or none, is ordinary text', async () => {
    for (const format of Object.values(SECRET_FORMATS)) {
      expect(appSecretIn(`${format.prefix}${'a'.repeat(20)}`)).toBeUndefined();
      const r = await bed.owner.call(
        'POST',
        '/v1/personas/ada/notes',
        note(`our tokens start with ${format.prefix} and then random text`),
      );
      expect(r.status, r.text).toBe(201);
    }
  });

  it('a service token file made before the prefix keeps working as it is', () => {
    const dir = tempDir('gateway-token');
    folders.push(dir);
    const old = 'Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg';
    writeFileSync(join(dir, GATEWAY_TOKEN_FILE), `${old}\n`, { mode: 0o600 });
    expect(gatewayServiceToken(dir)).toBe(old);
  });
});
