import { createHash } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect, sql, type Compilable, type RawBuilder } from 'kysely';
import pg from 'pg';
import { ConfigError } from '../../kit/config.ts';
import { problem } from '../../kit/problem.ts';
import { fieldIndexText } from '../recall.ts';
import {
  columnsOf,
  ENTRIES,
  MIGRATIONS as ALL_MIGRATIONS,
  postgresTypes,
  type EntryTable,
  type PersonaTables,
  type TableName,
} from '../tables.ts';
import type { Db, Destruction, FieldText, FullText, PersonaEngine, Recall, Recalled } from './engine.ts';

/** The tables as PostgreSQL has them (tables.ts): in the login's own schema (see migrate). */
const MIGRATIONS = ALL_MIGRATIONS.postgres;

/**
 * Applies pending migrations once, whichever copy of the app starts first (an advisory lock serialises
 * them). The tables live in a schema named after the login of PERSONA_DATABASE_URL (search_path is
 * "$user"): a person's computers use one login and share it; two people sharing a server each have a
 * login of their own, so their rows are apart whatever their accounts are called, and PostgreSQL's
 * privileges keep them apart too (see the README, "Accounts across machines").
 */
async function migrate(db: Kysely<PersonaTables>): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext('persona-store schema ' || current_user))`.execute(tx);
    const { rows: schemas } = await sql<{
      login: string;
      present: boolean;
    }>`SELECT current_user AS login, EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = current_user) AS present`.execute(
      tx,
    );
    const { login, present } = schemas[0]!;
    if (!present) {
      try {
        await sql`CREATE SCHEMA AUTHORIZATION CURRENT_USER`.execute(tx);
      } catch (err) {
        if ((err as { code?: string }).code !== '42501') throw err;
        throw new ConfigError(
          `the login "${login}" of PERSONA_DATABASE_URL may not create its schema in this database; ask the server's operator to run CREATE SCHEMA "${login}" AUTHORIZATION "${login}", or to grant it CREATE on the database.`,
        );
      }
    }
    await sql`CREATE TABLE IF NOT EXISTS persona_schema (version INTEGER NOT NULL)`.execute(tx);
    const { rows } = await sql<{ version: number }>`SELECT version FROM persona_schema`.execute(tx);
    const current = rows[0]?.version ?? 0;
    if (current > MIGRATIONS.length) {
      throw new ConfigError(
        `the database is from a newer version (schema ${current}, this build knows ${MIGRATIONS.length}); update the app.`,
      );
    }
    for (let i = current; i < MIGRATIONS.length; i++) await sql.raw(MIGRATIONS[i]!).execute(tx);
    if (rows.length === 0) await sql`INSERT INTO persona_schema (version) VALUES (${MIGRATIONS.length})`.execute(tx);
    else await sql`UPDATE persona_schema SET version = ${MIGRATIONS.length}`.execute(tx);
  });
}

/**
 * The text PostgreSQL indexes and searches: runs of letters, digits and marks, everything else a space,
 * as FTS5's unicode61 tokenizer splits. PostgreSQL's own parser would keep "foo-bar", URLs, e-mail
 * addresses and paths as tokens of their own (so "bar" would not find "foo-bar"), and cannot take NUL.
 */
export const wordsOf = (text: string): string => text.replace(/[^\p{L}\p{N}\p{M}]+/gu, ' ');

/** Stemmed full text in persona_text; the key weighs most, then the description, then the value. */
const fieldVector = (key: RawBuilder<unknown>, description: RawBuilder<unknown>, value: RawBuilder<unknown>) =>
  sql`setweight(to_tsvector('persona_text', ${key}), 'A') || setweight(to_tsvector('persona_text', ${description}), 'B') || to_tsvector('persona_text', ${value})`;
const FIELD_VECTOR = ([key, description, value]: FieldText) =>
  fieldVector(sql`${wordsOf(key)}`, sql`${wordsOf(description)}`, sql`${wordsOf(value)}`);
const noteVector = (content: RawBuilder<unknown>) => sql`to_tsvector('persona_text', ${content})`;

/**
 * The query: every word a phrase of its own pieces (phraseto_tsquery, which reads no operator), all
 * of them required, as the quoted phrases of FTS5.
 */
const QUERY = (words: string[]) =>
  sql.join(
    words.map((w) => sql`phraseto_tsquery('persona_text', ${wordsOf(w)})`),
    sql` && `,
  );

