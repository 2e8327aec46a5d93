import type { Sqlite } from '../kit/sqlite.ts';
import { fieldIndexText } from './recall.ts';
import type { EventRow, FieldRow, NoteRow, PersonaRow } from './schema.ts';

/**
 * All SQL of the persona store, as prepared statements. Nothing here decides anything: the rules
 * (revisions, forgetting, recall, credentials) live in their own files and call these.
 */
class Connection {
  private prepared = 0;
  constructor(readonly sqlite: Sqlite) {
    // Freed pages are zeroed, so destroyed content does not linger in the file.
    sqlite.pragma('secure_delete = ON');
    // Counted where SQLite is asked rather than where this class asks, so that no code path prepares unseen.
    const prepare = sqlite.prepare.bind(sqlite);
    sqlite.prepare = ((source: string) => {
      this.prepared++;
      return prepare(source);
    }) as Sqlite['prepare'];
  }

  /**
   * Statements prepared on this connection so far, by any code that holds it: the fixed set of this
   * class, then one per readiness probe (`SELECT 1`, let go at once). No request to the API may add
   * one, so that none can be kept per request (a test holds the service to that).
   */
  get preparedStatements(): number {
    return this.prepared;
  }
}

// Extends Connection so that `sqlite` is set before the statement fields below are initialised.
export class PersonaSql extends Connection {

  // One transaction wrapper for every write (better-sqlite3 builds four closures per transaction() call).
  private readonly inTransaction = this.sqlite.transaction((fn: () => unknown) => fn());
  transaction<T>(fn: () => T): T {
    return this.inTransaction.immediate(fn) as T;
  }

  private s = (sql: string) => this.sqlite.prepare(sql);

  // Personas
  private qPersona = this.s('SELECT * FROM personas WHERE account = ? AND profile = ?');
  private qPersonas = this.s('SELECT * FROM personas WHERE account = ? AND profile > ? ORDER BY profile LIMIT ?');
  private qPersonaIds = this.s('SELECT id, profile FROM personas WHERE account = ?');
  private qInsertPersona = this.s(`INSERT INTO personas (account, profile, display_name, pronouns, language, tone, verbosity, speaking_style, created_at, updated_at)
    VALUES (@account, @profile, @display_name, @pronouns, @language, @tone, @verbosity, @speaking_style, @created_at, @updated_at) RETURNING *`);
  private qUpdatePersona = this.s(`UPDATE personas SET display_name = @display_name, pronouns = @pronouns, language = @language, tone = @tone,
    verbosity = @verbosity, speaking_style = @speaking_style, updated_at = @updated_at WHERE id = @id RETURNING *`);
  private qDeletePersona = this.s('DELETE FROM personas WHERE id = ?');
  private qLiveFieldsOf = this.s("SELECT * FROM fields WHERE persona_id = ? AND state = 'live'");
  private qLiveNotesOf = this.s("SELECT * FROM notes WHERE persona_id = ? AND state = 'live'");

  persona(account: string, profile: string): PersonaRow | undefined {
    return this.qPersona.get(account, profile) as PersonaRow | undefined;
  }
  personas(account: string, after: string, limit: number): PersonaRow[] {
    return this.qPersonas.all(account, after, limit) as PersonaRow[];
  }
  personaIds(account: string): { id: number; profile: string }[] {
    return this.qPersonaIds.all(account) as { id: number; profile: string }[];
  }
  insertPersona(row: Omit<PersonaRow, 'id'>): PersonaRow {
    return this.qInsertPersona.get(row) as PersonaRow;
  }
  updatePersona(row: PersonaRow): PersonaRow {
    return this.qUpdatePersona.get(row) as PersonaRow;
  }
  /** The persona's rows leave the full-text index first (contentless: the index cannot cascade by itself). */
  deletePersona(personaId: number): void {
    for (const row of this.qLiveFieldsOf.all(personaId) as FieldRow[]) this.unindexField(row);
    for (const row of this.qLiveNotesOf.all(personaId) as NoteRow[]) this.unindexNote(row);
    this.qDeletePersona.run(personaId);
  }

