import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { PersonaTables } from '../schema.ts';
import type { Db, Destruction, FullText, PersonaEngine, RecalledField, RecalledNote } from './engine.ts';

/**
 * The tables on PostgreSQL: the same columns as on SQLite (times as ISO 8601 text, so that they compare
 * and page the same way), plus a `search` tsvector on fields and notes, set only while the entry is live.
 * Columns that hold content carry no planner statistics (SET STATISTICS 0): ANALYZE would otherwise copy
 * sample values of them into pg_statistic, where destroying the row would not reach them.
 */
const MIGRATIONS: string[] = [
  `
  CREATE TABLE personas (
    id BIGSERIAL PRIMARY KEY,
    account TEXT NOT NULL,
    profile TEXT NOT NULL,
    display_name TEXT NOT NULL,
    pronouns TEXT,
    language TEXT,
    tone TEXT,
    verbosity TEXT,
    speaking_style TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    live_fields INTEGER NOT NULL DEFAULT 0,
    live_notes INTEGER NOT NULL DEFAULT 0,
    UNIQUE (account, profile)
  );
  CREATE TABLE fields (
    id BIGSERIAL PRIMARY KEY,
    persona_id BIGINT NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    description TEXT NOT NULL,
    value TEXT NOT NULL,
    value_type TEXT NOT NULL,
    revision INTEGER NOT NULL,
    source TEXT NOT NULL,
    asserted_by TEXT NOT NULL,
    pinned INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('live', 'kept', 'pending')),
    destroy_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    search TSVECTOR,
    UNIQUE (persona_id, key)
  );
  CREATE INDEX fields_pending ON fields (destroy_at) WHERE state = 'pending';
  CREATE INDEX fields_pinned ON fields (persona_id, key) WHERE state = 'live' AND pinned = 1;
  CREATE INDEX fields_search ON fields USING GIN (search);
  CREATE TABLE notes (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    persona_id BIGINT NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    revision INTEGER NOT NULL,
    source TEXT NOT NULL,
    asserted_by TEXT NOT NULL,
    pinned INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('live', 'kept', 'pending')),
    destroy_at TEXT,
    idempotency_key TEXT,
    written_at TEXT NOT NULL,
    revised_at TEXT NOT NULL,
    search TSVECTOR,
    UNIQUE (persona_id, idempotency_key)
  );
  CREATE INDEX notes_by_persona ON notes (persona_id, state, seq);
  CREATE INDEX notes_pending ON notes (destroy_at) WHERE state = 'pending';
  CREATE INDEX notes_pinned ON notes (persona_id, seq) WHERE state = 'live' AND pinned = 1;
  CREATE INDEX notes_search ON notes USING GIN (search);
  CREATE TABLE events (
    id BIGSERIAL PRIMARY KEY,
    account TEXT NOT NULL,
    profile TEXT NOT NULL,
    at TEXT NOT NULL,
    action TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target TEXT NOT NULL,
    asserted_by TEXT NOT NULL,
    source TEXT,
    changes TEXT NOT NULL,
    replaced TEXT
  );
  CREATE INDEX events_by_persona ON events (account, profile, id);

  ALTER TABLE personas ALTER COLUMN display_name SET STATISTICS 0, ALTER COLUMN pronouns SET STATISTICS 0,
    ALTER COLUMN tone SET STATISTICS 0, ALTER COLUMN speaking_style SET STATISTICS 0;
  ALTER TABLE fields ALTER COLUMN key SET STATISTICS 0, ALTER COLUMN description SET STATISTICS 0,
    ALTER COLUMN value SET STATISTICS 0, ALTER COLUMN search SET STATISTICS 0;
  ALTER TABLE notes ALTER COLUMN content SET STATISTICS 0, ALTER COLUMN search SET STATISTICS 0;
  ALTER TABLE events ALTER COLUMN target SET STATISTICS 0, ALTER COLUMN replaced SET STATISTICS 0;

  -- Live counts on the persona row, as on SQLite, so the identity block need not count.
  CREATE FUNCTION persona_live_count() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE delta INTEGER := 0; persona BIGINT;
  BEGIN
    IF TG_OP = 'INSERT' THEN persona := NEW.persona_id; IF NEW.state = 'live' THEN delta := 1; END IF;
    ELSIF TG_OP = 'DELETE' THEN persona := OLD.persona_id; IF OLD.state = 'live' THEN delta := -1; END IF;
    ELSE persona := NEW.persona_id;
      IF (OLD.state = 'live') <> (NEW.state = 'live') THEN delta := CASE WHEN NEW.state = 'live' THEN 1 ELSE -1 END; END IF;
    END IF;
    IF delta <> 0 THEN
      IF TG_TABLE_NAME = 'fields' THEN UPDATE personas SET live_fields = live_fields + delta WHERE id = persona;
      ELSE UPDATE personas SET live_notes = live_notes + delta WHERE id = persona; END IF;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER fields_live AFTER INSERT OR DELETE OR UPDATE OF state ON fields FOR EACH ROW EXECUTE FUNCTION persona_live_count();
  CREATE TRIGGER notes_live AFTER INSERT OR DELETE OR UPDATE OF state ON notes FOR EACH ROW EXECUTE FUNCTION persona_live_count();
  `,
];

