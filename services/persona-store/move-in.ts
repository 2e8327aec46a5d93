import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, sql, type Insertable } from 'kysely';
import type { Db, FullText, IndexColumns, PersonaEngine } from './engines/engine.ts';
import { RowRefused, RowScreen, screenSource } from './move-in-screen.ts';
import type { Limits } from './personas.ts';
import { fieldIndexText } from './recall.ts';
import {
  columnsOf,
  ENTRIES,
  MIGRATIONS,
  POSTGRES_SEARCH_INDEXES,
  type EntryRow,
  type EntryTable,
  type EventRow,
  type PersonaCopy,
  type PersonaTables,
  type SourceData,
} from './tables.ts';
import { DATABASE_FILE } from './service.ts';

/**
 * Moving in: copies a SQLite persona database (the data folder's persona-store.db) into another engine,
 * normally the PostgreSQL a person's computers share, row for row: every persona, field, note and
 * change-log entry in every state (kept and pending entries included), with revisions, timestamps,
 * provenance, note ids and idempotency keys as they are, in one transaction. The full-text index of
 * the target is built for the live entries. What is already there is never overwritten.
 */

/** A refusal that says what to do; nothing was written. */
export class MoveInRefused extends Error {
  override name = 'MoveInRefused';
}

/** The persona database a --from names: the file itself, or the data folder that holds persona-store.db. */
export function sourceFile(from: string): string {
  const path = resolve(from);
  if (!existsSync(path)) {
    throw new MoveInRefused(
      `There is nothing at ${path}; --from takes the persona store's data folder (the one holding ${DATABASE_FILE}) or that file itself.`,
    );
  }
  const file = statSync(path).isDirectory() ? join(path, DATABASE_FILE) : path;
  if (!existsSync(file)) {
    throw new MoveInRefused(
      `${path} holds no ${DATABASE_FILE}; --from takes the persona store's data folder (PERSONA_DATA_DIR) or the database file itself.`,
    );
  }
  return file;
}

const CARD_COLUMNS = [
  'id',
  'account',
  'profile',
  'display_name',
  'pronouns',
  'language',
  'tone',
  'verbosity',
  'speaking_style',
  'created_at',
  'updated_at',
] as const;

/**
 * Reads the whole persona database, read-only (the file, its WAL and the app that may have it open are
 * left as they are), in one read transaction, so that what is copied is one consistent moment of it.
 */
