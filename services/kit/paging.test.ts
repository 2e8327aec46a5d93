import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeIssues } from './api.ts';
import { pageLimit, readPage } from './paging.ts';

const refusal = (schema: z.ZodType, value: unknown) => {
  const parsed = schema.safeParse(value);
  return parsed.success ? undefined : describeIssues(parsed.error, 'query');
};

describe('the limit of a page', () => {
  const limit = z.object({ limit: pageLimit({ max: 100, fallback: 20 }) });

  it('is a whole number from 1 to its maximum, its default when absent, and a refusal says which', () => {
    expect(limit.parse({})).toEqual({ limit: 20 });
    expect(limit.parse({ limit: '7' })).toEqual({ limit: 7 });
    expect(limit.parse({ limit: '100' })).toEqual({ limit: 100 });
    for (const sent of ['0', '101', '-1'])
      expect(refusal(limit, { limit: sent })).toMatch(/^query member limit: limit must be 1 to 100\./);
    expect(refusal(limit, { limit: '1.5' })).toMatch(/^query member limit: limit must be a whole number\./);
    expect(refusal(limit, { limit: 'ten' })).toMatch(/^query member limit: /);
  });

  it('without a maximum or a default, leaves both to the route and names its own member', () => {
    const open = z.object({ fields_limit: pageLimit({ member: 'fields_limit' }) });
    expect(open.parse({})).toEqual({});
    expect(open.parse({ fields_limit: '5000' })).toEqual({ fields_limit: 5000 });
    expect(refusal(open, { fields_limit: '0' })).toMatch(
      /^query member fields_limit: fields_limit must be at least 1\./,
    );
  });
});

describe('a page in key order', () => {
  const rows = ['a', 'b', 'c', 'd', 'e'];
  /** Rows after a cursor, as a keyed SELECT ... WHERE key > ? LIMIT ? reads them. */
  const after = (cursor: string) => (count: number) => rows.filter((r) => r > cursor).slice(0, count);

  it('reads one row more than the page, answers the page and the cursor of the next, null on the last', async () => {
    const asked: number[] = [];
    const first = await readPage(
      2,
      (n) => (asked.push(n), after('')(n)),
      (r) => r,
    );
    expect(first).toEqual({ items: ['a', 'b'], next_after: 'b' });
    expect(asked).toEqual([3]);
    expect(await readPage(2, after('b'), (r) => r)).toEqual({ items: ['c', 'd'], next_after: 'd' });
    expect(await readPage(2, after('d'), (r) => r)).toEqual({ items: ['e'], next_after: null });
    expect(await readPage(3, after('b'), (r) => r)).toEqual({ items: ['c', 'd', 'e'], next_after: null });
    expect(await readPage(3, after('e'), (r) => r)).toEqual({ items: [], next_after: null });
  });

  it('walks every row exactly once, page by page, whatever the page size', async () => {
    for (let size = 1; size <= 6; size++) {
      const seen: string[] = [];
      let cursor: string | null = '';
      while (cursor !== null) {
        const page: { items: string[]; next_after: string | null } = await readPage(
          size,
          async (n) => after(cursor ?? '')(n),
          (r) => r,
        );
        seen.push(...page.items);
        cursor = page.next_after;
      }
      expect(seen).toEqual(rows);
    }
  });
});
