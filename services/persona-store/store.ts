import { sql, type Insertable, type QueryCreator } from 'kysely';
import type { Db, IndexColumns, PersonaEngine, RecallHits } from './engines/engine.ts';
import { CHANGE_ACTIONS } from '../../common/change-log.ts';
import { fieldIndexText } from './recall.ts';
import {
  columnsOf,
  ENTRIES,
  type EntryRow,
  type EntryTable,
  type EventRow,
  type FieldRow,
  type LogEntry,
  type NoteRow,
  type PersonaRow,
  type PersonaTables,
  rowIdOf,
} from './tables.ts';

const FIELD_COLUMNS = columnsOf('fields');
const NOTE_COLUMNS = columnsOf('notes');

/** Which change-log entries of a persona to read, and in which order: every filter absent is no filter. */
export interface EventFilter {
  account: string;
  profile: string;
  /** Newest first: `after` then means "older than" (the order's own direction). */
  newestFirst?: boolean;
  /** Entries after this id in the order asked; absent, from the start of that order. */
  after?: number;
  since?: string;
  until?: string;
  target?: string;
  targetKind?: string;
  actions?: readonly string[];
  limit: number;
}

/** What a logged write does with the database: insert or update a row, the entry's statement ahead of it or not. */
type RowWriter = Pick<QueryCreator<PersonaTables>, 'insertInto' | 'updateTable'>;

/**
 * All data access of the persona store, through Kysely, on either engine. Nothing here decides
 * anything: the rules (revisions, forgetting, recall, credentials) live in their own files and call
 * these. What only one engine can do (full text, destruction) is the engine's (engines/).
 */
export class PersonaSql {
  constructor(
    readonly engine: PersonaEngine,
    /** The engine's database, or the transaction this instance was made for. */
    private readonly db: Db = engine.db,
  ) {}

  /** Runs `fn` as one write transaction, with a PersonaSql bound to it (see PersonaEngine.write). */
  transaction<T>(fn: (sql: PersonaSql) => Promise<T>): Promise<T> {
    return this.engine.write((tx) => fn(new PersonaSql(this.engine, tx)));
  }

  get preparedStatements(): number {
    return this.engine.preparedStatements();
  }

  /**
   * A statement that writes a row, and the change-log entry of that write when one is given: on an engine
   * that can, one statement (the entry's INSERT a data-modifying CTE of the row's, named "logged"), one
   * round trip; else the row's statement and then the entry's, in the same transaction.
   */
  private async logged<T>(entry: LogEntry | undefined, write: (db: RowWriter) => Promise<T>): Promise<T> {
    if (entry === undefined) return write(this.db);
    if (this.engine.writesInOneStatement) {
      const written = await write(this.db.with('logged', (db) => db.insertInto('events').values(entry)));
      this.wroteEntry(entry);
      return written;
    }
    const written = await write(this.db);
    await this.insertEvent(entry);
    return written;
  }

  /** Called once for each change-log entry this instance wrote, after its statement succeeded (see metrics.ts). */
  protected wroteEntry(_entry: LogEntry): void {}

  // Personas
  async persona(account: string, profile: string): Promise<PersonaRow | undefined> {
    return this.db
      .selectFrom('personas')
      .selectAll()
      .where('account', '=', account)
      .where('profile', '=', profile)
      .executeTakeFirst();
  }
  /** The persona row, held by this write transaction until it ends (another copy's write to it waits). */
  async personaForWrite(account: string, profile: string): Promise<PersonaRow | undefined> {
    return this.engine
      .lockForWrite(
        this.db.selectFrom('personas').selectAll().where('account', '=', account).where('profile', '=', profile),
      )
      .executeTakeFirst();
  }
  /**
   * The persona row held for this write (as personaForWrite), and its entry of `table` whose `column` is
   * `name`, read right after the lock: one round trip where the engine sends both at once (see
   * PersonaEngine.together). Read after the lock, the entry is what a write this one waited for left.
   */
  async personaAndEntryForWrite<T extends EntryTable>(
    account: string,
    profile: string,
    table: T,
    column: 'key' | 'id' | 'idempotency_key',
    name: string,
  ): Promise<[PersonaRow | undefined, EntryRow<T> | undefined]> {
    const lock = this.engine.lockForWrite(
      this.db.selectFrom('personas').selectAll().where('account', '=', account).where('profile', '=', profile),
    );
    const entry = this.selectEntries(table).where(
      'persona_id',
      '=',
      this.db.selectFrom('personas').select('id').where('account', '=', account).where('profile', '=', profile),
    );
    const [personas, entries] = await this.engine.together(this.db, [lock, entry.where(column, '=', name)]);
    return [personas![0] as PersonaRow | undefined, entries![0] as EntryRow<T> | undefined];
  }
  async personaByIdForWrite(id: number): Promise<PersonaRow | undefined> {
    return this.engine.lockForWrite(this.db.selectFrom('personas').selectAll().where('id', '=', id)).executeTakeFirst();
  }
  async personas(account: string, after: string, limit: number): Promise<PersonaRow[]> {
    return this.db
      .selectFrom('personas')
      .selectAll()
      .where('account', '=', account)
      .where('profile', '>', after)
      .orderBy('profile')
      .limit(limit)
      .execute();
  }
  async insertPersona(row: Omit<PersonaRow, 'id'>): Promise<PersonaRow> {
    return this.db.insertInto('personas').values(row).returningAll().executeTakeFirstOrThrow();
  }
  async updatePersona(row: PersonaRow): Promise<PersonaRow> {
    const { display_name, pronouns, language, tone, verbosity, speaking_style, updated_at } = row;
    return this.db
      .updateTable('personas')
      .set({ display_name, pronouns, language, tone, verbosity, speaking_style, updated_at })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }
  /** The persona's rows leave the full-text index first (a contentless FTS5 index cannot cascade by itself). */
  async deletePersona(personaId: number): Promise<void> {
    for (const row of await this.live('fields', personaId)) await this.unindexField(row);
    for (const row of await this.live('notes', personaId)) await this.unindexNote(row);
    await this.db.deleteFrom('personas').where('id', '=', personaId).execute();
  }

