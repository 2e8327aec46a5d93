import { CHANGE_ACTIONS, type ChangeAction, type ChangeTargetKind } from '../../common/change-log.ts';
import type { Principal } from '../kit/auth.ts';
import type { PersonaSql } from './store.ts';
import type { EventRow, LogEntry } from './tables.ts';

/** Every kind of change the log records, one entry per change: the words the console shares (common/). */
export const ACTIONS = CHANGE_ACTIONS;
export type Action = ChangeAction;
export type TargetKind = ChangeTargetKind;

/** What the change log shows for a field whose content was destroyed, in place of its key. */
export const DESTROYED_FIELD = '(destroyed field)';
/** asserted_by of changes the service makes by itself (the sweeper). */
export const SERVICE_ACTOR = 'persona-store';
/** The store itself as the actor of a change (the sweeper). */
export const STORE_ACTOR: Actor = { assertedBy: SERVICE_ACTOR, via: 'store' };

/** How a change came in (the log's `via`, see tables.ts): a fact the store records, beside asserted_by. */
export type Via = 'owner' | 'hub' | 'import' | 'store';

/** Who made a change: the verified token's audience (asserted_by, the spec's) and how it came in. */
export interface Actor {
  assertedBy: string;
  via: Via | null;
}

/** The actor of a request: its token's audience, and the kind of credential identity says minted it. */
export const actorOf = (principal: Principal): Actor => ({
  assertedBy: principal.audience,
  via: principal.purpose ?? null,
});

export interface Change {
  account: string;
  profile: string;
  action: Action;
  targetKind: TargetKind;
  target: string;
  assertedBy: string;
  via: Via | null;
  source: string | null;
  /** Names of the members that changed, never their values. */
  changes: string[];
  /** What the change replaced; only when the person asked to keep replaced values. */
  replaced?: Record<string, unknown>;
}

/** The log's entry for one change at `at`, the time the change itself was made (the operation's clock). */
export function logEntry(change: Change, at: string): LogEntry {
  return {
    account: change.account,
    profile: change.profile,
    at,
    action: change.action,
    target_kind: change.targetKind,
    target: change.target,
    asserted_by: change.assertedBy,
    source: change.source,
    changes: JSON.stringify(change.changes),
    replaced: change.replaced ? JSON.stringify(change.replaced) : null,
    via: change.via,
  };
}

/**
 * Records one change at `at` by a statement of its own. A write of a field or note row takes its entry
 * instead (logEntry, given to the row's write), which on PostgreSQL makes both one statement.
 */
export async function record(sql: PersonaSql, change: Change, at: string): Promise<void> {
  await sql.insertEvent(logEntry(change, at));
}

export function eventView(row: EventRow) {
  return {
    id: row.id,
    at: row.at,
    action: row.action,
    target_kind: row.target_kind,
    target: row.target,
    asserted_by: row.asserted_by,
    source: row.source,
    changes: JSON.parse(row.changes) as string[],
    via: row.via as Via | null,
    ...(row.replaced ? { replaced: JSON.parse(row.replaced) as Record<string, unknown> } : {}),
  };
}
