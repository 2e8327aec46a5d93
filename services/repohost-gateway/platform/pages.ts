/**
 * Page counting from the platform's `Link` header: lists answer one page and the exact total, read
 * from the last page rather than by walking every page in between.
 */

/** The number of the last page a `Link` header names (`rel="last"`); absent when everything fit on one page. */
export function lastPage(headers: { link?: string }): number | undefined {
  const last = /<[^>]*[?&]page=(\d+)[^>]*>;\s*rel="last"/.exec(headers.link ?? '')?.[1];
  return last === undefined ? undefined : Number(last);
}

/** One page of a platform list, read with the given paging members. */
export type PageRead<T> = (paging: {
  per_page: number;
  page: number;
}) => Promise<{ data: T[]; headers: { link?: string } }>;

/** A page of at most `limit` items and the exact total (one more read, of the last page, when there are several). */
export async function listWithTotal<T>(limit: number, read: PageRead<T>): Promise<{ total: number; items: T[] }> {
  const first = await read({ per_page: limit, page: 1 });
  const last = lastPage(first.headers);
  if (!last || last <= 1) return { total: first.data.length, items: first.data };
  const final = await read({ per_page: limit, page: last });
  return { total: (last - 1) * limit + final.data.length, items: first.data };
}
