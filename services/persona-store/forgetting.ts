import type { Logger } from '../kit/logger.ts';
import { errorSummary } from '../kit/logger.ts';
import { DESTROYED_FIELD, record, SERVICE_ACTOR, type Change } from './change-log.ts';
import type { ForgetMode } from './config.ts';
import {
  rowIdOf,
  type EntryRow,
  type EntryState,
  type EntryTable,
  type FieldRow,
  type NoteRow,
  type PersonaRow,
} from './tables.ts';
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

export async function forgetField(
  sql: PersonaSql,
  persona: PersonaRow,
  row: FieldRow,
  policy: Policy,
  assertedBy: string,
  now: Date,
): Promise<ForgetOutcome | undefined> {
  const outcome = forgetStep(row.state, policy.forgetMode);
  if (outcome === 'destroyed') await destroyField(sql, persona, row, assertedBy, now.toISOString());
  if (outcome === undefined || outcome === 'destroyed') return outcome;
  if (row.state === 'live') await sql.unindexField(row);
  const pending = outcome === 'pending';
  await sql.updateField({
    ...row,
    state: outcome,
    destroy_at: pending ? destroyAt(policy, now) : null,
    updated_at: now.toISOString(),
  });
  await record(
    sql,
    entryChange(persona, 'field', 'forgotten', row.key, assertedBy, [pending ? 'pending_destruction' : 'kept']),
    now.toISOString(),
  );
  return outcome;
}

export async function forgetNote(
  sql: PersonaSql,
  persona: PersonaRow,
  row: NoteRow,
  policy: Policy,
  assertedBy: string,
  now: Date,
): Promise<ForgetOutcome | undefined> {
  const outcome = forgetStep(row.state, policy.forgetMode);
  if (outcome === 'destroyed') await destroyNote(sql, persona, row, assertedBy, now.toISOString());
  if (outcome === undefined || outcome === 'destroyed') return outcome;
  if (row.state === 'live') await sql.unindexNote(row);
  const pending = outcome === 'pending';
  await sql.updateNote({ ...row, state: outcome, destroy_at: pending ? destroyAt(policy, now) : null });
  await record(
    sql,
    entryChange(persona, 'note', 'forgotten', row.id, assertedBy, [pending ? 'pending_destruction' : 'kept']),
    now.toISOString(),
  );
  return outcome;
}

/** The change-log entry of what forgetting did to a field or note (the store's own doing: no source). */
function entryChange(
  persona: PersonaRow,
  kind: 'field' | 'note',
  what: 'forgotten' | 'destroyed',
  target: string,
  assertedBy: string,
  changes: string[],
): Change {
  return {
    account: persona.account,
    profile: persona.profile,
    action: `${kind}_${what}`,
    targetKind: kind,
    target,
    assertedBy,
    source: null,
    changes,
  };
}

/** Deletes the field for good; the caller merges the indexes in its transaction and checkpoints after it. */
export async function destroyField(
  sql: PersonaSql,
  persona: PersonaRow,
  row: FieldRow,
  assertedBy: string,
  at: string,
): Promise<void> {
  if (row.state === 'live') await sql.unindexField(row);
  await destroyed(sql, persona, 'field', row.id, row.key, DESTROYED_FIELD, assertedBy, at);
}

export async function destroyNote(
  sql: PersonaSql,
  persona: PersonaRow,
  row: NoteRow,
  assertedBy: string,
  at: string,
): Promise<void> {
  if (row.state === 'live') await sql.unindexNote(row);
  await destroyed(sql, persona, 'note', row.seq, row.id, row.id, assertedBy, at);
}

/** Deletes an entry's row, puts `shownAs` for its name in the change log, and logs the destruction under it. */
async function destroyed(
  sql: PersonaSql,
  persona: PersonaRow,
  kind: 'field' | 'note',
  rowId: number,
  name: string,
  shownAs: string,
  assertedBy: string,
  at: string,
): Promise<void> {
  await sql.deleteEntry(kind === 'field' ? 'fields' : 'notes', rowId);
  await sql.scrubEvents(persona.account, persona.profile, kind, name, shownAs);
  await record(sql, entryChange(persona, kind, 'destroyed', shownAs, assertedBy, ['destroyed']), at);
}

/**
 * Destroys every entry whose grace period has ended; returns how many. Each entry is destroyed in a
 * transaction of its own that holds its persona (as every write does) and reads it again, so that a
 * write or another copy's sweeper that got there first is not repeated.
 */
export async function sweep(sql: PersonaSql, now: Date): Promise<number> {
  const iso = now.toISOString();
  const destroyed =
    (await sweepDue(sql, 'fields', iso, destroyField)) + (await sweepDue(sql, 'notes', iso, destroyNote));
  if (destroyed > 0) {
    // Once for the round rather than per entry: the round returns only after it, and it drops every destroyed entry's terms.
    await sql.transaction((tx) => tx.destroyedInTransaction());
    await sql.afterDestruction();
  }
  return destroyed;
}

/** Destroys the entries of one kind whose grace period ended by `iso`, each as the sweep above says. */
async function sweepDue<T extends EntryTable>(
  sql: PersonaSql,
  table: T,
  iso: string,
  destroy: (tx: PersonaSql, persona: PersonaRow, row: EntryRow<T>, assertedBy: string, at: string) => Promise<void>,
): Promise<number> {
  let destroyed = 0;
  for (const due of await sql.due(table, iso)) {
    const done = await sql.transaction(async (tx) => {
      const persona = await tx.personaByIdForWrite(due.persona_id);
      const row = persona && (await tx.entryByRowId(table, rowIdOf(due)));
      if (!persona || row?.state !== 'pending' || row.destroy_at === null || row.destroy_at > iso) return false;
      await destroy(tx, persona, row, SERVICE_ACTOR, iso);
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
