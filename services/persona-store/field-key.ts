import { problem } from '../kit/problem.ts';

/**
 * Field keys are normalised to snake_case so that "favouriteColour", "Favourite Colour" and
 * "favourite-colour" are one key: Unicode NFKC, a break before each capital that follows a lower-case
 * letter or digit, lower case, every run of characters other than letters and digits becomes one
 * underscore, and underscores at either end are dropped.
 */
export function normaliseKey(raw: string): string {
  return raw
    .normalize('NFKC')
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1_$2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1_$2')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '_')
    .replace(/^_+|_+$/g, '');
}

/** Raw keys starting with "_" are refused: paths under /fields/_ belong to the service (/fields/_schema). */
export function fieldKey(raw: string, maxLength: number): string {
  if (raw.startsWith('_')) {
    throw problem.unprocessable(
      'A field key may not start with "_": paths under /fields/_ are reserved for the service (such as /fields/_schema). Choose a key that starts with a letter or digit.',
    );
  }
  const key = normaliseKey(raw);
  if (key.length === 0) {
    throw problem.unprocessable(
      'The field key has no letters or digits, so it normalises to nothing; choose a key with at least one letter or digit.',
    );
  }
  if ([...key].length > maxLength) {
    throw problem.unprocessable(
      `The field key is longer than ${maxLength} characters after normalisation to snake_case; choose a shorter key.`,
    );
  }
  return key;
}