/** Applies pending migrations once, whichever copy of the app starts first (an advisory lock serialises them). */
async function migrate(db: Kysely<PersonaTables>): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext('persona-store schema'))`.execute(tx);
    await sql`CREATE TABLE IF NOT EXISTS persona_schema (version INTEGER NOT NULL)`.execute(tx);
    const { rows } = await sql<{ version: number }>`SELECT version FROM persona_schema`.execute(tx);
    const current = rows[0]?.version ?? 0;
    if (current > MIGRATIONS.length) {
      throw new Error(`The database is from a newer version (schema ${current}, this build knows ${MIGRATIONS.length}); update the app.`);
    }
    for (let i = current; i < MIGRATIONS.length; i++) await sql.raw(MIGRATIONS[i]!).execute(tx);
    if (rows.length === 0) await sql`INSERT INTO persona_schema (version) VALUES (${MIGRATIONS.length})`.execute(tx);
    else await sql`UPDATE persona_schema SET version = ${MIGRATIONS.length}`.execute(tx);
  });
}

/** Stemmed English full text; the key weighs most, then the description, then the value. */
const FIELD_VECTOR = (key: string, description: string, value: string) =>
  sql`setweight(to_tsvector('english', ${key}), 'A') || setweight(to_tsvector('english', ${description}), 'B') || to_tsvector('english', ${value})`;

/**
 * tsvector columns, GIN-indexed, set while the entry is live and NULL otherwise. The words go through
 * plainto_tsquery, which reads no operator at all: every word must occur (stop words are dropped).
 */
const tsvector: FullText = {
  async indexField(db, row, [key, description, value]) {
    await sql`UPDATE fields SET search = ${FIELD_VECTOR(key, description, value)} WHERE id = ${row.id}`.execute(db);
  },
  async unindexField(db, row) {
    await sql`UPDATE fields SET search = NULL WHERE id = ${row.id}`.execute(db);
  },
  async indexNote(db, row) {
    await sql`UPDATE notes SET search = to_tsvector('english', ${row.content}) WHERE seq = ${row.seq}`.execute(db);
  },
  async unindexNote(db, row) {
    await sql`UPDATE notes SET search = NULL WHERE seq = ${row.seq}`.execute(db);
  },
  async recallFields(db, words, account, personaId, limit) {
    const { rows } = await sql<RecalledField & { search?: unknown }>`SELECT f.*, p.profile AS profile, ts_rank_cd(f.search, q) AS score
      FROM fields f JOIN personas p ON p.id = f.persona_id, plainto_tsquery('english', ${words.join(' ')}) q
      WHERE f.search @@ q AND p.account = ${account} AND (${personaId}::bigint IS NULL OR f.persona_id = ${personaId}) AND f.state = 'live'
      ORDER BY score DESC, f.id LIMIT ${limit}`.execute(db);
    return rows.map(({ search: _search, ...row }) => row);
  },
  async recallNotes(db, words, account, personaId, limit) {
    const { rows } = await sql<RecalledNote & { search?: unknown }>`SELECT n.*, p.profile AS profile, ts_rank_cd(n.search, q) AS score
      FROM notes n JOIN personas p ON p.id = n.persona_id, plainto_tsquery('english', ${words.join(' ')}) q
      WHERE n.search @@ q AND p.account = ${account} AND (${personaId}::bigint IS NULL OR n.persona_id = ${personaId}) AND n.state = 'live'
      ORDER BY score DESC, n.seq LIMIT ${limit}`.execute(db);
    return rows.map(({ search: _search, ...row }) => row);
  },
};

/**
 * A deleted or updated row stays in its table's pages (and its index entries in the indexes) until
 * the table is rewritten. After a destruction commits, the four persona tables are rewritten with
 * VACUUM FULL: new files hold only the live row versions, indexes (the GIN full-text ones included)
 * are rebuilt, and the old files are truncated. Destructions that arrive while one rewrite runs share
 * the next one; each request answers once a rewrite that started after its commit has finished.
 */
function vacuumDestruction(db: Db): Destruction {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const rewrite = async () => {
    await sql`VACUUM FULL personas, fields, notes, events`.execute(db);
  };
  return {
    async inTransaction() {},
    afterCommit() {
      if (!running) {
        running = rewrite().finally(() => (running = undefined));
        return running;
      }
      next ??= running.then(
        () => undefined,
        () => undefined,
      ).then(() => {
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
}

// BIGINT and count(*) arrive as text by default; the store's ids and counts fit a JavaScript number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/** PostgreSQL at `url`: shared by every copy of the app that points at it. */
export async function openPostgresEngine(options: PostgresOptions): Promise<PersonaEngine & { readonly pool: pg.Pool }> {
  const pool = new pg.Pool({
    connectionString: options.url,
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
    write: (fn) => db.transaction().execute(fn),
    lockForWrite: (query) => query.forUpdate(),
    isUniqueViolation: (err) => (err as { code?: string } | undefined)?.code === '23505',
    async answers() {
      try {
        await sql`SELECT 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    // Statements are prepared by the server per query (unnamed), none kept by this process.
    preparedStatements: () => 0,
    close: () => db.destroy(),
  };
}
