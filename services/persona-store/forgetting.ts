import type { Logger } from '../kit/logger.ts';
import { errorSummary } from '../kit/logger.ts';
import { DESTROYED_FIELD, record, STORE_ACTOR, type Actor, type Change } from './change-log.ts';
import type { ForgetMode } from './config.ts';
import { rowIdOf, type EntryRow, type EntryState, type EntryTable, type PersonaRow } from './tables.ts';
import type { Policy } from './settings.ts';
import type { PersonaSql } from './store.ts';

/**
 * Forgetting follows the person's setting: keep (the entry leaves every answer and the index but
 * stays in the file; a PUT of a kept field's key revives it, a kept note is not revived), destroy
 * after the grace period (the sweeper destroys it when the period ends), or destroy at once.
 *
 * A DELETE of an entry that is already forgotten applies the person's current setting, so that an
 * entry kept under `keep` can still be destroyed after the person chose a destroying mode: a kept
 * entry is scheduled (destroy_after_grace) or destroyed (destroy_now); an entry pending destruction
 * is destroyed at once under destroy_now. Otherwise there is nothing to do and the DELETE answers 404,
 * like a missing entry (a kept entry under keep, a pending one under keep or destroy_after_grace: its
 * schedule is not moved).
 *
 * Destroying deletes the row (PRAGMA secure_delete zeroes what it occupied), scrubs the change log (a
 * destroyed field's key and every replaced value of the entry), merges the full-text indexes into one
 * segment each (FTS5 'optimize'), all in one transaction, then checkpoints the WAL with TRUNCATE. The
 * merge is what makes the index forget: an ordinary update or forget only adds a 'delete' entry in a
 * newer segment, and the terms of every earlier revision stay in older segments until a merge drops
 * them. FTS5's own secure-delete option removes only the terms of the revision it is given, so at
 * destruction it would leave the earlier revisions' words in the file (measured, see the README);
 * the merge drops them all, and PRAGMA secure_delete zeroes the pages the old segments occupied.
 * Turned on for every write, FTS5 secure-delete also made ordinary writes several times slower.
 * That is SQLite's way; on PostgreSQL the tables are rewritten with VACUUM FULL once the destruction
 * committed (engines/postgres.ts). Either is the engine's Destruction, which the callers run.
 */
export type ForgetOutcome = 'kept' | 'pending' | 'destroyed';

/** What a DELETE does to an entry in this state under this setting; undefined: nothing (404). */
function forgetStep(state: EntryState, mode: ForgetMode): ForgetOutcome | undefined {
  if (mode === 'destroy_now') return 'destroyed';
  if (state === 'live') return mode === 'keep' ? 'kept' : 'pending';
  if (state === 'kept' && mode === 'destroy_after_grace') return 'pending';
  return undefined;
}

const destroyAt = (policy: Policy, now: Date) =>
  new Date(now.getTime() + policy.gracePeriodSeconds * 1000).toISOString();

/** What forgetting does differently to each kind of entry. */
interface Forgettable<Row> {
  kind: 'field' | 'note';
  /** The entry's name in the change log: a field's key, a note's id. */
  name: (row: Row) => string;
  /** What the change log shows for that name once the entry is destroyed. */
  shownAs: (row: Row) => string;
  unindex: (sql: PersonaSql, row: Row) => Promise<void>;
  /** Writes the row's new state: a field's updated_at moves with it, a note keeps its time of revising. */
  update: (sql: PersonaSql, row: Row, at: string) => Promise<unknown>;
}

const FORGETTABLE: { [T in EntryTable]: Forgettable<EntryRow<T>> } = {
  fields: {
    kind: 'field',
    name: (row) => row.key,
    shownAs: () => DESTROYED_FIELD,
    unindex: (sql, row) => sql.unindexField(row),
    update: (sql, row, at) => sql.updateField({ ...row, updated_at: at }),
  },
  notes: {
    kind: 'note',
    name: (row) => row.id,
    shownAs: (row) => row.id,
    unindex: (sql, row) => sql.unindexNote(row),
    update: (sql, row) => sql.updateNote(row),
  },
};