  // Fields and notes alike
  /** The rows of a kind of entry, its columns selected (never PostgreSQL's `search`): `rows` are of that kind. */
  private selectEntries<T extends EntryTable>(table: T) {
    return this.db.selectFrom(table as EntryTable).select(columnsOf(table as EntryTable));
  }
  private async live<T extends EntryTable>(table: T, personaId: number): Promise<EntryRow<T>[]> {
    return (await this.selectEntries(table)
      .where('persona_id', '=', personaId)
      .where('state', '=', 'live')
      .execute()) as EntryRow<T>[];
  }
  /** The persona's forgotten entries not yet destroyed (kept or pending), a page in the kind's order after `after`. */
  async forgotten<T extends EntryTable>(table: T, personaId: number, after: string | number, limit: number) {
    const order = ENTRIES[table].order;
    return (await this.selectEntries(table)
      .where('persona_id', '=', personaId)
      .where('state', '!=', 'live')
      .where(order, '>', after as never)
      .orderBy(order)
      .limit(limit)
      .execute()) as EntryRow<T>[];
  }
  async pinned<T extends EntryTable>(table: T, personaId: number, limit: number): Promise<EntryRow<T>[]> {
    const rows = await this.selectEntries(table)
      .where('persona_id', '=', personaId)
      .where('state', '=', 'live')
      .where('pinned', '=', 1)
      .orderBy(ENTRIES[table].order)
      .limit(limit)
      .execute();
    return rows as EntryRow<T>[];
  }
  async countPinned(table: EntryTable, personaId: number): Promise<number> {
    const { n } = await this.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('persona_id', '=', personaId)
      .where('state', '=', 'live')
      .where('pinned', '=', 1)
      .executeTakeFirstOrThrow();
    return Number(n);
  }
  async deleteEntry(table: EntryTable, rowId: number): Promise<void> {
    await this.db.deleteFrom(table).where(ENTRIES[table].rowId, '=', rowId).execute();
  }
  /** Pending entries whose grace period ended by `now`, a batch at a time (the sweeper). */
  async due<T extends EntryTable>(table: T, now: string): Promise<EntryRow<T>[]> {
    return (await this.selectEntries(table)
      .where('state', '=', 'pending')
      .where('destroy_at', '<=', now)
      .limit(500)
      .execute()) as EntryRow<T>[];
  }
  async entryByRowId<T extends EntryTable>(table: T, rowId: number): Promise<EntryRow<T> | undefined> {
    return (await this.selectEntries(table).where(ENTRIES[table].rowId, '=', rowId).executeTakeFirst()) as
      EntryRow<T> | undefined;
  }