/** Entries of a persona a recall of notes looks at first to tell a word in most of them (see recallFrom). */
const PROBE = 100;

/** The row id of a persona's n-th newest live note, or NULL when it has fewer (an index-only scan of notes_by_persona). */
const nthNewestNote = (personaId: number, n: number) =>
  sql<
    number | null
  >`(SELECT seq FROM notes WHERE persona_id = ${personaId} AND state = 'live' ORDER BY seq DESC OFFSET ${n - 1} LIMIT 1)`;

/**
 * The persona's live notes from row id `from` on, as notes_by_persona holds them: the row comparison is one
 * only that index can read as a range (read by seq alone, the whole table would be walked for an old persona).
 */
const newestOf = (personaId: number, from: RawBuilder<unknown>) =>
  sql`e.persona_id = ${personaId} AND e.state = 'live' AND (e.persona_id, e.state, e.seq) >= (${personaId}::bigint, 'live', ${from})`;

/** What a recall's `matches` hold of each match: the entry's columns, its persona's profile, its tsvector. */
const matched = (table: EntryTable) =>
  sql`${sql.join(columnsOf(table).map((c) => sql.ref(`e.${c}`)))}, p.profile AS profile, e.search`;

/**
 * The end of a recall statement: of `matches` (see matched; the newest first, at most `candidates + 1`,
 * all of the caller's account), the newest `candidates` ranked by ts_rank_cd (higher is better), the best
 * `limit` answered, best first, ties the older first; `capped` when `matches` holds more. Only when
 * `answer` holds (else no row).
 */
function ranked(table: EntryTable, limit: number, candidates: number, answer = sql`TRUE`) {
  const rowId = sql.ref(`m.${ENTRIES[table].rowId}`);
  return sql`SELECT ${sql.join(columnsOf(table).map((c) => sql.ref(`m.${c}`)))}, m.profile, ts_rank_cd(m.search, query.q) AS score,
      (SELECT count(*) FROM matches) > ${candidates} AS capped
    FROM (SELECT * FROM matches ORDER BY ${sql.ref(ENTRIES[table].rowId)} DESC LIMIT ${candidates}) m, query
    WHERE ${answer}
    ORDER BY score DESC, ${rowId} LIMIT ${limit}`;
}

/** A ranked row without its `capped` column: recall answers that once, beside the hits. */
function hitOf<Hit extends object>(row: Hit & { capped: boolean }): Hit {
  const hit: Hit & { capped?: boolean } = { ...row };
  delete hit.capped;
  return hit;
}

/**
 * Recall of one kind of entry by its tsvector: the newest `candidates + 1` matches of the scope, more than
 * `candidates` capping the ranking at the newest `candidates` (see ranked). The GIN index finds the matches,
 * but a word in most entries is most of the index and of the rows: so for the notes of one persona, the
 * newest PROBE notes are read first, and where most of them match, the newest 3 x `candidates` notes are
 * read through notes_by_persona instead (ts_match_vq, which no index answers): when they hold more than
 * `candidates` matches (or are all the persona's notes), those are the newest matches, and the GIN index
 * is not read at all. The answer is the same either way.
 */
