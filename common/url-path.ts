/**
 * The one way a path that carries input is built, wherever the console or a service calls another:
 * each value is one whole segment, percent-encoded, and never "." or ".." (URL resolution would turn a
 * forget of field ".." into a request for the persona itself). Queries go in URLSearchParams instead.
 */

/** A path made by `urlPath`: requests to the services take only this, so no path is built by hand. */
export type UrlPath = string & { readonly __urlPath: true };

/** A value that cannot be a path segment; its message says what to change and never repeats the value. */
export class PathSegmentError extends Error {
  override name = 'PathSegmentError';
}

/**
 * `urlPath\`/v1/personas/${profile}/fields/${key}\``: the literal text is the path's fixed part, each
 * value one segment between slashes. Refused: an empty value, "." and "..", and text that is not valid
 * Unicode (a lone surrogate). Encoded: everything else that is not a letter, digit or one of -_.!~*'().
 */
export function urlPath(literal: TemplateStringsArray, ...values: readonly (string | number)[]): UrlPath {
  if (!literal[0]!.startsWith('/') || literal[0]!.startsWith('//'))
    throw new TypeError('urlPath: a path starts with one "/".');
  let path = literal[0]!;
  values.forEach((value, i) => {
    const after = literal[i + 1]!;
    // Each value is a whole segment, so no two values (or a value and fixed text) can make a dot segment together.
    if (!path.endsWith('/') || !(after === '' || after.startsWith('/')))
      throw new TypeError('urlPath: a value must be a whole segment between slashes.');
    path += segment(String(value)) + after;
  });
  return path as UrlPath;
}

function segment(value: string): string {
  if (value === '') throw new PathSegmentError('A name in the address is empty; give it at least one character.');
  if (value === '.' || value === '..')
    throw new PathSegmentError(
      'A name in the address may not be "." or ".." (it would name another place); choose another.',
    );
  try {
    return encodeURIComponent(value);
  } catch {
    throw new PathSegmentError(
      'A name in the address is not valid Unicode text (it holds a lone surrogate); send it as ordinary text.',
    );
  }
}