  /** The persona's entry whose `column`, a name unique within the persona, is `name`. */
  private async entryNamed<T extends EntryTable>(
    table: T,
    personaId: number,
    column: 'key' | 'id' | 'idempotency_key',
    name: string,
  ): Promise<EntryRow<T> | undefined> {
    return (await this.selectEntries(table)
      .where('persona_id', '=', personaId)
      .where(column, '=', name)
      .executeTakeFirst()) as EntryRow<T> | undefined;
  }
  /** Writes a new entry's row with the columns its full-text index needs (see FullText). */
  private async insertEntry<T extends EntryTable>(
    table: T,
    row: Omit<EntryRow<T>, (typeof ENTRIES)[T]['rowId']>,
    index: IndexColumns,
    entry: LogEntry | undefined,
  ): Promise<EntryRow<T>> {
    const written = await this.logged(entry, (db) =>
      db
        .insertInto(table as EntryTable)
        .values({ ...row, ...index } as Insertable<PersonaTables[EntryTable]>)
        .returning(columnsOf(table as EntryTable))
        .executeTakeFirstOrThrow(),
    );
    return written as EntryRow<T>;
  }
  /** Writes every column of an entry's row but those fixed when it was made, and its index columns. */
  private async updateEntry<T extends EntryTable>(
    table: T,
    row: EntryRow<T>,
    index: IndexColumns,
    entry: LogEntry | undefined,
  ): Promise<EntryRow<T>> {
    const made: readonly string[] = ENTRIES[table].made;
    const changeable: readonly string[] = columnsOf(table as EntryTable).filter((column) => !made.includes(column));
    const values: Record<string, unknown> = { ...row };
    // In the columns' order, whatever the row's: the statement's text, and so what the engine prepares, stays one.
    const changes = changeable.map((column) => [column, values[column]]);
    const written = await this.logged(entry, (db) =>
      db
        .updateTable(table as EntryTable)
        .set({ ...Object.fromEntries(changes), ...index })
        .where(ENTRIES[table].rowId, '=', rowIdOf(row))
        .returning(columnsOf(table as EntryTable))
        .executeTakeFirstOrThrow(),
    );
    return written as EntryRow<T>;
  }

  // Fields
  async field(personaId: number, key: string): Promise<FieldRow | undefined> {
    return this.entryNamed('fields', personaId, 'key', key);
  }
  /** The persona's live fields after `afterKey`, a page in key order; the caller selects what it needs of them. */
  private liveFieldsAfter(personaId: number, afterKey: string, limit: number) {
    return this.db
      .selectFrom('fields')
      .where('persona_id', '=', personaId)
      .where('state', '=', 'live')
      .where('key', '>', afterKey)
      .orderBy('key')
      .limit(limit);
  }
  async fields(personaId: number, afterKey: string, limit: number): Promise<FieldRow[]> {
    return this.liveFieldsAfter(personaId, afterKey, limit).select(FIELD_COLUMNS).execute();
  }
  async schema(personaId: number, afterKey: string, limit: number): Promise<{ key: string; description: string }[]> {
    return this.liveFieldsAfter(personaId, afterKey, limit).select(['key', 'description']).execute();
  }
  /** `value` is the row's value already parsed, when the caller has it (as for indexField); `entry` its change-log entry (see logged). */
  async insertField(row: Omit<FieldRow, 'id'>, value?: unknown, entry?: LogEntry): Promise<FieldRow> {
    return this.insertEntry('fields', row, this.fieldIndexColumns(row, value), entry);
  }
  async updateField(row: FieldRow, value?: unknown, entry?: LogEntry): Promise<FieldRow> {
    return this.updateEntry('fields', row, this.fieldIndexColumns(row, value), entry);
  }
  private fieldIndexColumns(row: Omit<FieldRow, 'id'>, value: unknown): IndexColumns {
    return this.engine.fullText.fieldColumns(row.state, () => fieldIndexText(row, value));
  }
  /** `value` is the row's value already parsed, when the caller has it. */
  async indexField(row: FieldRow, value?: unknown): Promise<void> {
    await this.engine.fullText.indexField(this.db, row, fieldIndexText(row, value));
  }
  /** Must be given the row as it was indexed: a contentless index removes exactly those terms. */
  async unindexField(row: FieldRow): Promise<void> {
    await this.engine.fullText.unindexField(this.db, row, fieldIndexText(row));
  }
  // Notes
  async note(personaId: number, id: string): Promise<NoteRow | undefined> {
    return this.entryNamed('notes', personaId, 'id', id);
  }
  async noteByIdempotencyKey(personaId: number, key: string): Promise<NoteRow | undefined> {
    return this.entryNamed('notes', personaId, 'idempotency_key', key);
  }
  async notes(personaId: number, afterSeq: number, limit: number, kind?: string): Promise<NoteRow[]> {
    return this.db
      .selectFrom('notes')
      .select(NOTE_COLUMNS)
      .where('persona_id', '=', personaId)
      .where('state', '=', 'live')
      .$if(kind !== undefined, (q) => q.where('kind', '=', kind!))
      .where('seq', '>', afterSeq)
      .orderBy('seq')
      .limit(limit)
      .execute();
  }
  /** `entry`: the write's change-log entry (see logged). */
  async insertNote(row: Omit<NoteRow, 'seq'>, entry?: LogEntry): Promise<NoteRow> {
    return this.insertEntry('notes', row, this.engine.fullText.noteColumns(row.state, row.content), entry);
  }
  async updateNote(row: NoteRow, entry?: LogEntry): Promise<NoteRow> {
    return this.updateEntry('notes', row, this.engine.fullText.noteColumns(row.state, row.content), entry);
  }
  async indexNote(row: NoteRow): Promise<void> {
    await this.engine.fullText.indexNote(this.db, row);
  }
  /** Must be given the row as it was indexed. */
  async unindexNote(row: NoteRow): Promise<void> {
    await this.engine.fullText.unindexNote(this.db, row);
  }
  // Recall
  recallFields(
    words: string[],
    account: string,
    personaId: number | null,
    limit: number,
    candidates: number,
  ): Promise<RecallHits<'fields'>> {
    return this.engine.fullText.recallFields(this.db, words, account, personaId, limit, candidates);
  }
  recallNotes(
    words: string[],
    account: string,
    personaId: number | null,
    limit: number,
    candidates: number,
  ): Promise<RecallHits<'notes'>> {
    return this.engine.fullText.recallNotes(this.db, words, account, personaId, limit, candidates);
  }