  // Fields
  private qField = this.s('SELECT * FROM fields WHERE persona_id = ? AND key = ?');
  private qFields = this.s("SELECT * FROM fields WHERE persona_id = ? AND state = 'live' AND key > ? ORDER BY key LIMIT ?");
  private qPinnedFields = this.s("SELECT * FROM fields WHERE persona_id = ? AND state = 'live' AND pinned = 1 ORDER BY key LIMIT ?");
  private qSchema = this.s("SELECT key, description FROM fields WHERE persona_id = ? AND state = 'live' AND key > ? ORDER BY key LIMIT ?");
  private qInsertField = this.s(`INSERT INTO fields (persona_id, key, description, value, value_type, revision, source, asserted_by, pinned, state, destroy_at, created_at, updated_at)
    VALUES (@persona_id, @key, @description, @value, @value_type, @revision, @source, @asserted_by, @pinned, @state, @destroy_at, @created_at, @updated_at) RETURNING *`);
  private qUpdateField = this.s(`UPDATE fields SET description = @description, value = @value, value_type = @value_type, revision = @revision, source = @source,
    asserted_by = @asserted_by, pinned = @pinned, state = @state, destroy_at = @destroy_at, updated_at = @updated_at WHERE id = @id RETURNING *`);
  private qDeleteField = this.s('DELETE FROM fields WHERE id = ?');
  private qIndexField = this.s('INSERT INTO fields_fts (rowid, key, description, value) VALUES (?, ?, ?, ?)');
  private qUnindexField = this.s("INSERT INTO fields_fts (fields_fts, rowid, key, description, value) VALUES ('delete', ?, ?, ?, ?)");
  private qCountPinnedFields = this.s("SELECT count(*) AS n FROM fields WHERE persona_id = ? AND state = 'live' AND pinned = 1");

  field(personaId: number, key: string): FieldRow | undefined {
    return this.qField.get(personaId, key) as FieldRow | undefined;
  }
  fields(personaId: number, afterKey: string, limit: number): FieldRow[] {
    return this.qFields.all(personaId, afterKey, limit) as FieldRow[];
  }
  pinnedFields(personaId: number, limit: number): FieldRow[] {
    return this.qPinnedFields.all(personaId, limit) as FieldRow[];
  }
  schema(personaId: number, afterKey: string, limit: number): { key: string; description: string }[] {
    return this.qSchema.all(personaId, afterKey, limit) as { key: string; description: string }[];
  }
  insertField(row: Omit<FieldRow, 'id'>): FieldRow {
    return this.qInsertField.get(row) as FieldRow;
  }
  updateField(row: FieldRow): FieldRow {
    return this.qUpdateField.get(row) as FieldRow;
  }
  deleteField(id: number): void {
    this.qDeleteField.run(id);
  }
  /** `value` is the row's value already parsed, when the caller has it. */
  indexField(row: FieldRow, value?: unknown): void {
    this.qIndexField.run(row.id, ...fieldIndexText(row, value));
  }
  /** Must be given the row as it was indexed: the contentless index removes exactly those terms. */
  unindexField(row: FieldRow): void {
    this.qUnindexField.run(row.id, ...fieldIndexText(row));
  }
  countPinnedFields(personaId: number): number {
    return (this.qCountPinnedFields.get(personaId) as { n: number }).n;
  }

