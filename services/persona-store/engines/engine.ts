import type { Compilable, Kysely, RawBuilder, SelectQueryBuilder } from 'kysely';
import type { EngineName, EntryRow, EntryTable, FieldRow, NoteRow, PersonaTables, TableName } from '../tables.ts';

/** A handle on the tables: the engine's Kysely instance, or one transaction of it. */
export type Db = Kysely<PersonaTables>;

/** An entry recall found: its row, its persona's profile, and its score (higher is better). */
export type Recalled<T extends EntryTable> = EntryRow<T> & { profile: string; score: number };
export type RecalledField = Recalled<'fields'>;
export type RecalledNote = Recalled<'notes'>;

/** What recall found of one kind of entry: the hits, best first, and whether more matched than were ranked. */
export interface RecallHits<T extends EntryTable> {
  hits: Recalled<T>[];
  /** More than `candidates` entries matched: the newest `candidates` of them were ranked (recall.ts). */
  capped: boolean;
}

/**
 * What FullText's recall of one kind of entry does: of the live entries holding every word, of one persona
 * or of all the account's, the newest `candidates` (by row id) are ranked, and the best `limit` answered,
 * best first (ties: the older first).
 */
export type Recall<T extends EntryTable> = (
  db: Db,
  words: string[],
  account: string,
  personaId: number | null,
  limit: number,
  candidates: number,
) => Promise<RecallHits<T>>;

/** A field's text as the index takes it: key, description, value. */
export type FieldText = [key: string, description: string, value: string];

/** Columns a statement that writes a row sets besides the row's own (see FullText.fieldColumns). */
export type IndexColumns = Record<string, RawBuilder<unknown>>;

/**
 * Full-text search, the part of recall only the engine knows (FTS5 on SQLite, tsvector on PostgreSQL).
 * Only live entries are indexed. Every statement that writes a field or note row sets the columns
 * `fieldColumns`/`noteColumns` give, and the store then calls index/unindex: PostgreSQL keeps the index on
 * the row (its tsvector, set in that same statement, so a write is one statement and one row version) and
 * has nothing more to do; SQLite's FTS5 index is a table of its own, which index/unindex keep (un-indexing
 * must be given the row as it was indexed).
 */
export interface FullText {
  /** Whether index/unindex do anything (SQLite's FTS5 tables): a bulk write then needs its rows back to index them. */
  readonly indexesAfterWrite: boolean;
  fieldColumns(state: FieldRow['state'], text: () => FieldText): IndexColumns;
  noteColumns(state: NoteRow['state'], content: string): IndexColumns;
  indexField(db: Db, row: FieldRow, text: FieldText): Promise<void>;
  unindexField(db: Db, row: FieldRow, text: FieldText): Promise<void>;
  indexNote(db: Db, row: NoteRow): Promise<void>;
  unindexNote(db: Db, row: NoteRow): Promise<void>;
  recallFields: Recall<'fields'>;
  recallNotes: Recall<'notes'>;
}

/**
 * How destroyed content leaves the bytes the engine keeps. `inTransaction` runs in the transaction that
 * destroyed something; `afterCommit` once it committed, and the request answers only after it finished.
 */
export interface Destruction {
  inTransaction(db: Db): Promise<void>;
  afterCommit(): Promise<void>;
}

/** One engine: the query layer (Kysely) over its database, and the few things only it can do. */
export interface PersonaEngine {
  readonly name: EngineName;
  readonly db: Db;
  readonly fullText: FullText;
  readonly destruction: Destruction;
  /**
   * Runs `fn` as one write transaction. Writes to one persona never interleave: SQLite takes the file's
   * write lock at BEGIN; PostgreSQL locks the persona's row (`lockForWrite`) before the write reads anything.
   */
  write<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /**
   * Whether one statement can carry a second write as a data-modifying CTE (PostgreSQL; SQLite has none):
   * then a row's write and its change-log entry go to the database as one statement, one round trip.
   */
  readonly writesInOneStatement: boolean;
  /**
   * Sends `statements` (reads) at once inside `write` and answers their rows in order: PostgreSQL takes them
   * in one round trip and runs each after the one before it (a read after a lock sees what the write it
   * waited for committed); SQLite runs them one after another.
   */
  together(db: Db, statements: Compilable[]): Promise<unknown[][]>;
  /**
   * Writes many rows of a table in one statement, the searched tables' tsvector set as a write sets it
   * (PostgreSQL, for a bulk write); absent where rows go in through Kysely and are indexed after (SQLite).
   */
  insertRows?(db: Db, table: TableName, rows: Record<string, unknown>[]): Promise<void>;
  /** Round trips to the database so far (PostgreSQL; statements sent together count once); SQLite has none. */
  roundTrips(): number;
  /** Makes a read of the persona row inside `write` hold that row until the transaction ends. */
  lockForWrite<O>(
    query: SelectQueryBuilder<PersonaTables, 'personas', O>,
  ): SelectQueryBuilder<PersonaTables, 'personas', O>;
  /**
   * The account a token's `sub` keeps its rows under: the sub itself, or on PostgreSQL the name
   * PERSONA_SHARED_ACCOUNTS gives it, which the person's other machines give their own account too.
   */
  accountOf(sub: string): string;
  /** Whether an error is a unique constraint that another writer won (a concurrent create on PostgreSQL). */
  isUniqueViolation(err: unknown): boolean;
  /** For /ready. */
  answers(): Promise<boolean>;
  /** Statements the engine keeps prepared (bounded whatever requests come). */
  preparedStatements(): number;
  close(): Promise<void>;
}
