import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { LOCAL_SESSION_FILE } from '../../common/services.ts';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestIdentity, tempDir, type TestIdentity } from '../../test/support/identity.ts';
import { ROOT } from '../../test/support/process.ts';
import { reportSeedOnFailure, seededRandom } from '../../test/support/seed.ts';
import type { PersonaEngine } from './engines/engine.ts';
import { openPostgresEngine } from './engines/postgres.ts';
import { openSqliteEngine } from './engines/sqlite.ts';
import { importExport, ImportRefused } from './import.ts';
import { DATABASE_FILE, startPersonaStore } from './service.ts';
import { credentialCorpus } from './test-support/credential-corpus.ts';
import { Client, field, forEachEngine, note, startTestbed, type Testbed } from './test-support/harness.ts';

reportSeedOnFailure();
// Child processes on a loaded machine: a generous backstop per test, never a window anything waits for.
vi.setConfig({ testTimeout: 300_000 });

/**
 * Import of an export file, on both engines: the export a real persona store gives (every page joined,
 * as the console downloads it) becomes a persona of another store, through the command line as a child
 * process and in process; then the target's own API reads it back.
 */

const CLI = join(ROOT, 'services', 'persona-store', 'cli.ts');
const LIMITS = { maxValueBytes: 16384, maxNoteChars: 8000, maxKeyLength: 64 };

async function cli(args: string[], env: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PERSONA_')));
  return execa(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env: { ...clean, ...env },
    extendEnv: false,
    reject: false,
  });
}

const subOf = (c: Client) => JSON.parse(Buffer.from(c.token.split('.')[1]!, 'base64url').toString()).sub as string;

type ExportDocument = {
  format: string;
  persona: Record<string, unknown>;
  fields: Record<string, unknown>[];
  notes: Record<string, unknown>[];
  fields_next_after: null;
  notes_next_after: null;
};

/** Every page of the export joined into one document of the same format, both cursors null (what the console downloads). */
async function wholeExport(c: Client, profile: string): Promise<ExportDocument> {
  let doc: ExportDocument | undefined;
  let fieldsAfter: string | null | undefined;
  let notesAfter: string | null | undefined;
  do {
    const query = new URLSearchParams({ fields_limit: '2', notes_limit: '2' });
    if (fieldsAfter) query.set('fields_after', fieldsAfter);
    if (notesAfter) query.set('notes_after', notesAfter);
    const page = await c.call<ExportDocument & { fields_next_after: string | null; notes_next_after: string | null }>(
      'GET',
      `/v1/personas/${profile}/export?${query}`,
    );
    expect(page.status, page.text).toBe(200);
    doc ??= { ...page.body, fields: [], notes: [], fields_next_after: null, notes_next_after: null };
    if (fieldsAfter !== null) doc.fields.push(...page.body.fields);
    if (notesAfter !== null) doc.notes.push(...page.body.notes);
    fieldsAfter = fieldsAfter === null ? null : page.body.fields_next_after;
    notesAfter = notesAfter === null ? null : page.body.notes_next_after;
  } while (fieldsAfter !== null || notesAfter !== null);
  return doc!;
}

const eventsOf = async (c: Client, profile: string) =>
  (
    await c.call<{
      events: { action: string; target: string; asserted_by: string; source: string | null; changes: string[] }[];
    }>('GET', `/v1/personas/${profile}/events?limit=100`)
  ).body.events;

/** Opens the target's database in this process, beside its running store (SQLite's WAL and PostgreSQL both allow it). */
async function engineOf(bed: Testbed): Promise<PersonaEngine> {
  if (bed.databaseUrl)
    return openPostgresEngine({ url: bed.databaseUrl, poolSize: 2, ssl: false, connectTimeoutMs: 10_000 });
  return openSqliteEngine(join(bed.dataDir, DATABASE_FILE));
}

/** The environment that points the command line at the target's database. */
const targetEnv = (bed: Testbed): Record<string, string> =>
  bed.databaseUrl
    ? { PERSONA_DATABASE_URL: bed.databaseUrl, PERSONA_DATA_DIR: bed.dataDir }
    : { PERSONA_DATA_DIR: bed.dataDir };

