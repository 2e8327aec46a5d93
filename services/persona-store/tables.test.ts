import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test/support/postgres.ts';
import { tempDir } from '../../test/support/identity.ts';
import { openPostgresEngine } from './engines/postgres.ts';
import { openSqliteEngine } from './engines/sqlite.ts';
import { MIGRATIONS, TABLES } from './tables.ts';
import { loadPersonaConfig } from './config.ts';
import { Personas } from './personas.ts';
import { fieldIndexText } from './recall.ts';
import { deploymentPolicy } from './settings.ts';
import { PersonaSql } from './store.ts';

/**
 * The tables are defined once (tables.ts) and rendered per engine: both engines must end up with the
 * same columns in the same order (PostgreSQL's `search` besides) and the same indexes, and the schema
 * versions existing databases carry must stay what they are.
 */
const names = Object.keys(TABLES) as (keyof typeof TABLES)[];
const columns = (table: keyof typeof TABLES) => Object.keys(TABLES[table].columns);
const indexes = (table: keyof typeof TABLES) => TABLES[table].indexes.map((index) => index.split(' ')[0]!);

describe('the tables on SQLite', () => {
  it('has every column of the definition in order, its indexes, and the latest schema version', async () => {
    const engine = openSqliteEngine(join(tempDir('tables'), 'persona-store.db'));
    try {
      for (const table of names) {
        const info = engine.sqlite.pragma(`table_info(${table})`) as { name: string }[];
        expect(
          info.map((c) => c.name),
          table,
        ).toEqual(columns(table));
        const made = (engine.sqlite.pragma(`index_list(${table})`) as { name: string; origin: string }[])
          .filter((i) => i.origin === 'c')
          .map((i) => i.name);
        expect(made.sort(), table).toEqual(indexes(table).sort());
      }
      expect(engine.sqlite.pragma('user_version', { simple: true })).toBe(MIGRATIONS.sqlite.length);
    } finally {
      await engine.close();
    }
  });

  it('a file of schema 1 with rows in it is migrated: the live counts are counted from its rows', async () => {
    const file = join(tempDir('tables'), 'persona-store.db');
    const old = new Database(file);
    old.exec(MIGRATIONS.sqlite[0]!);
    old.pragma('user_version = 1');
    old
      .prepare(
        `INSERT INTO personas (id, account, profile, display_name, created_at, updated_at) VALUES (1, 'a', 'p', 'P', 't', 't')`,
      )
      .run();
    const field = old.prepare(
      `INSERT INTO fields (persona_id, key, description, value, value_type, revision, source, asserted_by, pinned, state, created_at, updated_at) VALUES (1, ?, 'd', '1', 'number', 1, 's', 'x', 0, ?, 't', 't')`,
    );
    field.run('one', 'live');
    field.run('two', 'live');
    field.run('three', 'kept');
    old.close();
    const engine = openSqliteEngine(file);
    try {
      const persona = await engine.db
        .selectFrom('personas')
        .select(['live_fields', 'live_notes'])
        .executeTakeFirstOrThrow();
      expect(persona).toEqual({ live_fields: 2, live_notes: 0 });
      await engine.db.updateTable('fields').set({ state: 'kept' }).where('key', '=', 'one').execute();
      expect((await engine.db.selectFrom('personas').select('live_fields').executeTakeFirstOrThrow()).live_fields).toBe(
        1,
      );
      expect(engine.sqlite.pragma('user_version', { simple: true })).toBe(MIGRATIONS.sqlite.length);
    } finally {
      await engine.close();
    }
  });
  it('a file of schema 2 is migrated: recall finds its live entries in their own persona, and they still leave the index', async () => {
    const file = join(tempDir('tables'), 'persona-store.db');
    const old = new Database(file);
    old.exec(MIGRATIONS.sqlite[0]!);
    old.exec(MIGRATIONS.sqlite[1]!);
    old.pragma('user_version = 2');
    const persona = old.prepare(
      `INSERT INTO personas (id, account, profile, display_name, created_at, updated_at) VALUES (?, 'a', ?, 'P', 't', 't')`,
    );
    persona.run(1, 'ada');
    persona.run(2, 'bob');
    const fields = [
      { id: 1, persona_id: 1, key: 'colour', description: 'favourite colour', value: '{"hue":"teal"}', state: 'live' },
      { id: 2, persona_id: 2, key: 'colour', description: 'favourite colour', value: '"teal"', state: 'live' },
      { id: 3, persona_id: 1, key: 'old_colour', description: 'favourite colour', value: '"teal"', state: 'kept' },
    ];
    for (const f of fields) {
      old
        .prepare(
          `INSERT INTO fields (id, persona_id, key, description, value, value_type, revision, source, asserted_by, pinned, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'string', 1, 'assistant', 'persona', 0, ?, 't', 't')`,
        )
        .run(f.id, f.persona_id, f.key, f.description, f.value, f.state);
      // Schema 2 numbered an entry in its index by its own row id alone.
      if (f.state === 'live')
        old
          .prepare('INSERT INTO fields_fts (rowid, key, description, value) VALUES (?, ?, ?, ?)')
          .run(f.id, ...fieldIndexText(f));
    }
    const notes = [
      { seq: 1, persona_id: 2, content: 'teal lanterns by the harbour', state: 'live' },
      { seq: 2, persona_id: 1, content: 'teal lanterns at dusk', state: 'live' },
      { seq: 3, persona_id: 1, content: 'teal lanterns forgotten', state: 'kept' },
    ];
    for (const n of notes) {
      old
        .prepare(
          `INSERT INTO notes (seq, id, persona_id, kind, content, revision, source, asserted_by, pinned, state, written_at, revised_at) VALUES (?, ?, ?, 'observation', ?, 1, 'assistant', 'persona', 0, ?, 't', 't')`,
        )
        .run(n.seq, `note-${n.seq}`, n.persona_id, n.content, n.state);
      if (n.state === 'live') old.prepare('INSERT INTO notes_fts (rowid, content) VALUES (?, ?)').run(n.seq, n.content);
    }
    old.close();
    const engine = openSqliteEngine(file);
    try {
      expect(engine.sqlite.pragma('user_version', { simple: true })).toBe(MIGRATIONS.sqlite.length);
      const personas = new Personas(new PersonaSql(engine), {
        maxValueBytes: 16384,
        maxNoteChars: 8000,
        maxKeyLength: 64,
      });
      const found = async (profile: string | undefined) => {
        const r = await personas.recall('a', profile, 'teal', 10);
        return { fields: r.fields.map((f) => `${f.profile}/${f.key}`), notes: r.notes.map((n) => n.id) };
      };
      expect(await found('ada')).toEqual({ fields: ['ada/colour'], notes: ['note-2'] });
      expect(await found('bob')).toEqual({ fields: ['bob/colour'], notes: ['note-1'] });
      const all = await found(undefined);
      expect(all.fields.sort()).toEqual(['ada/colour', 'bob/colour']);
      expect(all.notes.sort()).toEqual(['note-1', 'note-2']);
      // Each entry leaves the migrated index with the text and number it was put there with.
      const policy = { ...deploymentPolicy(loadPersonaConfig({})), forgetMode: 'keep' as const };
      const principal = { account: 'a', audience: 'persona', token: '' };
      await personas.forgetField(principal, policy, 'ada', 'colour');
      await personas.forgetNote(principal, policy, 'ada', 'note-2');
      expect(await found('ada')).toEqual({ fields: [], notes: [] });
      expect(await found('bob')).toEqual({ fields: ['bob/colour'], notes: ['note-1'] });
      for (const fts of ['fields_fts', 'notes_fts'])
        expect(() =>
          engine.sqlite.exec(`INSERT INTO ${fts} (${fts}, rank) VALUES ('integrity-check', 0)`),
        ).not.toThrow();
    } finally {
      await engine.close();
    }
  });
});