  // Notes
  private qNote = this.s('SELECT * FROM notes WHERE persona_id = ? AND id = ?');
  private qNoteByIdempotency = this.s('SELECT * FROM notes WHERE persona_id = ? AND idempotency_key = ?');
  private qNotes = this.s("SELECT * FROM notes WHERE persona_id = ? AND state = 'live' AND seq > ? ORDER BY seq LIMIT ?");
  private qNotesOfKind = this.s("SELECT * FROM notes WHERE persona_id = ? AND state = 'live' AND kind = ? AND seq > ? ORDER BY seq LIMIT ?");
  private qPinnedNotes = this.s("SELECT * FROM notes INDEXED BY notes_pinned WHERE persona_id = ? AND state = 'live' AND pinned = 1 ORDER BY seq LIMIT ?");
  private qInsertNote = this.s(`INSERT INTO notes (id, persona_id, kind, content, revision, source, asserted_by, pinned, state, destroy_at, idempotency_key, written_at, revised_at)
    VALUES (@id, @persona_id, @kind, @content, @revision, @source, @asserted_by, @pinned, @state, @destroy_at, @idempotency_key, @written_at, @revised_at) RETURNING *`);
  private qUpdateNote = this.s(`UPDATE notes SET kind = @kind, content = @content, revision = @revision, source = @source, asserted_by = @asserted_by,
    pinned = @pinned, state = @state, destroy_at = @destroy_at, revised_at = @revised_at WHERE seq = @seq RETURNING *`);
  private qDeleteNote = this.s('DELETE FROM notes WHERE seq = ?');
  private qIndexNote = this.s('INSERT INTO notes_fts (rowid, content) VALUES (?, ?)');
  private qUnindexNote = this.s("INSERT INTO notes_fts (notes_fts, rowid, content) VALUES ('delete', ?, ?)");
  private qCountPinnedNotes = this.s("SELECT count(*) AS n FROM notes WHERE persona_id = ? AND state = 'live' AND pinned = 1");

  note(personaId: number, id: string): NoteRow | undefined {
    return this.qNote.get(personaId, id) as NoteRow | undefined;
  }
  noteByIdempotencyKey(personaId: number, key: string): NoteRow | undefined {
    return this.qNoteByIdempotency.get(personaId, key) as NoteRow | undefined;
  }
  notes(personaId: number, afterSeq: number, limit: number, kind?: string): NoteRow[] {
    return (kind ? this.qNotesOfKind.all(personaId, kind, afterSeq, limit) : this.qNotes.all(personaId, afterSeq, limit)) as NoteRow[];
  }
  pinnedNotes(personaId: number, limit: number): NoteRow[] {
    return this.qPinnedNotes.all(personaId, limit) as NoteRow[];
  }
  insertNote(row: Omit<NoteRow, 'seq'>): NoteRow {
    return this.qInsertNote.get(row) as NoteRow;
  }
  updateNote(row: NoteRow): NoteRow {
    return this.qUpdateNote.get(row) as NoteRow;
  }
  deleteNote(seq: number): void {
    this.qDeleteNote.run(seq);
  }
  indexNote(row: NoteRow): void {
    this.qIndexNote.run(row.seq, row.content);
  }
  /** Must be given the row as it was indexed. */
  unindexNote(row: NoteRow): void {
    this.qUnindexNote.run(row.seq, row.content);
  }
  countPinnedNotes(personaId: number): number {
    return (this.qCountPinnedNotes.get(personaId) as { n: number }).n;
  }

  // Forgetting
  private qDueFields = this.s("SELECT * FROM fields WHERE state = 'pending' AND destroy_at <= ? LIMIT 500");
  private qDueNotes = this.s("SELECT * FROM notes WHERE state = 'pending' AND destroy_at <= ? LIMIT 500");
  private qPersonaById = this.s('SELECT * FROM personas WHERE id = ?');
  private qScrubEvents = this.s('UPDATE events SET target = ?, replaced = NULL WHERE account = ? AND profile = ? AND target_kind = ? AND target = ?');
  private qDeleteEventsOf = this.s('DELETE FROM events WHERE account = ? AND profile = ?');
  dueFields(now: string): FieldRow[] {
    return this.qDueFields.all(now) as FieldRow[];
  }
  dueNotes(now: string): NoteRow[] {
    return this.qDueNotes.all(now) as NoteRow[];
  }
  personaById(id: number): PersonaRow | undefined {
    return this.qPersonaById.get(id) as PersonaRow | undefined;
  }
  /** Merges each full-text index into one segment: deleted entries' terms are dropped, their old pages freed (and zeroed). */
  optimizeIndexes(): void {
    this.sqlite.exec("INSERT INTO fields_fts (fields_fts) VALUES ('optimize'); INSERT INTO notes_fts (notes_fts) VALUES ('optimize');");
  }
  checkpoint(): void {
    this.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  }