forEachEngine(() => {
  let identity: TestIdentity;
  let source: Testbed;
  let target: Testbed;
  let file: string;
  let exported: ExportDocument;
  const folder = tempDir('persona-import');

  beforeAll(async () => {
    identity = await startTestIdentity();
    source = await startTestbed({}, identity);
    target = await startTestbed({}, identity);
    const c = source.owner;
    const ok = (r: { status: number; text: string }) => expect(r.status, r.text).toBeLessThan(300);
    ok(
      await c.call('POST', '/v1/personas', {
        profile: 'atlas',
        display_name: 'Atlas',
        language: 'en',
        tone: 'calm',
        verbosity: 'balanced',
      }),
    );
    ok(
      await c.call(
        'PUT',
        '/v1/personas/atlas/fields/home_town',
        field('Lighthouse point', { pinned: true, source: 'owner' }),
      ),
    );
    source.clock.advance(5);
    ok(
      await c.call(
        'PUT',
        '/v1/personas/atlas/fields/home_town',
        field('Lighthouse point, north side', { pinned: true, source: 'owner' }),
      ),
    );
    ok(
      await c.call(
        'PUT',
        '/v1/personas/atlas/fields/colours',
        field({ main: 'teal', also: ['amber', 3, null, true] }, { description: 'colours the keeper likes' }),
      ),
    );
    ok(await c.call('PUT', '/v1/personas/atlas/fields/forgotten', field('not exported')));
    ok(await c.call('DELETE', '/v1/personas/atlas/fields/forgotten'));
    for (let i = 0; i < 3; i++) ok(await c.call('PUT', `/v1/personas/atlas/fields/extra_${i}`, field(i * 1.5)));
    ok(
      await c.call('POST', '/v1/personas/atlas/notes', note('The lighthouse keeper waved at dawn.', { pinned: true })),
    );
    const revised = await c.call<{ id: string }>(
      'POST',
      '/v1/personas/atlas/notes',
      note('A storm came.', { kind: 'episode', source: 'service' }),
    );
    source.clock.advance(5);
    ok(
      await c.call('PATCH', `/v1/personas/atlas/notes/${revised.body.id}`, {
        content: 'A storm came over the lighthouse.',
      }),
    );
    for (let i = 0; i < 4; i++)
      ok(await c.call('POST', '/v1/personas/atlas/notes', note(`Lesson ${i}: check the lamp.`, { kind: 'lesson' })));
    exported = await wholeExport(c, 'atlas');
    file = join(folder, 'atlas-persona-export.json');
    writeFileSync(file, JSON.stringify(exported, null, 2));
  });

  afterAll(async () => {
    await source?.close();
    await target?.close();
    await identity?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('an export file imported by the command line reads back the same, entries with their revisions, times and claims; the log starts at the import', async () => {
    const run = await cli(['import', file, '--account', subOf(target.owner)], targetEnv(target));
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain('imported "atlas"');
    expect(run.stdout).toContain('5 field(s), 6 note(s)');

    // Everything as it was, but what wrote each entry: the import, with the file's asserted_by kept as its claim.
    const asImported = <T extends Record<string, unknown>>(entry: T) => ({
      ...entry,
      asserted_by: `import:${String(entry.asserted_by)}`,
    });
    expect(await wholeExport(target.owner, 'atlas')).toEqual({
      ...exported,
      fields: exported.fields.map(asImported),
      notes: exported.notes.map(asImported),
    });
    const block = await target.owner.call<{ fields: Record<string, unknown>[]; notes: Record<string, unknown>[] }>(
      'GET',
      '/v1/personas/atlas',
    );
    const sourceBlock = await source.owner.call<typeof block.body>('GET', '/v1/personas/atlas');
    expect(block.body).toEqual({
      ...sourceBlock.body,
      fields: sourceBlock.body.fields.map(asImported),
      notes: sourceBlock.body.notes.map(asImported),
    });
    const recall = await target.owner.call<{ fields: { key: string }[]; notes: { content: string }[] }>(
      'GET',
      '/v1/personas/atlas/recall?q=lighthouse',
    );
    expect(recall.body.fields.map((f) => f.key)).toEqual(['home_town']);
    expect(recall.body.notes.map((n) => n.content).sort()).toEqual([
      'A storm came over the lighthouse.',
      'The lighthouse keeper waved at dawn.',
    ]);

    const events = await eventsOf(target.owner, 'atlas');
    expect(events.map((e) => e.action)).toEqual([
      'persona_created',
      ...Array(5).fill('field_set'),
      ...Array(6).fill('note_added'),
    ]);
    expect(new Set(events.map((e) => e.asserted_by))).toEqual(new Set(['import']));
    expect(events[0]!.changes).toEqual(['display_name', 'language', 'tone', 'verbosity']);
  });

  it('refuses to import over an existing profile, saying what to do, and writes nothing', async () => {
    const c = target.owner;
    if ((await c.call('GET', '/v1/personas/beacon')).status === 404)
      expect((await c.call('POST', '/v1/personas', { profile: 'beacon', display_name: 'Beacon' })).status).toBe(201);
    const before = { export: await wholeExport(c, 'beacon'), events: await eventsOf(c, 'beacon') };
    const doc = { ...exported, persona: { ...exported.persona, profile: 'beacon' } };
    const engine = await engineOf(target);
    try {
      await expect(importExport(doc, engine, { account: subOf(c), limits: LIMITS })).rejects.toThrow(
        /already has a persona "beacon".*--profile/,
      );
    } finally {
      await engine.close();
    }
    expect({ export: await wholeExport(c, 'beacon'), events: await eventsOf(c, 'beacon') }).toEqual(before);
  });

  it('imports under another profile with --profile; notes whose id is already used in the database get new ones', async () => {
    const other = await target.account('second');
    const engine = await engineOf(target);
    try {
      await importExport(exported, engine, { account: subOf(other), profile: 'first-copy', limits: LIMITS });
      const report = await importExport(exported, engine, {
        account: subOf(other),
        profile: 'second-copy',
        limits: LIMITS,
      });
      expect(report).toMatchObject({ profile: 'second-copy', fields: 5, notes: 6, newNoteIds: 6 });
    } finally {
      await engine.close();
    }
    const copy = await wholeExport(other, 'second-copy');
    expect(copy.fields).toEqual(exported.fields.map((f) => ({ ...f, asserted_by: 'import:persona' })));
    expect(copy.persona).toEqual({ ...exported.persona, profile: 'second-copy' });
    const strip = (notes: Record<string, unknown>[]) => notes.map(({ id: _id, asserted_by: _by, ...rest }) => rest);
    expect(strip(copy.notes)).toEqual(strip(exported.notes));
    expect(new Set(copy.notes.map((n) => n.asserted_by))).toEqual(new Set(['import:persona']));
    const first = await wholeExport(other, 'first-copy');
    expect(new Set([...copy.notes, ...first.notes].map((n) => n.id)).size).toBe(12);
  });

  it('refuses a credential anywhere in the file, naming where and never echoing it, and writes nothing', async () => {
    const random = seededRandom(1);
    const corpus = credentialCorpus(random);
    const pick = () => corpus[random(corpus.length)]!.secret;
    const places: [string, (doc: ExportDocument, secret: string) => void][] = [
      ['notes[1].content', (d, s) => (d.notes[1]!.content = `my token is ${s}`)],
      ['fields[0].value.server.auth', (d, s) => (d.fields[0]!.value = { server: { auth: s } })],
      ['persona.tone', (d, s) => (d.persona.tone = s)],
      ['fields[2].description', (d, s) => (d.fields[2]!.description = `key ${s}`)],
      ['fields[1].key', (d, s) => (d.fields[1]!.key = s)],
    ];
    const engine = await engineOf(target);
    try {
      for (const [where, put] of places) {
        const secret = pick();
        const doc = structuredClone(exported);
        doc.persona.profile = 'leaky';
        put(doc, secret);
        const refused = await importExport(doc, engine, { account: subOf(target.owner), limits: LIMITS }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(refused, where).toBeInstanceOf(ImportRefused);
        const message = (refused as Error).message;
        expect(message).toContain(where);
        expect(message).toContain('identity service');
        expect(message).not.toContain(secret);
        expect((await target.owner.call('GET', '/v1/personas/leaky')).status).toBe(404);
      }
    } finally {
      await engine.close();
    }
    // The profile the import is given on the command line becomes the profile as much as the file's own.
    const token = `ghp_${'kQmZ3TrwPLbn9caHdEsYgUfJiOlMpNqR4x7w'}`;
    const optionEngine = await engineOf(target);
    const byOption = await importExport(exported, optionEngine, {
      account: subOf(target.owner),
      profile: token,
      limits: LIMITS,
    })
      .then(
        () => undefined,
        (err: unknown) => err,
      )
      .finally(() => optionEngine.close());
    expect(byOption).toBeInstanceOf(ImportRefused);
    expect((byOption as Error).message).toContain('--profile');
    expect((byOption as Error).message).toContain('identity service');
    expect((byOption as Error).message).not.toContain(token);
    expect((await target.owner.call('GET', `/v1/personas/${token}`)).status).toBe(404);
    const leaky = join(folder, 'leaky.json');
    const secret = pick();
    writeFileSync(
      leaky,
      JSON.stringify({
        ...exported,
        persona: { ...exported.persona, profile: 'leaky' },
        notes: [{ ...exported.notes[0], content: secret }],
      }),
    );
    const run = await cli(['import', leaky, '--account', subOf(target.owner)], targetEnv(target));
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('notes[0].content');
    expect(run.stdout + run.stderr).not.toContain(secret);
    expect((await target.owner.call('GET', '/v1/personas/leaky')).status).toBe(404);
  });

  it('refuses what is not a whole export as this store writes it, saying what is wrong', async () => {
    const engine = await engineOf(target);
    const refusal = (doc: unknown) =>
      importExport(doc, engine, { account: subOf(target.owner), limits: LIMITS }).then(
        () => 'imported',
        (err: unknown) => (err instanceof ImportRefused ? err.message : `not a refusal: ${String(err)}`),
      );
    const named = (profile: string, change: (d: ExportDocument) => void) => {
      const d = structuredClone(exported);
      d.persona.profile = profile;
      change(d);
      return d;
    };
    try {
      expect(await refusal({ ...named('paged', () => {}), fields_next_after: 'extra_1' })).toMatch(
        /one page of an export/,
      );
      expect(await refusal(named('old', (d) => (d.format = 'persona-export/0')))).toMatch(/persona-export\/1/);
      expect(await refusal(named('keys', (d) => (d.fields[1]!.key = d.fields[0]!.key)))).toMatch(/appears twice/);
      expect(await refusal(named('underscore', (d) => (d.fields[0]!.key = '_schema')))).toMatch(/fields\[0\]\.key/);
      expect(
        await refusal(named('deep', (d) => (d.fields[0]!.value = JSON.parse('['.repeat(65) + ']'.repeat(65))))),
      ).toMatch(/more than 64 levels/);
      expect(await refusal(named('big', (d) => (d.notes[0]!.content = 'x'.repeat(8001))))).toMatch(
        /notes\.0\.content|notes\[0\]/,
      );
      expect(await refusal(named('unknown', (d) => (d.notes[0]!.mood = 'happy')))).toMatch(/mood/);
      expect(await refusal(named('surrogate', (d) => (d.notes[0]!.content = 'half \ud800 a pair')))).toMatch(
        /lone surrogate/,
      );
      expect(await refusal(named('bad profile', () => {}))).toMatch(/profile/);
      for (const profile of ['paged', 'old', 'keys', 'underscore', 'deep', 'big', 'unknown', 'surrogate']) {
        expect((await target.owner.call('GET', `/v1/personas/${profile}`)).status).toBe(404);
      }
      // 64 levels, the store's own limit for a field value, are kept.
      expect(
        await refusal(named('deep64', (d) => (d.fields[0]!.value = JSON.parse('['.repeat(64) + ']'.repeat(64))))),
      ).toBe('imported');
    } finally {
      await engine.close();
    }
    const notJson = join(folder, 'not.json');
    writeFileSync(notJson, 'persona: atlas\n');
    const run = await cli(['import', notJson, '--account', subOf(target.owner)], targetEnv(target));
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('is not JSON');
  });

  it('records that the import wrote each entry, keeping the file\u2019s asserted_by as its claim; a later write by a token is the token\u2019s', async () => {
    const engine = await engineOf(target);
    const doc = structuredClone(exported);
    doc.persona.profile = 'claimed';
    // A file may say anything of who wrote an entry: here that another service of the hub did.
    doc.fields[0]!.asserted_by = 'repohost-api';
    try {
      await importExport(doc, engine, { account: subOf(target.owner), limits: LIMITS });
    } finally {
      await engine.close();
    }
    const c = target.owner;
    const key = doc.fields[0]!.key as string;
    const imported = await c.call<{ asserted_by: string; source: string }>('GET', `/v1/personas/claimed/fields/${key}`);
    expect(imported.body.asserted_by).toBe('import:repohost-api');
    expect(imported.body.source).toBe(doc.fields[0]!.source);
    const notes = await c.call<{ notes: { asserted_by: string }[] }>('GET', '/v1/personas/claimed/notes');
    expect(new Set(notes.body.notes.map((n) => n.asserted_by))).toEqual(new Set(['import:persona']));
    // The import's own entries in the change log say it was the import.
    expect(new Set((await eventsOf(c, 'claimed')).map((e) => e.asserted_by))).toEqual(new Set(['import']));
    // Imported again (an export of an imported persona): still the first claim, behind one `import:`.
    const again = await wholeExport(c, 'claimed');
    const engine2 = await engineOf(target);
    try {
      await importExport({ ...again, persona: { ...again.persona, profile: 'claimed-again' } }, engine2, {
        account: subOf(c),
        limits: LIMITS,
      });
    } finally {
      await engine2.close();
    }
    expect(
      (await c.call<{ asserted_by: string }>('GET', `/v1/personas/claimed-again/fields/${key}`)).body.asserted_by,
    ).toBe('import:repohost-api');
    // Written again through the API, the entry is what the verified token says.
    const rewritten = await c.call<{ asserted_by: string }>(
      'PUT',
      `/v1/personas/claimed/fields/${key}`,
      field('written by the hub itself'),
    );
    expect(rewritten.body.asserted_by).toBe('persona');
  });

  it('refuses a time far in the future, or more than a day ahead of this computer\u2019s clock, naming where; a few hours ahead is kept', async () => {
    const engine = await engineOf(target);
    const now = new Date();
    const later = (ms: number) => new Date(now.getTime() + ms).toISOString();
    const attempt = (profile: string, change: (d: ExportDocument) => void) => {
      const d = structuredClone(exported);
      d.persona.profile = profile;
      change(d);
      return importExport(d, engine, { account: subOf(target.owner), limits: LIMITS, now }).then(
        () => 'imported',
        (err: unknown) => (err instanceof ImportRefused ? err.message : `not a refusal: ${String(err)}`),
      );
    };
    try {
      const cases: [string, (d: ExportDocument) => void, string][] = [
        ['year-9999', (d) => (d.notes[2]!.written_at = '9999-12-31T23:59:59.000Z'), 'notes[2].written_at'],
        ['past-9999', (d) => (d.fields[1]!.updated_at = '+275760-09-13T00:00:00.000Z'), 'fields[1].updated_at'],
        ['two-days', (d) => (d.persona.created_at = later(2 * 86_400_000)), 'persona.created_at'],
      ];
      for (const [profile, change, where] of cases) {
        const said = await attempt(profile, change);
        expect(said, profile).toMatch(/^Nothing was imported/);
        expect(said).toContain(where);
        expect(said).toContain('no later than a day after this computer');
        expect((await target.owner.call('GET', `/v1/personas/${profile}`)).status).toBe(404);
      }
      expect(await attempt('hours-ahead', (d) => (d.notes[0]!.revised_at = later(3 * 3_600_000)))).toBe('imported');
    } finally {
      await engine.close();
    }
  });

  it('reads an export file however it is spaced and escaped, and refuses a file whose frame is not JSON', async () => {
    const odd = structuredClone(exported);
    odd.persona.profile = 'spaced';
    odd.notes[0]!.content = 'Quotes " and \\" and brackets ] } [ { inside, a backslash at the end \\';
    odd.fields[0]!.value = { '"]},{': ['\\', '\u00e9t\u00e9', 1.5e-7, -0.5, null, true, [[[]]], {}] };
    const asciiOnly = JSON.stringify(odd, null, '\t').replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    const spacedFile = join(folder, 'spaced.json');
    // More whitespace around every comma and colon outside strings (a quote not escaped toggles being inside one).
    let inString = false;
    let spaced = ' \r\n';
    for (const [i, ch] of [...asciiOnly].entries()) {
      if (ch === '"' && !/(^|[^\\])(\\\\)*\\$/.test(asciiOnly.slice(Math.max(0, i - 64), i))) inString = !inString;
      spaced += !inString && (ch === ',' || ch === ':') ? ` ${ch}\r\n\t ` : ch;
    }
    writeFileSync(spacedFile, `${spaced}\n\n`);
    const run = await cli(['import', spacedFile, '--account', subOf(target.owner)], targetEnv(target));
    expect(run.exitCode, run.stderr).toBe(0);
    const read = await wholeExport(target.owner, 'spaced');
    // (Its notes got new ids: the same export was imported into this database before.)
    expect(read.notes.map((n) => n.content)).toContain(odd.notes[0]!.content);
    expect(read.fields.find((f) => f.key === odd.fields[0]!.key)?.value).toEqual(odd.fields[0]!.value);

    const whole = JSON.stringify({ ...exported, persona: { ...exported.persona, profile: 'broken' } });
    const brace = whole.indexOf('}', whole.indexOf('"notes":['));
    for (const [name, text] of [
      ['trailing text', `${whole} {}`],
      ['two entries without a comma', whole.replace('},{', '} {')],
      ['an unclosed list', whole.slice(0, whole.indexOf('"notes":[') + 20)],
      ['a bracket for a brace', `${whole.slice(0, brace)}]${whole.slice(brace + 1)}`],
      ['an unclosed string', whole.slice(0, whole.lastIndexOf('"'))],
      ['a top that is a list', `[${whole}]`],
    ] as const) {
      const broken = join(folder, 'broken.json');
      writeFileSync(broken, text);
      const refused = await cli(['import', broken, '--account', subOf(target.owner)], targetEnv(target));
      expect(refused.exitCode, name).toBe(1);
      expect(refused.stderr, name).toMatch(/is not JSON|not a persona export/);
    }
    expect((await target.owner.call('GET', '/v1/personas/broken')).status).toBe(404);
  });
});

describe('import for the local account (no --account)', () => {
  it('asks the identity service whose the app\u2019s own credential is, with the data folders laid out as the app lays them out', async () => {
    const root = tempDir('persona-import-local');
    const identity = await startTestIdentity();
    // The app keeps each service's folder side by side in one data folder: identity's session file where the app has it.
    mkdirSync(join(root, 'identity'));
    copyFileSync(join(identity.dataDir, LOCAL_SESSION_FILE), join(root, 'identity', LOCAL_SESSION_FILE));
    const dataDir = join(root, 'persona-store');
    const file = join(root, 'export.json');
    const at = '2026-01-02T03:04:05.000Z';
    writeFileSync(
      file,
      JSON.stringify({
        format: 'persona-export/1',
        persona: {
          profile: 'mine',
          display_name: 'Mine',
          pronouns: null,
          language: null,
          tone: null,
          verbosity: null,
          speaking_style: null,
          created_at: at,
          updated_at: at,
        },
        fields: [
          {
            key: 'colour',
            description: 'favourite',
            value: 'teal',
            value_type: 'string',
            revision: 3,
            source: 'owner',
            asserted_by: 'persona',
            pinned: false,
            created_at: at,
            updated_at: at,
          },
        ],
        notes: [],
        fields_next_after: null,
        notes_next_after: null,
      }),
    );
    try {
      const run = await cli(['import', file], { PERSONA_DATA_DIR: dataDir, ...identity.trust('PERSONA_') });
      expect(run.exitCode, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/importing for the local account .* \(local\)/);
      const store = await startPersonaStore({
        PERSONA_DATA_DIR: dataDir,
        PERSONA_PORT: '0',
        ...identity.trust('PERSONA_'),
        PERSONA_LOG_LEVEL: 'silent',
      });
      try {
        const c = new Client(store.url, await identity.mint(identity.localCredential, 'persona'));
        const colour = await c.call('GET', '/v1/personas/mine/fields/colour');
        expect(colour.body).toMatchObject({
          value: 'teal',
          revision: 3,
          asserted_by: 'import:persona',
          created_at: at,
        });
      } finally {
        await store.close();
      }
      // Without the identity service, it says how to name the account instead.
      const alone = await cli(['import', file], {
        PERSONA_DATA_DIR: join(root, 'elsewhere', 'persona-store'),
        ...identity.trust('PERSONA_'),
      });
      expect(alone.exitCode).toBe(1);
      expect(alone.stderr).toContain('npm run identity -- account list');
    } finally {
      await identity.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
