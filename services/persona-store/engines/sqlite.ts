import { Kysely, SqliteDialect, sql, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { databaseAnswers, openDatabase, type Migration, type Sqlite } from '../../kit/sqlite.ts';
import { fieldIndexText } from '../recall.ts';
import {
  columnsOf,
  ENTRIES,
  FTS_PERSONA_SPAN,
  MIGRATIONS,
  type EntryTable,
  type FieldRow,
  type PersonaTables,
} from '../tables.ts';
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
        statement = sqlite.prepare(text);
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

/** The low bits of an index entry's number: the entry's own row id (see FTS_PERSONA_SPAN). */
const OWN = sql.lit(FTS_PERSONA_SPAN - 1);
const SPAN = sql.lit(FTS_PERSONA_SPAN);

/**
 * A JavaScript number as SQLite's INTEGER: better-sqlite3 binds numbers as REAL, and FTS5 reads a rowid
 * bound only when it is an INTEGER (a REAL one is ignored, and the whole term is read).
 */
const integer = (value: number) => sql<number>`CAST(${value} AS INTEGER)`;

/** The first number of a persona's range in an FTS5 index, computed by SQLite (64-bit). */
const rangeOf = (personaId: number) => sql<number>`${integer(personaId)} * ${SPAN}`;

/** An entry's number in its FTS5 index: its persona's range, then its own row id. */
function ftsRowId(personaId: number, rowId: number) {
  // Past 2^32 entries of one kind, numbers would run into the next persona's range: refused, never mixed.
  if (rowId >= FTS_PERSONA_SPAN || personaId >= 2 ** 31)
    throw new Error(`the full-text index numbers at most ${FTS_PERSONA_SPAN} entries of each kind`);
  return sql<number>`${rangeOf(personaId)} + ${integer(rowId)}`;
}

/**
 * Recall of one kind of entry from its FTS5 index, in two statements. First the newest `candidates + 1`
 * matches of the scope, without ranking (one range of the index for a persona, the span of the account's
 * personas for all of them): more than `candidates` caps the ranking at the newest `candidates`. Then
 * bm25 (FTS5's rank, lower is better; the answer's score is its negation) over those alone, best first,
 * ties the older first. Every row is held to the account by the join, whatever range was read.
 */
function recallFrom<T extends EntryTable>(table: T): Recall<T> {
  const index = sql.table(`${table}_fts`);
  const rowId = sql.ref(`e.${ENTRIES[table].rowId}`);
  const columns = sql.join(columnsOf(table).map((c) => sql.ref(`e.${c}`)));
  return async (db, words, account, personaId, limit, candidates) => {
    const match = matchOf(words);
    const scope = (
      await sql<{ first: number | null; last: number | null }>`SELECT min(id) AS first, max(id) AS last FROM personas
        WHERE account = ${account} AND (${personaId} IS NULL OR id = ${personaId})`.execute(db)
    ).rows[0];
    if (!scope || scope.first === null || scope.last === null) return { hits: [], capped: false };
    const from = rangeOf(scope.first);
    const to = sql`${rangeOf(scope.last)} + ${OWN}`;
    // One persona's range is in the order of its entries' own ids already (FTS5 reads it backwards and stops);
    // a span of several personas is not, so its matches are sorted by their own ids.
    const { rows: newest } = await sql<{ own: number }>`SELECT rowid & ${OWN} AS own FROM ${index}
      WHERE ${index} MATCH ${match} AND rowid BETWEEN ${from} AND ${to}
        AND (rowid >> 32) IN (SELECT id FROM personas WHERE account = ${account})
      ORDER BY ${sql.raw(personaId === null ? 'own' : 'rowid')} DESC LIMIT ${candidates + 1}`.execute(db);
    if (newest.length === 0) return { hits: [], capped: false };
    const capped = newest.length > candidates;
    const oldest = capped ? newest[candidates - 1]!.own : 0;
    const { rows } = await sql<
      Recalled<T>
    >`SELECT ${columns}, p.profile AS profile, -fts.rank AS score FROM ${index} fts
      JOIN ${sql.table(table)} e ON ${rowId} = (fts.rowid & ${OWN}) JOIN personas p ON p.id = e.persona_id
      WHERE ${index} MATCH ${match} AND fts.rowid BETWEEN ${from} + ${integer(oldest)} AND ${to} AND (fts.rowid & ${OWN}) >= ${oldest}
        AND e.persona_id = (fts.rowid >> 32) AND p.account = ${account} AND e.state = 'live'
      ORDER BY fts.rank, ${rowId} LIMIT ${limit}`.execute(db);
    return { hits: rows, capped };
  };
}

/** FTS5 with the porter stemmer, contentless: entries leave through its 'delete' command with the text they were indexed with. */
const fts5: FullText = {
  // The index is a table of its own: nothing on the rows.
  indexesAfterWrite: true,
  fieldColumns: () => ({}),
  noteColumns: () => ({}),
  async indexField(db, row, [key, description, value]) {
    await sql`INSERT INTO fields_fts (rowid, key, description, value) VALUES (${ftsRowId(row.persona_id, row.id)}, ${key}, ${description}, ${value})`.execute(
      db,
    );
  },
  async unindexField(db, row, [key, description, value]) {
    await sql`INSERT INTO fields_fts (fields_fts, rowid, key, description, value) VALUES ('delete', ${ftsRowId(row.persona_id, row.id)}, ${key}, ${description}, ${value})`.execute(
      db,
    );
  },
  async indexNote(db, row) {
    await sql`INSERT INTO notes_fts (rowid, content) VALUES (${ftsRowId(row.persona_id, row.seq)}, ${row.content})`.execute(
      db,
    );
  },
  async unindexNote(db, row) {
    await sql`INSERT INTO notes_fts (notes_fts, rowid, content) VALUES ('delete', ${ftsRowId(row.persona_id, row.seq)}, ${row.content})`.execute(
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

/** The third migration made the FTS5 indexes anew: the live fields go back in, their text computed as a write computes it. */
function indexLiveFields(sqlite: Sqlite): void {
  const add = sqlite.prepare(
    `INSERT INTO fields_fts (rowid, key, description, value) VALUES (? * ${FTS_PERSONA_SPAN} + ?, ?, ?, ?)`,
  );
  const page = sqlite.prepare(`SELECT * FROM fields WHERE state = 'live' AND id > ? ORDER BY id LIMIT 1000`);
  for (let rows = page.all(0) as FieldRow[]; rows.length > 0; rows = page.all(rows.at(-1)!.id) as FieldRow[]) {
    for (const row of rows) add.run(row.persona_id, row.id, ...fieldIndexText(row));
  }
}

/** What a migration does besides its SQL (tables.ts), by its number. */
const ALSO: Partial<Record<number, (sqlite: Sqlite) => void>> = { 4: indexLiveFields };

/** The tables as SQLite has them (tables.ts). */
export const sqliteMigrations: Migration[] = MIGRATIONS.sqlite.map((text, i) => (sqlite) => {
  sqlite.exec(text);
  ALSO[i + 1]?.(sqlite);
});

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
    together: async (db, statements) => {
      const rows: unknown[][] = [];
      for (const s of statements) rows.push((await db.executeQuery(s.compile())).rows as unknown[]);
      return rows;
    },
    roundTrips: () => 0,
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
