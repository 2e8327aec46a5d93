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

  it('an export file imported by the command line reads back the same, entries with their provenance, revisions and times; the log starts at the import', async () => {
    const run = await cli(['import', file, '--account', subOf(target.owner)], targetEnv(target));
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain('imported "atlas"');
    expect(run.stdout).toContain('5 field(s), 6 note(s)');

    expect(await wholeExport(target.owner, 'atlas')).toEqual(exported);
    const block = await target.owner.call('GET', '/v1/personas/atlas');
    expect(block.body).toEqual((await source.owner.call('GET', '/v1/personas/atlas')).body);
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
    expect(new Set(events.map((e) => e.asserted_by))).toEqual(new Set(['persona-store']));
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
    expect(copy.fields).toEqual(exported.fields);
    expect(copy.persona).toEqual({ ...exported.persona, profile: 'second-copy' });
    const strip = (notes: Record<string, unknown>[]) => notes.map(({ id: _id, ...rest }) => rest);
    expect(strip(copy.notes)).toEqual(strip(exported.notes));
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
        expect(colour.body).toMatchObject({ value: 'teal', revision: 3, asserted_by: 'persona', created_at: at });
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
