import { createHash } from 'node:crypto';
import { z } from 'zod';
import { problem } from '../kit/problem.ts';
import type { PersonaSql } from './store.ts';
import type { EventRow } from './tables.ts';

/**
 * Conditional writes (RFC 9110 If-Match), so that a client that read an entry, then writes it, never
 * reverts a write that landed in between. A field's and a note's ETag is its revision, quoted (`"3"`);
 * `If-Match` takes that, the bare revision (`3`), several of them, or `*` (any live entry). The card has
 * no revision: its ETag is the time it last changed and a digest of its members. Without `If-Match` a
 * write is unconditional, as before. A condition that fails answers 412 with what changed since, from
 * the change log, and the ETag now; nothing is written.
 */
export const IfMatch = z.object({
  'if-match': z.string().max(400).optional().meta({
    description:
      'Write only if the entry is still as read: its ETag (a field\u2019s or note\u2019s revision, quoted, or the bare number; the card\u2019s ETag), or * for any live entry. Otherwise 412, saying what changed.',
  }),
});

export const ETAG_HEADER = {
  ETag: {
    description:
      'The entry as answered: a field\u2019s or note\u2019s revision, quoted; the card\u2019s version. Send it back in If-Match to write only if nothing changed since.',
  },
} as const;

/** What an If-Match asked for: any live entry, or one of these strong tags. */
export type Expected = '*' | readonly string[];

/** The ETag of a field or note: its revision, quoted. */
export const revisionTag = (revision: number): string => `"${revision}"`;

/** The card's ETag: when it last changed (base 36 ms, read back to say what changed since) and a digest of its members. */
export function cardTag(card: Record<string, unknown> & { updated_at: string }): string {
  const digest = createHash('sha256').update(JSON.stringify(card)).digest('base64url').slice(0, 12);
  return `"c${Date.parse(card.updated_at).toString(36)}-${digest}"`;
}

/** Parses If-Match; undefined when absent. A bare number is a revision. Anything else is refused in words (422). */
export function parseIfMatch(header: string | undefined): Expected | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (text === '*') return '*';
  const tags = text.split(',').map((t) => t.trim());
  const parsed = tags.map((t) => (/^\d{1,15}$/.test(t) ? `"${t}"` : /^(W\/)?"[\x21\x23-\x7e]*"$/.test(t) ? t : null));
  if (tags.length === 0 || parsed.some((t) => t === null)) {
    throw problem.unprocessable(
      'header If-Match is not an entity tag: send the ETag of what you read ("3", quoted, or the bare revision 3), several of them separated by commas, or * for any live entry.',
    );
  }
  return parsed as string[];
}

/** Strong comparison (RFC 9110 §8.8.3.2): a weak tag never matches. */
function matches(expected: Expected, current: string | undefined): boolean {
  if (current === undefined) return false;
  return expected === '*' || expected.includes(current);
}

/** What a list of change-log entries changed and who wrote them, in words and as members of the 412. */
function changedSince(rows: EventRow[]) {
  const changed = [...new Set(rows.flatMap((r) => JSON.parse(r.changes) as string[]))];
  const by = [...new Set(rows.map((r) => r.asserted_by))];
  const words = changed.length > 0 ? `${changed.join(', ')} changed` : 'it changed';
  return { changed, by, words: by.length > 0 ? `${words} (written by ${by.join(', ')})` : words };
}

/** The change-log actions that move a field's or note's revision. */
const REVISING = {
  field: ['field_set', 'field_revised', 'field_revived', 'field_pinned', 'field_unpinned'],
  note: ['note_added', 'note_revised', 'note_pinned', 'note_unpinned'],
} as const;

/**
 * Inside the persona's write transaction: refuses (412) a write whose If-Match the entry no longer
 * matches. `live` is the entry as it is now (undefined: no live entry, never set or forgotten).
 */
export async function requireEntryMatch(
  sql: PersonaSql,
  at: { account: string; profile: string },
  kind: 'field' | 'note',
  name: string,
  live: { revision: number } | undefined,
  expected: Expected | undefined,
): Promise<void> {
  if (expected === undefined) return;
  const current = live && revisionTag(live.revision);
  if (matches(expected, current)) return;
  const what = kind === 'field' ? `Field "${name}"` : `Note ${name}`;
  const sent = expected === '*' ? '*' : expected.join(', ');
  if (!live) {
    throw problem.preconditionFailed(
      `${what} has no live entry now (never written, or forgotten), so If-Match: ${sent} does not hold and nothing was written. Read it again before you write.`,
      { current_etag: null, changed: [], changed_by: [] },
    );
  }
  // How many revisions the caller missed; a tag that is no revision of ours (or a newer one) reads the latest entry only.
  const askedRevisions = expected === '*' ? [] : expected.map((t) => Number(/^"(\d+)"$/.exec(t)?.[1] ?? NaN));
  const newestAsked = Math.max(...askedRevisions.filter((n) => Number.isFinite(n) && n < live.revision), 0);
  const missed = newestAsked > 0 ? Math.min(live.revision - newestAsked, 50) : 1;
  const rows = await sql.events({
    ...at,
    target: name,
    targetKind: kind,
    actions: REVISING[kind],
    newestFirst: true,
    limit: missed,
  });
  const since = changedSince(rows);
  throw problem.preconditionFailed(
    `${what} changed since you read it (you sent If-Match: ${sent}; it is at revision ${live.revision} now): ${since.words}. ` +
      `Nothing was written; read it again, then send your change with If-Match: ${current}.`,
    { current_etag: current, changed: since.changed, changed_by: since.by },
    { ETag: current! },
  );
}

/** The same for the card, whose tag tells when the caller read it: the card's changes after that are named. */
export async function requireCardMatch(
  sql: PersonaSql,
  card: Record<string, unknown> & { profile: string; updated_at: string },
  account: string,
  expected: Expected | undefined,
): Promise<void> {
  if (expected === undefined) return;
  const current = cardTag(card);
  if (matches(expected, current)) return;
  const readAt = expected === '*' ? [] : expected.map((t) => parseInt(/^"c([0-9a-z]+)-/.exec(t)?.[1] ?? '', 36));
  const after = Math.max(...readAt.filter(Number.isFinite), 0);
  const rows = (
    await sql.events({
      account,
      profile: card.profile,
      target: card.profile,
      targetKind: 'persona',
      actions: ['persona_updated'],
      since: new Date(after).toISOString(),
      limit: 50,
    })
  ).filter((r) => Date.parse(r.at) > after);
  const since = changedSince(rows);
  throw problem.preconditionFailed(
    `The card of "${card.profile}" changed since you read it: ${since.words}. Nothing was written; read it again, then send your change with If-Match: ${current}.`,
    { current_etag: current, changed: since.changed, changed_by: since.by },
    { ETag: current },
  );
}