/** Forgets a field or note per `policy` (see above); undefined: nothing to do (the DELETE answers 404). */
export async function forget<T extends EntryTable>(
  sql: PersonaSql,
  persona: PersonaRow,
  table: T,
  row: EntryRow<T>,
  policy: Policy,
  actor: Actor,
  now: Date,
): Promise<ForgetOutcome | undefined> {
  const outcome = forgetStep(row.state, policy.forgetMode);
  const at = now.toISOString();
  if (outcome === 'destroyed') await destroy(sql, persona, table, row, actor, at);
  if (outcome === undefined || outcome === 'destroyed') return outcome;
  const how = FORGETTABLE[table];
  if (row.state === 'live') await how.unindex(sql, row);
  const pending = outcome === 'pending';
  await how.update(sql, { ...row, state: outcome, destroy_at: pending ? destroyAt(policy, now) : null }, at);
  const changes = [pending ? 'pending_destruction' : 'kept'];
  await record(sql, entryChange(persona, how.kind, 'forgotten', how.name(row), actor, changes), at);
  return outcome;
}

/** The change-log entry of what forgetting did to a field or note (the store's own doing: no source). */
function entryChange(
  persona: PersonaRow,
  kind: 'field' | 'note',
  what: 'forgotten' | 'destroyed',
  target: string,
  actor: Actor,
  changes: string[],
): Change {
  return {
    account: persona.account,
    profile: persona.profile,
    action: `${kind}_${what}`,
    targetKind: kind,
    target,
    ...actor,
    source: null,
    changes,
  };
}

/**
 * Deletes the entry for good, puts what the change log shows for its name there, and logs the destruction
 * under it; the caller merges the indexes in its transaction and checkpoints after it.
 */
export async function destroy<T extends EntryTable>(
  sql: PersonaSql,
  persona: PersonaRow,
  table: T,
  row: EntryRow<T>,
  actor: Actor,
  at: string,
): Promise<void> {
  const how = FORGETTABLE[table];
  if (row.state === 'live') await how.unindex(sql, row);
  await sql.deleteEntry(table, rowIdOf(row));
  await sql.scrubEvents(persona.account, persona.profile, how.kind, how.name(row), how.shownAs(row));
  await record(sql, entryChange(persona, how.kind, 'destroyed', how.shownAs(row), actor, ['destroyed']), at);
}

/**
 * Destroys every entry whose grace period has ended; returns how many. Each entry is destroyed in a
 * transaction of its own that holds its persona (as every write does) and reads it again, so that a
 * write or another copy's sweeper that got there first is not repeated.
 */
export async function sweep(sql: PersonaSql, now: Date): Promise<number> {
  const iso = now.toISOString();
  const destroyed = (await sweepDue(sql, 'fields', iso)) + (await sweepDue(sql, 'notes', iso));
  if (destroyed > 0) {
    // Once for the round rather than per entry: the round returns only after it, and it drops every destroyed entry's terms.
    await sql.transaction((tx) => tx.destroyedInTransaction());
    await sql.afterDestruction();
  }
  return destroyed;
}

/** Destroys the entries of one kind whose grace period ended by `iso`, each as the sweep above says. */
async function sweepDue(sql: PersonaSql, table: EntryTable, iso: string): Promise<number> {
  let destroyed = 0;
  for (const due of await sql.due(table, iso)) {
    const done = await sql.transaction(async (tx) => {
      const persona = await tx.personaByIdForWrite(due.persona_id);
      const row = persona && (await tx.entryByRowId(table, rowIdOf(due)));
      if (!persona || row?.state !== 'pending' || row.destroy_at === null || row.destroy_at > iso) return false;
      await destroy(tx, persona, table, row, STORE_ACTOR, iso);
      return true;
    });
    if (done) destroyed++;
  }
  return destroyed;
}

/** Sweeps every `intervalSeconds` by the clock the store writes with (a test may set it and sweep at once instead). */
export function startSweeper(sql: PersonaSql, intervalSeconds: number, logger: Logger, clock: () => Date): () => void {
  let sweeping = false;
  const timer = setInterval(() => {
    // A round still running (a large backlog, a slow server) is not overlapped by the next.
    if (sweeping) return;
    sweeping = true;
    sweep(sql, clock())
      .then((n) => {
        if (n > 0) logger.info({ destroyed: n }, 'grace period ended; entries destroyed');
      })
      .catch((err: unknown) => logger.error({ err: errorSummary(err) }, 'sweep failed'))
      .finally(() => (sweeping = false));
  }, intervalSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
