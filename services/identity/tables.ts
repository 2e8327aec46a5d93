import type { Migration } from '../kit/sqlite.ts';

export interface IdentityDatabase {
  accounts: { id: string; name: string; created_at: string };
  sessions: {
    /** Public id (ses_...), shown in lists and used to revoke; never the credential. */
    id: string;
    credential_hash: string;
    account_id: string;
    label: string | null;
    created_at: string;
    /** ISO time after which the credential is refused; null: it never expires. */
    expires_at: string | null;
    /** Last time it authenticated a request, to the minute. */
    last_used_at: string | null;
    /** `owner`: the account's own (manages credentials and connections); `hub`: mints tokens for `audiences` only. */
    purpose: 'owner' | 'hub';
    /** JSON array of the audiences a hub credential mints for; null for an owner credential (any audience). */
    audiences: string | null;
  };
  /** A person's own settings for another service, by namespace (person-settings.ts). */
  person_settings: {
    account_id: string;
    namespace: string;
    /** JSON of the settings chosen. */
    settings: string;
    updated_at: string;
  };
  connections: {
    account_id: string;
    profile: string;
    kind: 'token' | 'app';
    /** AES-256-GCM of the secret JSON; iv and tag beside it; the key lives in a separate file. */
    ciphertext: Buffer;
    iv: Buffer;
    tag: Buffer;
    /** Random, new on every PUT: a holder of a resolved credential asks whether it is still this one. */
    revision: string;
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
  // Session credentials get a public id (to list and revoke them), a label, an optional expiry and their
  // last use; connections get a revision, so a resolved copy can be checked against the current one.
  (db) => {
    db.exec(`
      CREATE TABLE sessions_v2 (
        id TEXT PRIMARY KEY,
        credential_hash TEXT NOT NULL UNIQUE,
        account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        label TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        last_used_at TEXT
      ) STRICT;
      INSERT INTO sessions_v2 (id, credential_hash, account_id, created_at)
        SELECT 'ses_' || lower(hex(randomblob(12))), credential_hash, account_id, created_at FROM sessions;
      DROP TABLE sessions;
      ALTER TABLE sessions_v2 RENAME TO sessions;
      CREATE INDEX sessions_account ON sessions(account_id);
      ALTER TABLE connections ADD COLUMN revision TEXT NOT NULL DEFAULT '';
      UPDATE connections SET revision = 'rev_' || lower(hex(randomblob(9)));
    `);
  },
  // Session credentials get a purpose. Those of other accounts were made at the command line by their
  // owner; the local account's extra ones were made by the console for hubs. The one in the local
  // session file is made the app's own again at start (service.ts).
  (db) => {
    db.exec(`
      ALTER TABLE sessions ADD COLUMN purpose TEXT NOT NULL DEFAULT 'owner' CHECK (purpose IN ('owner', 'hub'));
      ALTER TABLE sessions ADD COLUMN audiences TEXT;
      UPDATE sessions SET purpose = 'hub', audiences = '["persona","repohost-api"]'
        WHERE account_id IN (SELECT id FROM accounts WHERE name = 'local');
    `);
  },
  // A person's own settings for the persona store (the settings service it reads, person-settings.ts).
  (db) => {
    db.exec(`
      CREATE TABLE person_settings (
        account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        namespace TEXT NOT NULL,
        settings TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (account_id, namespace)
      ) STRICT;
    `);
  },
];
