import { z } from 'zod';

/**
 * Lists answer a page at a time. Two forms, both sized by a `limit` query member:
 * - in key order with a cursor (the persona store): a page and `next_after`, the key to pass back as
 *   `after` for the next page, null on the last page; `readPage` reads one row more than the page to
 *   know whether another page follows, so no count is needed;
 * - the first page and the total (the gateway's `{total, items}`), where the platform or the store counts.
 */

/** A whole number of at least 1 and at most `max` (no upper bound without one); `member` names it in refusals. */
function wholeLimit(member: string, max: number | undefined) {
  const range = max === undefined ? 'at least 1' : `1 to ${max}`;
  const limit = z.coerce.number().int(`${member} must be a whole number`).min(1, `${member} must be ${range}`);
  return { range, limit: max === undefined ? limit : limit.max(max, `${member} must be ${range}`) };
}

/**
 * The `limit` query member: a whole number from 1 to `max` (no upper bound without one), `fallback`
 * when absent (optional without one: the route decides). `member` names it in refusals.
 */
export function pageLimit(options: {
  max?: number;
  fallback: number;
  member?: string;
}): z.ZodDefault<ReturnType<typeof wholeLimit>['limit']>;
export function pageLimit(options?: {
  max?: number;
  member?: string;
}): z.ZodOptional<ReturnType<typeof wholeLimit>['limit']>;
export function pageLimit({
  max,
  fallback,
  member = 'limit',
}: { max?: number; fallback?: number; member?: string } = {}) {
  const { range, limit } = wholeLimit(member, max);
  const description = `How many items to return, ${range}${fallback === undefined ? '' : ` (default ${fallback})`}.`;
  return fallback === undefined
    ? limit.optional().meta({ description })
    : limit.default(fallback).meta({ description });
}

/** A page in key order: its rows and the cursor of the next page (null on the last). */
export interface KeyPage<Row, Cursor> {
  items: Row[];
  next_after: Cursor | null;
}

/**
 * One page in key order: `read(count)` reads up to `count` rows after the cursor the caller holds (from
 * the database, so it may answer later); asked for one more than `limit`, it says whether another page
 * follows without counting.
 */
export async function readPage<Row, Cursor>(
  limit: number,
  read: (count: number) => Row[] | Promise<Row[]>,
  cursorOf: (row: Row) => Cursor,
): Promise<KeyPage<Row, Cursor>> {
  const rows = await read(limit + 1);
  const items = rows.slice(0, limit);
  return { items, next_after: rows.length > limit ? cursorOf(items[items.length - 1]!) : null };
}
