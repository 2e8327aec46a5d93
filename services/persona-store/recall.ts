import { problem } from '../kit/problem.ts';

/** Most words of q that take part in a search; more are refused rather than silently dropped. */
export const MAX_QUERY_WORDS = 32;

/**
 * Most matching entries ranked per list (fields, notes). Ranking reads every candidate (its score is
 * computed from its text), so a word in nearly every note would cost in proportion to the persona; when
 * more entries match, the newest RECALL_CANDIDATES of them (by when the entry was first written) are
 * ranked and the answer says so (`capped`). Fewer matches: every one is ranked, as always.
 */
export const RECALL_CANDIDATES = 1000;

/**
 * Control characters (NUL among them, which ends an FTS5 string early and made SQLite fail) and lone
 * surrogates carry no word: they separate words, like white space.
 */
const SEPARATORS = /[\p{Cc}\p{Cs}]/gu;

/**
 * The words of what a person typed, each an ordinary word, never an operator: control characters and
 * lone surrogates become spaces, q is split on white space, and pieces with no letter or digit (which
 * carry nothing either engine would index) are dropped. Every remaining word must occur. The engine
 * turns them into its own query (engines/): on SQLite each word quoted as an FTS5 phrase, so AND, OR,
 * NOT, NEAR, *, ^, :, ( and quotes are words to find; on PostgreSQL each word a phraseto_tsquery of its
 * pieces (which reads no operator), all of them required.
 */
export function queryWords(q: string): string[] {
  const words = q
    .replace(SEPARATORS, ' ')
    .normalize('NFKC')
    .split(/\s+/u)
    .filter((w) => /[\p{L}\p{N}]/u.test(w));
  if (words.length === 0) {
    throw problem.unprocessable(
      'query member q has no word to search for (it needs at least one letter or digit); send q with the words to recall.',
    );
  }
  if (words.length > MAX_QUERY_WORDS) {
    throw problem.unprocessable(
      `query member q has more than ${MAX_QUERY_WORDS} words; send at most ${MAX_QUERY_WORDS}.`,
    );
  }
  return words;
}

/**
 * The text of a field value that recall searches: every string and number inside it, and its member
 * names, in document order. Walked with a stack of its own, never recursion: the order must stay
 * exactly this one, because un-indexing a field recomputes it from the stored value.
 */
export function searchableText(value: unknown): string {
  const out: string[] = [];
  // Pushed in reverse so that they pop in document order; a member name is a string to index like any other.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') out.push(v);
    else if (typeof v === 'number' || typeof v === 'boolean') out.push(String(v));
    else if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) stack.push(entries[i]![1], entries[i]![0]);
    }
  }
  return out.join(' ');
}

/** Keys are indexed with their underscores as spaces, so "favourite colour" finds favourite_colour. */
export function searchableKey(key: string): string {
  return key.replace(/_/g, ' ');
}

/**
 * The three columns a field is indexed with (key, description, value text); indexing and unindexing
 * both use it. `value` is the row's value already parsed, when the caller has it at hand.
 */
export function fieldIndexText(
  row: { key: string; description: string; value: string },
  value: unknown = JSON.parse(row.value),
): [string, string, string] {
  return [searchableKey(row.key), row.description, searchableText(value)];
}
