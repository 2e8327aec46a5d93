import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { ConfigError } from './config.ts';

export type Sqlite = Database.Database;

/** A schema step; runs once, in order, inside a transaction, when the file's user_version is below its index. */
export type Migration = (db: Sqlite) => void;

export interface OpenedDatabase<DB> {
  readonly sqlite: Sqlite;
  readonly db: Kysely<DB>;
  close(): Promise<void>;
}

/**
 * Opens (or creates) one service's SQLite file: WAL, foreign keys, a busy timeout, owner-only
 * permissions, and every pending migration applied before anything else touches it.
 */
export function openDatabase<DB>(file: string, migrations: Migration[]): OpenedDatabase<DB> {
  if (file !== ':memory:') {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // Created owner-only before SQLite opens it (SQLite gives its -wal and -shm files the same mode), and
    // narrowed if an older file was looser.
    closeSync(openSync(file, 'a', 0o600));
    chmodSync(file, 0o600);
  }
  let sqlite: Sqlite;
  try {
    sqlite = new Database(file);
  } catch (err) {
    throw noBinaryHere(err) ?? err;
  }
  sqlite.pragma('journal_mode = WAL');
  // NORMAL in WAL mode loses nothing on a process crash; only a power cut can drop the last commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  migrate(sqlite, migrations);
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: sqlite }) });
  let closed = false;
  return {
    sqlite,
    db,
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
      if (sqlite.open) {
        sqlite.pragma('wal_checkpoint(TRUNCATE)');
        sqlite.close();
      }
    },
  };
}

/**
 * better-sqlite3 ships binaries for Linux, macOS and Windows on x64 and arm64; elsewhere (32-bit, FreeBSD)
 * it looks for one built on the machine and Node says "Cannot find module": a person builds it, so the
 * service stops with the way to (exit 78) rather than crash and be restarted.
 */
function noBinaryHere(err: unknown): ConfigError | undefined {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'MODULE_NOT_FOUND' || !String(message).includes('better_sqlite3.node')) return undefined;
  return new ConfigError(
    `better-sqlite3 has no binary for this system (${process.platform}, ${process.arch}). Build one: ` +
      '`npx node-gyp rebuild` in node_modules/better-sqlite3 (needs Python 3 and a C++ compiler; docs/node.md), then start again.',
  );
}

function migrate(sqlite: Sqlite, migrations: Migration[]): void {
  const current = sqlite.pragma('user_version', { simple: true }) as number;
  if (current > migrations.length) {
    throw new Error(
      `The database is from a newer version (schema ${current}, this build knows ${migrations.length}); update the app.`,
    );
  }
  for (let i = current; i < migrations.length; i++) {
    sqlite.transaction(() => {
      migrations[i]!(sqlite);
      sqlite.pragma(`user_version = ${i + 1}`);
    })();
  }
}

/** For /ready: the file answers a trivial query. */
export function databaseAnswers(sqlite: Sqlite): boolean {
  try {
    return sqlite.open && sqlite.prepare('SELECT 1 AS ok').get() !== undefined;
  } catch {
    return false;
  }
}