function recallFrom<T extends EntryTable>(table: T): Recall<T> {
  const rowId = sql.ref(`e.${ENTRIES[table].rowId}`);
  return async (db, words, account, personaId, limit, candidates) => {
    type Row = Recalled<T> & { capped: boolean };
    const answer = (rows: Row[]) => ({
      hits: rows.map(hitOf),
      capped: rows[0]?.capped ?? false,
    });
    const query = sql`WITH query AS (SELECT ${QUERY(words)} AS q)`;
    if (table === 'notes' && personaId !== null) {
      // A statement of its own, planned in a moment: most recalls go on to the GIN index.
      const { rows: probe } = await sql<{ dense: boolean }>`${query}
        SELECT count(*) > 0 AND 2 * count(*) FILTER (WHERE ts_match_vq(n.search, query.q)) >= count(*) AS dense
        FROM (SELECT e.search FROM notes e WHERE ${newestOf(personaId, nthNewestNote(personaId, PROBE))}
          ORDER BY e.seq DESC LIMIT ${PROBE}) n, query`.execute(db);
      if (probe[0]?.dense) {
        const windowFrom = nthNewestNote(personaId, 3 * candidates);
        const { rows } = await sql<Row>`${query},
          matches AS MATERIALIZED (
            SELECT ${matched(table)} FROM notes e JOIN personas p ON p.id = e.persona_id, query
            WHERE ${newestOf(personaId, sql`coalesce(${windowFrom}, 0)`)} AND p.account = ${account}
              AND ts_match_vq(e.search, query.q)
            ORDER BY e.seq DESC LIMIT ${candidates + 1})
          ${ranked(table, limit, candidates, sql`(SELECT count(*) FROM matches) > ${candidates} OR ${windowFrom} IS NULL`)}`.execute(
          db,
        );
        if (rows.length > 0) return answer(rows);
      }
    }
    // Most words match fewer entries than are ranked: any `candidates + 1` of them tell, unsorted, and then
    // they are all of them. Only where more match are the matches ordered to rank the newest.
    const gin = (newest: boolean) => sql<Row>`${query},
      matches AS MATERIALIZED (
        SELECT ${matched(table)} FROM ${sql.table(table)} e JOIN personas p ON p.id = e.persona_id, query
        WHERE e.search @@ query.q AND p.account = ${account} AND (${personaId}::bigint IS NULL OR e.persona_id = ${personaId})
          AND e.state = 'live'
        ${newest ? sql`ORDER BY ${rowId} DESC` : sql``} LIMIT ${candidates + 1})
      ${ranked(table, limit, candidates)}`;
    const { rows } = await gin(false).execute(db);
    if (rows[0]?.capped) return answer((await gin(true).execute(db)).rows);
    return answer(rows);
  };
}

/**
 * tsvector columns, GIN-indexed, set while the entry is live and NULL otherwise, by the very statement
 * that writes the row (one round trip and one row version per write, where a separate UPDATE would add
 * both, and each row version is another entry in every index of the table).
 */
const tsvector: FullText = {
  indexesAfterWrite: false,
  fieldColumns: (state, text) => ({ search: state === 'live' ? FIELD_VECTOR(text()) : sql`NULL` }),
  noteColumns: (state, content) => ({
    search: state === 'live' ? noteVector(sql`${wordsOf(content)}`) : sql`NULL`,
  }),
  // The row's own statement has set (or cleared) its tsvector already.
  async indexField() {},
  async unindexField() {},
  async indexNote() {},
  async unindexNote() {},
  recallFields: recallFrom('fields'),
  recallNotes: recallFrom('notes'),
};

/** A TEXT NOT NULL column of a row being inserted, whose words its tsvector is made of. */
function textOf(row: Record<string, unknown>, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw new Error(`the column ${column} of a row to insert is not text`);
  return value;
}

/**
 * Rows of a table in one INSERT, each column bound as one array (unnest): a bulk write's statement costs
 * the server one parse and the client no statement text per row. A searched table's live rows get their
 * tsvector from the same text and expression a write's own statement uses (FullText above).
 */
async function insertRows(db: Db, table: TableName, rows: Record<string, unknown>[]): Promise<void> {
  if (rows.length === 0) return;
  const types = postgresTypes(table);
  const columns = Object.keys(rows[0]!).filter((c) => c in types);
  const bound = columns.map((c) => [c, rows.map((r) => r[c] ?? null), types[c]!] as const);
  const live = (r: Record<string, unknown>) => r.state === 'live';
  const text: [string, unknown[]][] =
    table === 'notes'
      ? [['words', rows.map((r) => (live(r) ? wordsOf(textOf(r, 'content')) : null))]]
      : table === 'fields'
        ? (['k', 'd', 'v'] as const).map((name, i) => [
            name,
            rows.map((r) => {
              if (!live(r)) return null;
              const field = { key: textOf(r, 'key'), description: textOf(r, 'description'), value: textOf(r, 'value') };
              return wordsOf(fieldIndexText(field)[i]!);
            }),
          ])
        : [];
  const t = (c: string) => sql.ref(`t.${c}`);
  const search =
    table === 'notes' ? [noteVector(t('words'))] : table === 'fields' ? [fieldVector(t('k'), t('d'), t('v'))] : [];
  await sql`INSERT INTO ${sql.table(table)} (${sql.join([...columns.map((c) => sql.ref(c)), ...(search.length ? [sql.ref('search')] : [])])})
    SELECT ${sql.join([...columns.map((c) => t(c)), ...search])}
    FROM unnest(${sql.join([
      ...bound.map(([, values, type]) => sql`${values}::${sql.raw(type)}[]`),
      ...text.map(([, values]) => sql`${values}::text[]`),
    ])}) AS t(${sql.join([...columns, ...text.map(([name]) => name)].map((c) => sql.ref(c)))})`.execute(db);
}

