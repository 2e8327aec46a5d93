import { Kysely, SqliteDialect, sql, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { databaseAnswers, openDatabase, type Migration, type Sqlite } from '../../kit/sqlite.ts';
import { ENTRIES, MIGRATIONS, type EntryTable, type PersonaTables } from '../tables.ts';
import type { Db, Destruction, FullText, PersonaEngine, Recall, Recalled } from './engine.ts';

/** Most distinct statements kept prepared; the store's queries are a fixed set far below it. */
const MAX_STATEMENTS = 256;

/**
 * The SQLite file handed to Kysely with its statements kept: Kysely asks SQLite to prepare every query it
 * runs, so each SQL text is prepared once and reused (the set is fixed by the code, and capped anyway).
 */
function keepingStatements(sqlite: Sqlite): SqliteDatabase & { prepared: () => number } {
  const statements = new Map<string, SqliteStatement>();
  let prepared = 0;
  return {
    prepared: () => prepared,
    prepare(text: string) {
      let statement = statements.get(text);
      if (!statement) {
        prepared++;
        if (statements.size >= MAX_STATEMENTS) statements.delete(statements.keys().next().value!);
        statement = sqlite.prepare(text) as unknown as SqliteStatement;
        statements.set(text, statement);
      }
      return statement;
    },
    close() {
      statements.clear();
    },
  };
}

/** Each FTS5 query word quoted as a phrase (a quote inside doubled), so operators are words to find. */
const matchOf = (words: string[]) => words.map((w) => `"${w.replace(/"/g, '""')}"`).join(' ');

/** Recall of one kind of entry from its FTS5 index: bm25 (FTS5's rank) is lower for better matches; the answer's score is its negation. */
function recallFrom<T extends EntryTable>(table: T): Recall<T> {
  const index = sql.table(`${table}_fts`);
  const rowId = sql.ref(`e.${ENTRIES[table].rowId}`);
  return async (db, words, account, personaId, limit) => {
    const { rows } = await sql<Recalled<T>>`SELECT e.*, p.profile AS profile, -fts.rank AS score FROM ${index} fts
      JOIN ${sql.table(table)} e ON ${rowId} = fts.rowid JOIN personas p ON p.id = e.persona_id
      WHERE ${index} MATCH ${matchOf(words)} AND p.account = ${account} AND (${personaId} IS NULL OR e.persona_id = ${personaId}) AND e.state = 'live'
      ORDER BY fts.rank LIMIT ${limit}`.execute(db);
    return rows;
  };
}

/** FTS5 with the porter stemmer, contentless: entries leave through its 'delete' command with the text they were indexed with. */
const fts5: FullText = {
  // The index is a table of its own: nothing on the rows.
  fieldColumns: () => ({}),
  noteColumns: () => ({}),
  async indexField(db, row, [key, description, value]) {
    await sql`INSERT INTO fields_fts (rowid, key, description, value) VALUES (${row.id}, ${key}, ${description}, ${value})`.execute(
      db,
    );
  },
  async unindexField(db, row, [key, description, value]) {
    await sql`INSERT INTO fields_fts (fields_fts, rowid, key, description, value) VALUES ('delete', ${row.id}, ${key}, ${description}, ${value})`.execute(
      db,
    );
  },
  async indexNote(db, row) {
    await sql`INSERT INTO notes_fts (rowid, content) VALUES (${row.seq}, ${row.content})`.execute(db);
  },
  async unindexNote(db, row) {
    await sql`INSERT INTO notes_fts (notes_fts, rowid, content) VALUES ('delete', ${row.seq}, ${row.content})`.execute(
      db,
    );
  },
  recallFields: recallFrom('fields'),
  recallNotes: recallFrom('notes'),
};

/**
 * Destroyed rows are deleted with `PRAGMA secure_delete` on (what they occupied is zeroed); both FTS5
 * indexes are merged into one segment each in the same transaction, which drops every deleted entry's
 * terms of every revision; then the WAL is checkpointed with TRUNCATE (see the README).
 */
function sqliteDestruction(sqlite: Sqlite): Destruction {
  return {
    async inTransaction(db) {
      await sql`INSERT INTO fields_fts (fields_fts) VALUES ('optimize')`.execute(db);
      await sql`INSERT INTO notes_fts (notes_fts) VALUES ('optimize')`.execute(db);
    },
    async afterCommit() {
      sqlite.pragma('wal_checkpoint(TRUNCATE)');
    },
  };
}

/** The tables as SQLite has them (tables.ts). */
export const sqliteMigrations: Migration[] = MIGRATIONS.sqlite.map((text) => (sqlite) => sqlite.exec(text));

/** The embedded default: one SQLite file in the data folder, the only writer of it. */
export function openSqliteEngine(file: string): PersonaEngine & { readonly sqlite: Sqlite } {
  const database = openDatabase<PersonaTables>(file, sqliteMigrations);
  const sqlite = database.sqlite;
  // Freed pages are zeroed, so destroyed content does not linger in the file.
  sqlite.pragma('secure_delete = ON');
  const kept = keepingStatements(sqlite);
  const db = new Kysely<PersonaTables>({ dialect: new SqliteDialect({ database: kept }) });
  return {
    name: 'sqlite',
    sqlite,
    db,
    fullText: fts5,
    destruction: sqliteDestruction(sqlite),
    // IMMEDIATE takes the write lock at BEGIN, so a write never reads a state another write is changing.
    write: (fn) =>
      db.connection().execute(async (conn) => {
        await sql`BEGIN IMMEDIATE`.execute(conn);
        try {
          const result = await fn(conn);
          await sql`COMMIT`.execute(conn);
          return result;
        } catch (err) {
          if (sqlite.inTransaction) await sql`ROLLBACK`.execute(conn);
          throw err;
        }
      }),
    writesInOneStatement: false,
    lockForWrite: (query) => query,
    accountOf: (sub) => sub,
    isUniqueViolation: (err) => (err as { code?: string } | undefined)?.code === 'SQLITE_CONSTRAINT_UNIQUE',
    answers: async () => databaseAnswers(sqlite),
    preparedStatements: () => kept.prepared(),
    async close() {
      await db.destroy();
      await database.close();
    },
  } satisfies PersonaEngine & { sqlite: Sqlite } as PersonaEngine & { sqlite: Sqlite };
}

export type { Db };