  // Change log
  async insertEvent(row: LogEntry): Promise<void> {
    await this.db.insertInto('events').values(row).execute();
    this.wroteEntry(row);
  }
  async events(filter: EventFilter): Promise<EventRow[]> {
    // One statement for every combination of filters, so that no request can make the engine prepare (and
    // keep) more: an absent filter is bound as NULL, and the actions as a fixed number of slots (the known
    // actions asked for, each once, the rest repeating the first).
    const asked = filter.actions?.length ? CHANGE_ACTIONS.filter((a) => filter.actions!.includes(a)) : undefined;
    if (asked && asked.length === 0) return [];
    const slots = CHANGE_ACTIONS.map((_, i) => asked?.[i] ?? asked?.[0] ?? null);
    const text = (v: string | undefined) => sql<string | null>`CAST(${v || null} AS TEXT)`;
    const since = text(filter.since);
    const until = text(filter.until);
    const target = text(filter.target);
    const targetKind = text(filter.targetKind);
    const firstAction = text(slots[0] ?? undefined);
    // Two statements in all (one per order): the cursor is always bound, past the end when absent.
    const newest = filter.newestFirst === true;
    return this.logOf(filter.account, filter.profile)
      .where('id', newest ? '<' : '>', filter.after ?? (newest ? Number.MAX_SAFE_INTEGER : 0))
      .where(sql<boolean>`(${since} IS NULL OR at >= ${since})`)
      .where(sql<boolean>`(${until} IS NULL OR at < ${until})`)
      .where(sql<boolean>`(${target} IS NULL OR target = ${target})`)
      .where(sql<boolean>`(${targetKind} IS NULL OR target_kind = ${targetKind})`)
      .where(sql<boolean>`(${firstAction} IS NULL OR action IN (${sql.join(slots.map((a) => text(a ?? undefined)))}))`)
      .orderBy('id', newest ? 'desc' : 'asc')
      .limit(filter.limit)
      .execute();
  }
  /** Every change-log entry of a persona, oldest first: for copying it whole. */
  async allEvents(account: string, profile: string): Promise<EventRow[]> {
    return this.logOf(account, profile).orderBy('id').execute();
  }
  /** A persona's change log, kept by (account, profile) so that it outlives the persona's row. */
  private logOf(account: string, profile: string) {
    return this.db.selectFrom('events').selectAll().where('account', '=', account).where('profile', '=', profile);
  }
  /** A destroyed entry leaves no trace in the change log: its name and any replaced values are scrubbed. */
  async scrubEvents(
    account: string,
    profile: string,
    targetKind: string,
    target: string,
    replacement: string,
  ): Promise<void> {
    await this.db
      .updateTable('events')
      .set({ target: replacement, replaced: null })
      .where('account', '=', account)
      .where('profile', '=', profile)
      .where('target_kind', '=', targetKind)
      .where('target', '=', target)
      .execute();
  }
  async deleteEventsOf(account: string, profile: string): Promise<void> {
    await this.db.deleteFrom('events').where('account', '=', account).where('profile', '=', profile).execute();
  }

  // Destruction (the engine's way, see engines/)
  async destroyedInTransaction(): Promise<void> {
    await this.engine.destruction.inTransaction(this.db);
  }
  afterDestruction(): Promise<void> {
    return this.engine.destruction.afterCommit();
  }
}