export async function readSource(file: string): Promise<SourceData> {
  let sqlite: Database.Database;
  try {
    sqlite = new Database(file, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new MoveInRefused(
      `${file} cannot be opened as a SQLite database (${err instanceof Error ? err.message : String(err)}); check the path given to --from.`,
    );
  }
  const db = new Kysely<PersonaTables>({ dialect: new SqliteDialect({ database: sqlite }) });
  try {
    let version: number;
    try {
      version = sqlite.pragma('user_version', { simple: true }) as number;
    } catch {
      throw new MoveInRefused(
        `${file} is not a SQLite database; --from takes the persona store's data folder or its ${DATABASE_FILE}.`,
      );
    }
    const tables = sqlite
      .prepare(
        `SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('personas', 'fields', 'notes', 'events')`,
      )
      .all();
    if (version === 0 || tables.length < 4) {
      throw new MoveInRefused(
        `${file} is not a persona store database (it has no personas, fields, notes and events tables); --from takes the persona store's data folder or its ${DATABASE_FILE}.`,
      );
    }
    if (version > MIGRATIONS.sqlite.length) {
      throw new MoveInRefused(
        `${file} was written by a newer version of the app (schema ${version}, this one knows ${MIGRATIONS.sqlite.length}); update the app, then move in.`,
      );
    }
    return await db.transaction().execute(async (tx) => {
      const cards = await tx.selectFrom('personas').select(CARD_COLUMNS).orderBy('id').execute();
      const fields = await tx.selectFrom('fields').selectAll().orderBy('id').execute();
      const notes = await tx.selectFrom('notes').selectAll().orderBy('seq').execute();
      const events = await tx.selectFrom('events').selectAll().orderBy('id').execute();
      const byId = new Map<number, PersonaCopy>(
        cards.map((c) => [c.id, { persona: c, fields: [], notes: [], events: [] }]),
      );
      const byName = new Map<string, PersonaCopy>(cards.map((c) => [`${c.account}\n${c.profile}`, byId.get(c.id)!]));
      for (const { persona_id, ...f } of fields) byId.get(persona_id)?.fields.push(f);
      for (const { persona_id, ...n } of notes) byId.get(persona_id)?.notes.push(n);
      const deletedLogs: EventRow[] = [];
      for (const e of events) {
        const owner = byName.get(`${e.account}\n${e.profile}`);
        if (owner) owner.events.push(e);
        else deletedLogs.push(e);
      }
      return { file, personas: [...byId.values()], deletedLogs };
    });
  } finally {
    await db.destroy();
    if (sqlite.open) sqlite.close();
  }
}

/** Which integer ids to keep: kept when none of them is taken on the target (always so in an empty database). */
interface KeepIds {
  personas: boolean;
  fields: boolean;
  notes: boolean;
  events: boolean;
}

const NO_IDS: KeepIds = { personas: false, fields: false, notes: false, events: false };
/**
 * Rows per INSERT (and per move-in screening step): under both engines' limit on bound values (SQLite's
 * 32,766; PostgreSQL's 65,535 for 15 columns and a tsvector's 3 per row).
 */
const BATCH = 1000;

/** Rows screened between two looks at the writes (see moveIn): the statement on its way is answered and the next one sent. */
const SCREEN_STEP = 100;

function batches<T>(rows: T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

const without = <T extends object, K extends keyof T>(row: T, key: K, keep: boolean): Omit<T, K> | T => {
  if (keep) return row;
  const { [key]: _dropped, ...rest } = row;
  return rest;
};

/** An entry as copied: its row id absent where the target is to number it, its persona the target's. */
type CopiedEntry<T extends EntryTable> = PersonaCopy[T][number];

/** How each kind of entry meets the target's full-text index: the columns its INSERT sets, and indexing it once written. */
const INDEXING: {
  [T in EntryTable]: {
    columns: (fullText: FullText, row: CopiedEntry<T>) => IndexColumns;
    index: (fullText: FullText, db: Db, row: EntryRow<T>) => Promise<void>;
  };
} = {
  fields: {
    columns: (fullText, f) => fullText.fieldColumns(f.state, () => fieldIndexText(f)),
    index: (fullText, db, f) => fullText.indexField(db, f, fieldIndexText(f)),
  },
  notes: {
    columns: (fullText, n) => fullText.noteColumns(n.state, n.content),
    index: (fullText, db, n) => fullText.indexNote(db, n),
  },
};

/** Writes a persona's entries of one kind in batches, and puts the live ones in the full-text index. */
async function writeEntries<T extends EntryTable>(
  engine: PersonaEngine,
  db: Db,
  table: T,
  rows: CopiedEntry<T>[],
  personaId: number,
  keepIds: boolean,
): Promise<void> {
  for (const batch of batches(rows)) await writeEntryBatch(engine, db, table, batch, personaId, keepIds);
}

/**
 * One INSERT of entries (at most BATCH): the engine's bulk statement where it has one (PostgreSQL); else
 * through Kysely, the rows coming back only where the engine indexes them after their own statement (SQLite).
 */
async function writeEntryBatch<T extends EntryTable>(
  engine: PersonaEngine,
  db: Db,
  table: T,
  batch: CopiedEntry<T>[],
  personaId: number,
  keepIds: boolean,
): Promise<void> {
  const how = INDEXING[table];
  const rows = batch.map((row) => ({
    ...without(row as Record<string, unknown>, ENTRIES[table].rowId, keepIds),
    persona_id: personaId,
  }));
  if (engine.insertRows) {
    await engine.insertRows(db, table, rows);
    return;
  }
  const insert = db
    .insertInto(table as EntryTable)
    .values(
      rows.map((row, i) => ({ ...row, ...how.columns(engine.fullText, batch[i]!) })) as Insertable<
        PersonaTables[EntryTable]
      >[],
    );
  if (!engine.fullText.indexesAfterWrite) {
    await insert.execute();
    return;
  }
  const written = await insert.returning(columnsOf(table as EntryTable)).execute();
  for (const row of written as EntryRow<T>[]) {
    if (row.state === 'live') await how.index(engine.fullText, db, row);
  }
}

/**
 * Writes one persona with every row as given, inside the caller's write transaction, and puts its live
 * fields and notes in the target's full-text index (the engine's own, the same columns and calls the
 * operations use: on PostgreSQL the batch's INSERT carries each row's tsvector).
 * The live counts on the persona row follow from the engine's triggers. Returns the persona's id there.
 */
export async function writePersona(
  engine: PersonaEngine,
  db: Db,
  copy: PersonaCopy,
  account: string,
  keep: KeepIds = NO_IDS,
): Promise<number> {
  const personaId = await insertPersonaRow(db, copy, account, keep);
  for (const table of ['fields', 'notes'] as const) {
    await writeEntries(engine, db, table, copy[table], personaId, keep[table]);
  }
  await writeEvents(engine, db, eventsOf(copy, account), keep.events);
  return personaId;
}

async function insertPersonaRow(db: Db, copy: PersonaCopy, account: string, keep: KeepIds): Promise<number> {
  const { id } = await db
    .insertInto('personas')
    .values({ ...without(copy.persona, 'id', keep.personas), account })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}

/** A persona's change-log entries as the target keeps them: under its account and profile there. */
const eventsOf = (copy: PersonaCopy, account: string, events = copy.events) =>
  events.map((e) => ({ ...e, account, profile: copy.persona.profile }));

async function writeEvents(
  engine: PersonaEngine,
  db: Db,
  events: (Omit<EventRow, 'id'> & { id?: number })[],
  keepIds: boolean,
): Promise<void> {
  for (const rows of batches(events)) {
    if (engine.insertRows) {
      await engine.insertRows(
        db,
        'events',
        rows.map((e) => without(e, 'id', keepIds)),
      );
      continue;
    }
    await db
      .insertInto('events')
      .values(rows.map((e) => without(e, 'id', keepIds)))
      .execute();
  }
}

/**
 * The live counts on a persona row are kept by per-row triggers; on PostgreSQL each firing writes a new
 * version of that one row, and within one transaction those versions pile up, so that writing N entries
 * cost N^2 (100,000 notes: over 20 minutes). A bulk write switches them off inside its own transaction
 * (ALTER TABLE locks the tables until commit, so no other session sees them off) and counts once at the
 * end ('on' with the personas written). SQLite updates the row in place: nothing to do there.
 */
export async function liveCountTriggers(
  target: PersonaEngine,
  db: Db,
  turn: 'off' | 'on',
  personaIds: number[] = [],
): Promise<void> {
  if (target.name !== 'postgres') return;
  for (const table of ['fields', 'notes'] as const)
    await sql`ALTER TABLE ${sql.table(table)} ${sql.raw(turn === 'off' ? 'DISABLE' : 'ENABLE')} TRIGGER USER`.execute(
      db,
    );
  if (turn === 'off') return;
  for (const id of personaIds) {
    await db
      .updateTable('personas')
      .set((eb) => ({
        live_fields: eb
          .selectFrom('fields')
          .select(eb.fn.countAll<number>().as('n'))
          .where('persona_id', '=', id)
          .where('state', '=', 'live'),
        live_notes: eb
          .selectFrom('notes')
          .select(eb.fn.countAll<number>().as('n'))
          .where('persona_id', '=', id)
          .where('state', '=', 'live'),
      }))
      .where('id', '=', id)
      .execute();
  }
}

/** Whether the target holds any row whose id falls in [min, max] of the ids to be copied. */
async function idsFree(db: Db, table: 'personas' | 'fields' | 'notes' | 'events', ids: number[]): Promise<boolean> {
  if (ids.length === 0) return true;
  const column = table === 'notes' ? 'seq' : 'id';
  // A reduce, not Math.min(...ids): 100,000 arguments would overflow the stack.
  const min = ids.reduce((a, b) => Math.min(a, b));
  const max = ids.reduce((a, b) => Math.max(a, b));
  const { rows } = await sql<{
    n: number | string;
  }>`SELECT count(*) AS n FROM ${sql.table(table)} WHERE ${sql.ref(column)} BETWEEN ${min} AND ${max}`.execute(db);
  return Number(rows[0]?.n ?? 0) === 0;
}

/**
 * The account a token's sub keeps its rows under on `target`, as the service there decides it: on
 * PostgreSQL, the name PERSONA_SHARED_ACCOUNTS gives this machine's account (shared with the person's
 * other machines), else the sub itself.
 */
export function storedAccount(target: PersonaEngine, sub: string): string {
  return target.accountOf(sub);
}

/** PostgreSQL's text cannot hold U+0000 (SQLite's can): refused up front, naming where, rather than failing half-way. */
function findNul(personas: PersonaCopy[], deletedLogs: EventRow[]): MoveInRefused | undefined {
  const nul = (row: object) => Object.values(row).some((v) => typeof v === 'string' && v.includes('\u0000'));
  for (const { persona, fields, notes, events } of personas) {
    const where = nul(persona)
      ? 'its card'
      : fields.find(nul)
        ? `field "${fields.find(nul)!.key.replaceAll('\u0000', '\\0')}"`
        : notes.find(nul)
          ? `note ${notes.find(nul)!.id}`
          : events.some(nul)
            ? 'its change log'
            : undefined;
    if (where) {
      return new MoveInRefused(
        `Nothing was copied: persona "${persona.profile}" (account ${persona.account}) holds the character U+0000 (NUL) in ${where}, which PostgreSQL ` +
          'cannot store. Write that entry again without it on this computer (or forget it), then move in again.',
      );
    }
  }
  if (deletedLogs.some(nul))
    return new MoveInRefused(
      'Nothing was copied: a deleted persona\u2019s change-log entry holds the character U+0000 (NUL), which PostgreSQL cannot store.',
    );
  return undefined;
}

export interface MoveInOptions {
  /** The account (a token's sub) the copied rows belong to on the target; default: the one they belong to in the source. Mapped as the service maps it (storedAccount). */
  account?: string;
  /** Copy only this account's rows of the source (it may hold several accounts). */
  sourceAccount?: string;
  /** The sizes every row is held to, as the service on the target holds its writes (PERSONA_MAX_*). */
  limits: Limits;
}

export interface MoveInReport {
  /** Personas copied, with what came with each. */
  copied: { account: string; profile: string; fields: number; notes: number; events: number }[];
  /** Personas found on the target from an earlier move-in (same account, profile and creation time): left as they are. */
  alreadyThere: { account: string; profile: string }[];
  /** Change-log entries of personas deleted in the source (each the one persona_deleted entry the store keeps). */
  deletedLogs: number;
  /** Tables whose integer ids were taken on the target, so the copies were numbered anew (in the source's order). */
  renumbered: string[];
}

const MAX_NAMED = 10;
const named = (list: { account: string; profile: string }[]) =>
  list
    .slice(0, MAX_NAMED)
    .map((p) => `"${p.profile}" (account ${p.account})`)
    .join(', ') + (list.length > MAX_NAMED ? ` and ${list.length - MAX_NAMED} more` : '');

/**
 * Copies `source` into `target` in one write transaction: everything or nothing. A persona whose
 * account and profile the target already has is either the same persona from an earlier move-in (same
 * creation time: left as it is, reported as already there) or another one, which refuses the whole
 * move-in with a message that says what to do. Run again after a success, it finds everything there and
 * writes nothing; after a refusal, nothing was written.
 */
export async function moveIn(source: SourceData, target: PersonaEngine, options: MoveInOptions): Promise<MoveInReport> {
  let personas = source.personas;
  let deletedLogs = source.deletedLogs;
  const accounts = [...new Set([...personas.map((p) => p.persona.account), ...deletedLogs.map((e) => e.account)])];
  if (options.sourceAccount !== undefined) {
    if (!accounts.includes(options.sourceAccount)) {
      throw new MoveInRefused(
        `${source.file} holds nothing of account ${options.sourceAccount}; its accounts are ${accounts.join(', ') || '(none)'}.`,
      );
    }
    personas = personas.filter((p) => p.persona.account === options.sourceAccount);
    deletedLogs = deletedLogs.filter((e) => e.account === options.sourceAccount);
  } else if (options.account !== undefined && accounts.length > 1) {
    throw new MoveInRefused(
      `${source.file} holds the personas of ${accounts.length} accounts (${accounts.join(', ')}); --account gives all of them to one account, ` +
        'so choose which one moves in with --source-account <id> (run once per account).',
    );
  }
  const accountOf = (account: string) => storedAccount(target, options.account ?? account);
  const screen = new RowScreen(options.limits);
  /** Screens every row (a row's refusal comes before any other), then throws `refusal`. */
  const refuseAfterScreening = async (refusal: Error): Promise<never> => {
    await screenSource({ personas, deletedLogs }, options.limits);
    throw refusal;
  };
  try {
    if (target.name === 'postgres') {
      const nul = findNul(personas, deletedLogs);
      if (nul) await refuseAfterScreening(nul);
    }
    return await target.write(async (db) => {
      // Nothing else writes while the copy decides and writes: ids checked free stay free, and a profile checked absent stays absent.
      if (target.name === 'postgres')
        await sql`LOCK TABLE personas, fields, notes, events IN SHARE ROW EXCLUSIVE MODE`.execute(db);
      const alreadyThere: MoveInReport['alreadyThere'] = [];
      const conflicts: MoveInReport['alreadyThere'] = [];
      const fresh = new Set<PersonaCopy>();
      for (const copy of personas) {
        const account = accountOf(copy.persona.account);
        const there = await db
          .selectFrom('personas')
          .select('created_at')
          .where('account', '=', account)
          .where('profile', '=', copy.persona.profile)
          .executeTakeFirst();
        if (!there) fresh.add(copy);
        else if (there.created_at === copy.persona.created_at)
          alreadyThere.push({ account, profile: copy.persona.profile });
        else conflicts.push({ account, profile: copy.persona.profile });
      }
      if (conflicts.length > 0) {
        await refuseAfterScreening(
          new MoveInRefused(
            `Nothing was copied: the target already has ${conflicts.length === 1 ? 'a persona' : 'personas'} ${named(conflicts)} that ${conflicts.length === 1 ? 'is' : 'are'} not ` +
              'the one in this SQLite file (another computer made it, or it was made there anew). Moving in never overwrites. Either keep the ' +
              'target\u2019s: delete or rename the profile in this computer\u2019s store (running it on SQLite), then move in again; or keep this one: export the ' +
              'target\u2019s (GET /v1/personas/{profile}/export), delete it there (DELETE /v1/personas/{profile}), then move in again.',
          ),
        );
      }
      // A deleted persona's log entry is copied unless the target keeps a log for that profile already (an earlier move-in, or a persona there).
      const logs: EventRow[] = [];
      for (const e of deletedLogs) {
        const there = await db
          .selectFrom('events')
          .select('id')
          .where('account', '=', accountOf(e.account))
          .where('profile', '=', e.profile)
          .executeTakeFirst();
        if (!there) logs.push({ ...e, account: accountOf(e.account) });
      }
      const report: MoveInReport = { copied: [], alreadyThere, deletedLogs: logs.length, renumbered: [] };
      if (fresh.size === 0 && logs.length === 0) {
        await screenSource({ personas, deletedLogs }, options.limits);
        return report;
      }

      const copies = personas.filter((c) => fresh.has(c));
      const keep: KeepIds = {
        personas: await idsFree(
          db,
          'personas',
          copies.map((c) => c.persona.id!),
        ),
        fields: await idsFree(
          db,
          'fields',
          copies.flatMap((c) => c.fields.map((f) => f.id!)),
        ),
        notes: await idsFree(
          db,
          'notes',
          copies.flatMap((c) => c.notes.map((n) => n.seq!)),
        ),
        events: await idsFree(db, 'events', [
          ...copies.flatMap((c) => c.events.map((e) => e.id!)),
          ...logs.map((e) => e.id),
        ]),
      };
      report.renumbered = (Object.keys(keep) as (keyof KeepIds)[]).filter((t) => !keep[t]);
      await liveCountTriggers(target, db, 'off');
      const rebuilt = await searchIndexesOff(target, db);

      // One pass: each batch of rows is screened, then written while the next batch is screened, so that no row
      // reaches the target before the screen has read it. A refusal stops the writing; the transaction then
      // rolls back, and nothing was written.
      const writes = new WriteQueue();
      const written: number[] = [];
      const copyLogs = new Map(logs.map((e) => [e.id, e]));
      /** Queues the write of rows the screen has read, and lets the writes queued so far go on meanwhile. */
      const queue = async (write: () => Promise<unknown>) => {
        await screen.flush();
        if (screen.refused) return;
        writes.push(write);
        await writes.turn();
      };
      try {
        for (const copy of personas) {
          await screen.persona(copy);
          const copying = fresh.has(copy) && !screen.refused;
          const account = accountOf(copy.persona.account);
          if (copying) {
            await queue(async () => {
              writes.personaId = await insertPersonaRow(db, copy, account, keep);
              written.push(writes.personaId);
            });
          }
          for (const table of ['fields', 'notes'] as const) {
            for (const batch of batches<CopiedEntry<typeof table>>(copy[table])) {
              for (const part of batches(batch, SCREEN_STEP)) {
                await (table === 'fields'
                  ? screen.fields(copy, part as PersonaCopy['fields'])
                  : screen.notes(copy, part as PersonaCopy['notes']));
                await writes.turn();
              }
              if (copying) await queue(() => writeEntryBatch(target, db, table, batch, writes.personaId, keep[table]));
            }
          }
          for (const batch of batches(copy.events)) {
            for (const part of batches(batch, SCREEN_STEP)) {
              await screen.events(copy, part);
              await writes.turn();
            }
            if (copying) await queue(() => writeEvents(target, db, eventsOf(copy, account, batch), keep.events));
          }
          if (copying) {
            report.copied.push({
              account,
              profile: copy.persona.profile,
              fields: copy.fields.length,
              notes: copy.notes.length,
              events: copy.events.length,
            });
          }
        }
        for (const batch of batches(deletedLogs)) {
          await screen.events(undefined, batch);
          const copied = batch.flatMap((e) => copyLogs.get(e.id) ?? []);
          if (copied.length > 0) await queue(() => writeEvents(target, db, copied, keep.events));
        }
        await screen.finish();
      } catch (err) {
        // Nothing more is sent, and the transaction ends (rolled back) only once nothing is on its way.
        writes.stop();
        await writes.settled();
        throw err;
      }
      try {
        await writes.settled(true);
      } catch (err) {
        // Note ids are unique across the database: the same notes under another account means this file was moved in before with another --account.
        if (target.isUniqueViolation(err)) {
          throw new MoveInRefused(
            'Nothing was copied: the target already holds some of these notes (the same note ids) under another account or profile, so this file ' +
              'was moved in before, probably with another --account. Move in with the account used then, or delete those personas on the target first.',
          );
        }
        throw err;
      }
      await liveCountTriggers(target, db, 'on', written);
      await searchIndexesOn(db, rebuilt);
      if (target.name === 'postgres') {
        // Ids written as given leave each table's sequence behind: set it past the largest id, so that new rows never take a copied one.
        const sequences = [
          ['personas', 'id'],
          ['fields', 'id'],
          ['notes', 'seq'],
          ['events', 'id'],
        ] as const;
        for (const [table, column] of sequences) {
          await sql`SELECT setval(pg_get_serial_sequence(${table}, ${column}), (SELECT max(${sql.ref(column)}) FROM ${sql.table(table)}))
            WHERE EXISTS (SELECT 1 FROM ${sql.table(table)})`.execute(db);
        }
      }
      return report;
    });
  } catch (err) {
    if (!(err instanceof RowRefused)) throw err;
    throw new MoveInRefused(
      `Nothing was copied: ${err.message}. The store never writes such a row, so something else changed ${source.file}. Forget that entry on this ` +
        'computer with forget_mode destroy_now (which also scrubs it from the change log), or delete its persona, then move in again.',
    );
  }
}

/**
 * The statements of a bulk write, run one after another on the transaction's connection while the caller
 * goes on (screening the next rows); the first that fails stops the rest, and `settled` then throws it.
 */
class WriteQueue {
  /** The id of the persona the queue wrote last (its entries follow it). */
  personaId = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private stopped = false;

  push(write: () => Promise<unknown>): void {
    this.chain = this.chain.then(() => (this.stopped ? undefined : write()));
    // Handled when settled() is awaited; until then, a failure must not count as an unhandled rejection.
    this.chain.catch(() => undefined);
  }

  /** Lets the statements on their way be answered and the next one sent (the event loop takes a turn). */
  turn(): Promise<void> {
    return new Promise((resolve) => setImmediate(resolve));
  }

  /** Nothing queued and not yet sent will be. */
  stop(): void {
    this.stopped = true;
  }

  /** Waits for every statement queued; throws the first failure only when asked to. */
  async settled(rethrow = false): Promise<void> {
    if (rethrow) await this.chain;
    else await this.chain.catch(() => undefined);
  }
}

/**
 * On PostgreSQL, a full-text index into which rows go one at a time costs several times what building it
 * once costs; so a bulk write into tables without rows drops them first (searchIndexesOn builds them
 * again at its end, in the same transaction, which also holds the tables meanwhile). Tables that hold
 * rows already keep their index, and the rows join it as they are written.
 */
async function searchIndexesOff(target: PersonaEngine, db: Db): Promise<typeof POSTGRES_SEARCH_INDEXES> {
  if (target.name !== 'postgres') return [];
  const { rows } = await sql<{
    empty: boolean;
  }>`SELECT NOT EXISTS (SELECT 1 FROM fields) AND NOT EXISTS (SELECT 1 FROM notes) AS empty`.execute(db);
  if (!rows[0]!.empty) return [];
  for (const index of POSTGRES_SEARCH_INDEXES) await sql.raw(index.drop).execute(db);
  return POSTGRES_SEARCH_INDEXES;
}

async function searchIndexesOn(db: Db, dropped: typeof POSTGRES_SEARCH_INDEXES): Promise<void> {
  for (const index of dropped) await sql.raw(index.create).execute(db);
}