describe('the change log\u2019s via (the third migration)', () => {
  it('a file of schema 2 keeps its entries, each with via null (not known), and takes new ones with it', async () => {
    const file = join(tempDir('tables'), 'persona-store.db');
    const old = new Database(file);
    old.exec(MIGRATIONS.sqlite[0]!);
    old.exec(MIGRATIONS.sqlite[1]!);
    old.pragma('user_version = 2');
    old
      .prepare(
        `INSERT INTO events (account, profile, at, action, target_kind, target, asserted_by, source, changes) VALUES ('a', 'p', 't', 'field_set', 'field', 'k', 'persona', 'owner', '[]')`,
      )
      .run();
    old.close();
    const engine = openSqliteEngine(file);
    try {
      expect(await engine.db.selectFrom('events').select(['target', 'via']).execute()).toEqual([
        { target: 'k', via: null },
      ]);
      expect(MIGRATIONS.sqlite).toHaveLength(4);
      expect(engine.sqlite.pragma('user_version', { simple: true })).toBe(4);
    } finally {
      await engine.close();
    }
  });
});

const unavailable = postgresUnavailable();
if (unavailable) console.warn(`the tables on PostgreSQL skipped: ${unavailable}`);

describe.skipIf(unavailable !== undefined)('the tables on PostgreSQL', () => {
  let server: PostgresServer | undefined;
  afterAll(async () => server?.stop());

  it('has every column of the definition in order (and the tsvector of searched tables), its indexes, and the latest schema version', async () => {
    server = await startPostgres();
    const engine = await openPostgresEngine({
      url: await server.createDatabase(),
      poolSize: 2,
      ssl: false,
      connectTimeoutMs: 30_000,
    });
    try {
      for (const table of names) {
        const { rows } = await sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
          WHERE table_schema = current_user AND table_name = ${table} ORDER BY ordinal_position`.execute(engine.db);
        expect(
          rows.map((r) => r.name),
          table,
        ).toEqual([...columns(table), ...(TABLES[table].searched ? ['search'] : [])]);
        const made = await sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes
          WHERE schemaname = current_user AND tablename = ${table} AND indexdef LIKE 'CREATE INDEX%'`.execute(
          engine.db,
        );
        expect(made.rows.map((r) => r.name).sort(), table).toEqual(
          [...indexes(table), ...(TABLES[table].searched ? [`${table}_search`] : [])].sort(),
        );
      }
      const { rows } = await sql<{ version: number }>`SELECT version FROM persona_schema`.execute(engine.db);
      expect(rows).toEqual([{ version: MIGRATIONS.postgres.length }]);
    } finally {
      await engine.close();
    }
  });
});