  // Recall: FTS5 MATCH joined to live rows of the caller's personas, ranked by bm25 within each list.
  private qRecallFields = this.s(`SELECT f.*, p.profile AS profile, fts.rank AS score FROM fields_fts fts
    JOIN fields f ON f.id = fts.rowid JOIN personas p ON p.id = f.persona_id
    WHERE fields_fts MATCH @match AND p.account = @account AND (@persona_id IS NULL OR f.persona_id = @persona_id) AND f.state = 'live'
    ORDER BY fts.rank LIMIT @limit`);
  private qRecallNotes = this.s(`SELECT n.*, p.profile AS profile, fts.rank AS score FROM notes_fts fts
    JOIN notes n ON n.seq = fts.rowid JOIN personas p ON p.id = n.persona_id
    WHERE notes_fts MATCH @match AND p.account = @account AND (@persona_id IS NULL OR n.persona_id = @persona_id) AND n.state = 'live'
    ORDER BY fts.rank LIMIT @limit`);
  recallFields(match: string, account: string, personaId: number | null, limit: number): (FieldRow & { profile: string; score: number })[] {
    return this.qRecallFields.all({ match, account, persona_id: personaId, limit }) as (FieldRow & { profile: string; score: number })[];
  }
  recallNotes(match: string, account: string, personaId: number | null, limit: number): (NoteRow & { profile: string; score: number })[] {
    return this.qRecallNotes.all({ match, account, persona_id: personaId, limit }) as (NoteRow & { profile: string; score: number })[];
  }

  // Change log
  private qInsertEvent = this.s(`INSERT INTO events (account, profile, at, action, target_kind, target, asserted_by, source, changes, replaced)
    VALUES (@account, @profile, @at, @action, @target_kind, @target, @asserted_by, @source, @changes, @replaced)`);
  /**
   * One statement for every combination of filters: an absent filter is bound as NULL, and the actions
   * as one JSON array read with json_each, so no request can make the service prepare (and keep) more.
   */
  private qEvents = this.s(`SELECT * FROM events WHERE account = @account AND profile = @profile AND id > @after
    AND (@since IS NULL OR at >= @since) AND (@until IS NULL OR at < @until)
    AND (@target IS NULL OR target = @target) AND (@target_kind IS NULL OR target_kind = @target_kind)
    AND (@actions IS NULL OR action IN (SELECT value FROM json_each(@actions)))
    ORDER BY id LIMIT @limit`);
  insertEvent(row: Omit<EventRow, 'id'>): void {
    this.qInsertEvent.run(row);
  }
  events(filter: {
    account: string;
    profile: string;
    after: number;
    since?: string;
    until?: string;
    target?: string;
    targetKind?: string;
    actions?: readonly string[];
    limit: number;
  }): EventRow[] {
    return this.qEvents.all({
      account: filter.account,
      profile: filter.profile,
      after: filter.after,
      // An empty filter filters nothing, as it always has.
      since: filter.since || null,
      until: filter.until || null,
      target: filter.target || null,
      target_kind: filter.targetKind || null,
      actions: filter.actions?.length ? JSON.stringify(filter.actions) : null,
      limit: filter.limit,
    }) as EventRow[];
  }
  /** A destroyed entry leaves no trace in the change log: its name and any replaced values are scrubbed. */
  scrubEvents(account: string, profile: string, targetKind: string, target: string, replacement: string): void {
    this.qScrubEvents.run(replacement, account, profile, targetKind, target);
  }
  deleteEventsOf(account: string, profile: string): void {
    this.qDeleteEventsOf.run(account, profile);
  }
}