/** How long a rewrite waits for transactions older than the destruction to end (see vacuumDestruction). */
const OLDER_TRANSACTIONS_WAIT_MS = 30_000;

/**
 * A deleted or updated row stays in its table's pages, its terms in the GIN index (whose entry tree never
 * drops a key), until the table is rewritten; plain VACUUM only marks the space free. So after a
 * destruction commits, the four tables are rewritten with VACUUM FULL: new files hold only the row
 * versions still visible, the indexes (the full-text ones included) are built anew, and the old files
 * are emptied. A row version some running transaction could still see is copied, so the rewrite first
 * waits (up to OLDER_TRANSACTIONS_WAIT_MS) until no session of this login in the database holds a snapshot
 * or transaction older than the destruction. Destructions that arrive while a rewrite runs share the next
 * one; each request answers once a rewrite that started after its commit has finished.
 */
function vacuumDestruction(db: Db): Destruction {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const olderTransactions = async (horizon: string) => {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND (age(backend_xmin) > age(${horizon}::xid) OR age(backend_xid) > age(${horizon}::xid))`.execute(db);
    return rows[0]!.n;
  };
  const rewrite = async () => {
    // Every transaction id below this one had been given out when the rewrite was asked for.
    const { rows } = await sql<{
      horizon: string;
    }>`SELECT xid(pg_snapshot_xmax(pg_current_snapshot()))::text AS horizon`.execute(db);
    const horizon = rows[0]!.horizon;
    const until = Date.now() + OLDER_TRANSACTIONS_WAIT_MS;
    while ((await olderTransactions(horizon)) > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    await sql`VACUUM FULL personas, fields, notes, events`.execute(db);
  };
  return {
    async inTransaction() {},
    afterCommit() {
      if (!running) {
        running = rewrite().finally(() => (running = undefined));
        return running;
      }
      next ??= running
        .then(
          () => undefined,
          () => undefined,
        )
        .then(() => {
          next = undefined;
          running = rewrite().finally(() => (running = undefined));
          return running;
        });
      return next;
    },
  };
}

export interface PostgresOptions {
  url: string;
  poolSize: number;
  /** TLS to the server: off, or required with the server's certificate checked (optionally against a CA file's text). */
  ssl: false | { rejectUnauthorized: boolean; ca?: string };
  connectTimeoutMs: number;
  /** Account ids (subs) whose rows go under a name the person's machines share (PERSONA_SHARED_ACCOUNTS). */
  sharedAccounts?: ReadonlyMap<string, string>;
}

/** The prefix of a shared account's name as stored: no sub of the identity service (a UUID) has it. */
export const SHARED_ACCOUNT_PREFIX = 'shared:';

// BIGINT and count(*) arrive as text by default; the store's ids and counts fit a JavaScript number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/** Most statements one connection keeps prepared; the store's are a fixed set well below it. */
const MAX_PREPARED = 200;

/**
 * Statements the server plans once per connection and then reuses (a named prepared statement, named
 * after its text): the statements of a write (INSERT, UPDATE, DELETE, those carrying their change-log
 * entry, WITH "logged" AS (INSERT ...), and the reads that lock the persona, FOR UPDATE), each by key
 * and planned the same way every time. Reads are planned afresh each time, for what they ask (recall
 * for its words and persona, the change log for its filters), and so is everything else (BEGIN, VACUUM,
 * the migrations).
 */
function preparedName(text: string): string | undefined {
  const write = /^\s*(insert|update|delete)\b/i.test(text) || /^\s*with\s+"logged"\s+as\s+\(\s*insert\b/i.test(text);
  if (!write && !/^\s*select\b[^]*\bfor update\s*$/i.test(text)) return undefined;
  return `persona_${createHash('sha256').update(text).digest('base64url').slice(0, 40)}`;
}

/**
 * One connection of the pool: its statements prepared (see preparedName), and a query that binds U+0000
 * answered as the caller's to fix. PostgreSQL's text cannot hold U+0000, and it refuses such a query
 * (SQLSTATE 22021) rather than answer: 422, never a server error. SQLite stores it.
 */
function personaClient(everPrepared: Set<string>, sent: { roundTrips: number }) {
  return class PersonaClient extends pg.Client {
    private readonly prepared = new Set<string>();
    /** Statements sent and not yet answered: one sent behind another goes in the same round trip (pipelined). */
    private waiting = 0;

    override query(...args: unknown[]): never {
      if (this.waiting++ === 0) sent.roundTrips++;
      const [text, values] = args;
      if (typeof text === 'string' && Array.isArray(values) && args.length === 2) {
        const name = preparedName(text);
        if (name !== undefined && (this.prepared.has(name) || this.prepared.size < MAX_PREPARED)) {
          this.prepared.add(name);
          everPrepared.add(name);
          args = [{ name, text, values }];
        }
      }
      const answer = (super.query as (...a: unknown[]) => unknown)(...args);
      if (answer instanceof Promise) {
        const answered = () => {
          this.waiting--;
        };
        return answer.finally(answered).catch((err: unknown) => {
          if ((err as { code?: string } | undefined)?.code === '22021') {
            throw problem.unprocessable(
              'The request holds the character U+0000 (NUL), which the PostgreSQL database cannot store or compare; remove it and send the request again.',
            );
          }
          throw err;
        }) as never;
      }
      this.waiting--;
      return answer as never;
    }
  };
}

/** The connection a Kysely bound to one connection (a transaction's) sends through, to send past Kysely's one-at-a-time. */
const connectionOf = (db: Db) => db.getExecutor().provideConnection(async (connection) => connection);

/**
 * One write transaction in which BEGIN travels with the first statement (the client pipelines it): a
 * round trip fewer per write. COMMIT waits for every answer, as the write's answer depends on it.
 */
function pipelinedTransaction<T>(db: Db, fn: (db: Db) => Promise<T>): Promise<T> {
  return db.connection().execute(async (tx) => {
    const connection = await connectionOf(tx);
    const begun = connection.executeQuery(CompiledQuery.raw('begin'));
    begun.catch(() => undefined);
    try {
      const result = await fn(tx);
      await begun;
      await connection.executeQuery(CompiledQuery.raw('commit'));
      return result;
    } catch (err) {
      await begun.catch(() => undefined);
      await connection.executeQuery(CompiledQuery.raw('rollback')).catch(() => undefined);
      throw err;
    }
  });
}

/** Statements sent at once, answered in order (see PersonaEngine.together). */
async function sentTogether(db: Db, statements: Compilable[]): Promise<unknown[][]> {
  const connection = await connectionOf(db);
  const answers = statements.map((s) => connection.executeQuery(s.compile()));
  for (const a of answers) a.catch(() => undefined);
  return (await Promise.all(answers)).map((a) => a.rows as unknown[]);
}

/** PostgreSQL at `url`: shared by every copy of the app that points at it. */
export async function openPostgresEngine(
  options: PostgresOptions,
): Promise<PersonaEngine & { readonly pool: pg.Pool }> {
  // Every statement name any connection prepared: what /metrics and the bounded-memory test count.
  const prepared = new Set<string>();
  const sent = { roundTrips: 0 };
  const pool = new pg.Pool({
    Client: personaClient(prepared, sent),
    // A statement sent before the one ahead of it is answered travels with it (see write and together).
    pipeline: true,
    connectionString: options.url,
    // The login's own schema only (see migrate); pg_catalog is always searched first.
    options: '-c search_path="$user"',
    max: options.poolSize,
    ssl: options.ssl === false ? undefined : options.ssl,
    connectionTimeoutMillis: options.connectTimeoutMs,
  });
  // An idle connection the server drops is replaced by the pool; the error must not end the process.
  pool.on('error', () => {});
  const db = new Kysely<PersonaTables>({ dialect: new PostgresDialect({ pool }) });
  try {
    await migrate(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return {
    name: 'postgres',
    pool,
    db,
    fullText: tsvector,
    destruction: vacuumDestruction(db),
    write: (fn) => pipelinedTransaction(db, fn),
    together: (db, statements) => sentTogether(db, statements),
    roundTrips: () => sent.roundTrips,
    insertRows,
    writesInOneStatement: true,
    lockForWrite: (query) => query.forUpdate(),
    accountOf(sub) {
      const shared = options.sharedAccounts?.get(sub);
      return shared === undefined ? sub : SHARED_ACCOUNT_PREFIX + shared;
    },
    isUniqueViolation: (err) => (err as { code?: string } | undefined)?.code === '23505',
    async answers() {
      try {
        await sql`SELECT 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    // Each connection keeps at most MAX_PREPARED (on the server); the names are counted once however many connections prepared them.
    preparedStatements: () => prepared.size,
    close: () => db.destroy(),
  };
}
