import type { Migration } from '../kit/sqlite.ts';

export interface IdentityDatabase {
  accounts: { id: string; name: string; created_at: string };
  sessions: { credential_hash: string; account_id: string; created_at: string };
  connections: {
    account_id: string;
    profile: string;
    kind: 'token' | 'app';
    /** AES-256-GCM of the secret JSON; iv and tag beside it; the key lives in a separate file. */
    ciphertext: Buffer;
    iv: Buffer;
    tag: Buffer;
    created_at: string;
    updated_at: string;
  };
}

export const identityMigrations: Migration[] = [
  (db) => {
    db.exec(`
      CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL
      ) STRICT;
      CREATE TABLE sessions (
        credential_hash TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        created_at TEXT NOT NULL
      ) STRICT;
      CREATE TABLE connections (
        account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        profile TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('token', 'app')),
        ciphertext BLOB NOT NULL,
        iv BLOB NOT NULL,
        tag BLOB NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (account_id, profile)
      ) STRICT;
    `);
  },
];
