import type { Generated } from 'kysely';
import type { Migration } from '../kit/sqlite.ts';

/**
 * Tables of the persona store on SQLite (the PostgreSQL engine's are in engines/postgres.ts, with the
 * same columns). Every row hangs off a persona, and a persona belongs to one account:
 * every query starts from (account, profile). Only live fields and notes are in the full-text index,
 * so recall never needs to filter by state. The FTS5 tables are contentless (the text lives once, in
 * the base table); an entry leaves the index through FTS5's 'delete' command with the text it was
 * indexed with. Destruction then merges each index into one segment ('optimize'), which drops every
 * deleted entry's terms, and secure_delete zeroes the freed pages (see forgetting.ts for why this and
 * not FTS5's secure-delete option).
 */
export const personaMigrations: Migration[] = [
  (db) => {
    db.exec(`
      CREATE TABLE personas (
        id INTEGER PRIMARY KEY,
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
        UNIQUE (account, profile)
      ) STRICT;

      CREATE TABLE fields (
        id INTEGER PRIMARY KEY,
        persona_id INTEGER NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
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
        UNIQUE (persona_id, key)
      ) STRICT;
      CREATE INDEX fields_pending ON fields (destroy_at) WHERE state = 'pending';
      CREATE INDEX fields_pinned ON fields (persona_id, key) WHERE state = 'live' AND pinned = 1;

      CREATE TABLE notes (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        persona_id INTEGER NOT NULL REFERENCES personas(id) ON DELETE CASCADE,
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
        UNIQUE (persona_id, idempotency_key)
      ) STRICT;
      CREATE INDEX notes_by_persona ON notes (persona_id, state, seq);
      CREATE INDEX notes_pending ON notes (destroy_at) WHERE state = 'pending';
      CREATE INDEX notes_pinned ON notes (persona_id, seq) WHERE state = 'live' AND pinned = 1;

      -- The change log. Kept by (account, profile) so that the entry of a persona's deletion outlives it.
      CREATE TABLE events (
        id INTEGER PRIMARY KEY,
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
      ) STRICT;
      CREATE INDEX events_by_persona ON events (account, profile, id);

      CREATE VIRTUAL TABLE fields_fts USING fts5 (key, description, value, content = '', tokenize = 'porter unicode61');
      CREATE VIRTUAL TABLE notes_fts USING fts5 (content, content = '', tokenize = 'porter unicode61');
    `);
  },
  // Live counts kept on the persona row by triggers, so the identity block need not count 10,000 rows.
  (db) => {
    db.exec(`
      ALTER TABLE personas ADD COLUMN live_fields INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE personas ADD COLUMN live_notes INTEGER NOT NULL DEFAULT 0;
      UPDATE personas SET
        live_fields = (SELECT count(*) FROM fields WHERE persona_id = personas.id AND state = 'live'),
        live_notes = (SELECT count(*) FROM notes WHERE persona_id = personas.id AND state = 'live');
      CREATE TRIGGER fields_live_insert AFTER INSERT ON fields WHEN new.state = 'live'
        BEGIN UPDATE personas SET live_fields = live_fields + 1 WHERE id = new.persona_id; END;
      CREATE TRIGGER fields_live_delete AFTER DELETE ON fields WHEN old.state = 'live'
        BEGIN UPDATE personas SET live_fields = live_fields - 1 WHERE id = old.persona_id; END;
      CREATE TRIGGER fields_live_update AFTER UPDATE OF state ON fields WHEN (old.state = 'live') <> (new.state = 'live')
        BEGIN UPDATE personas SET live_fields = live_fields + (CASE WHEN new.state = 'live' THEN 1 ELSE -1 END) WHERE id = new.persona_id; END;
      CREATE TRIGGER notes_live_insert AFTER INSERT ON notes WHEN new.state = 'live'
        BEGIN UPDATE personas SET live_notes = live_notes + 1 WHERE id = new.persona_id; END;
      CREATE TRIGGER notes_live_delete AFTER DELETE ON notes WHEN old.state = 'live'
        BEGIN UPDATE personas SET live_notes = live_notes - 1 WHERE id = old.persona_id; END;
      CREATE TRIGGER notes_live_update AFTER UPDATE OF state ON notes WHEN (old.state = 'live') <> (new.state = 'live')
        BEGIN UPDATE personas SET live_notes = live_notes + (CASE WHEN new.state = 'live' THEN 1 ELSE -1 END) WHERE id = new.persona_id; END;
    `);
  },
];

export interface PersonaRow {
  id: number;
  account: string;
  profile: string;
  display_name: string;
  pronouns: string | null;
  language: string | null;
  tone: string | null;
  verbosity: string | null;
  speaking_style: string | null;
  created_at: string;
  updated_at: string;
  live_fields: number;
  live_notes: number;
}

export type EntryState = 'live' | 'kept' | 'pending';

export interface FieldRow {
  id: number;
  persona_id: number;
  key: string;
  description: string;
  value: string;
  value_type: string;
  revision: number;
  source: string;
  asserted_by: string;
  pinned: number;
  state: EntryState;
  destroy_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface NoteRow {
  seq: number;
  id: string;
  persona_id: number;
  kind: string;
  content: string;
  revision: number;
  source: string;
  asserted_by: string;
  pinned: number;
  state: EntryState;
  destroy_at: string | null;
  idempotency_key: string | null;
  written_at: string;
  revised_at: string;
}

export interface EventRow {
  id: number;
  account: string;
  profile: string;
  at: string;
  action: string;
  target_kind: string;
  target: string;
  asserted_by: string;
  source: string | null;
  changes: string;
  replaced: string | null;
}

/** The tables as Kysely sees them, on either engine (ids are generated by the database). */
export interface PersonaTables {
  personas: Omit<PersonaRow, 'id' | 'live_fields' | 'live_notes'> & { id: Generated<number>; live_fields: Generated<number>; live_notes: Generated<number> };
  fields: Omit<FieldRow, 'id'> & { id: Generated<number> };
  notes: Omit<NoteRow, 'seq'> & { seq: Generated<number> };
  events: Omit<EventRow, 'id'> & { id: Generated<number> };
}
