import { describe, expect, it } from 'vitest';
import { Problem } from '../kit/problem.ts';
import { fieldKey, normaliseKey } from './field-key.ts';

describe('normaliseKey: one key however it is written', () => {
  it('camelCase, spaces and hyphens are one snake_case key', () => {
    for (const raw of [
      'favouriteColour',
      'Favourite Colour',
      'favourite-colour',
      'FAVOURITE_COLOUR',
      ' favourite  colour ',
    ])
      expect(normaliseKey(raw), raw).toBe('favourite_colour');
  });

  it('breaks before each capital after a small letter or digit, and before the last capital of an acronym', () => {
    expect(normaliseKey('aBcDeF')).toBe('a_bc_de_f');
    expect(normaliseKey('item2Name')).toBe('item2_name');
    expect(normaliseKey('HTTPServer')).toBe('http_server');
    expect(normaliseKey('myHTTPServerURL')).toBe('my_http_server_url');
    expect(normaliseKey('ABC')).toBe('abc');
    expect(normaliseKey('Abc')).toBe('abc');
    expect(normaliseKey('ÉtéChaud')).toBe('été_chaud');
  });

  it('folds compatibility forms (NFKC) and keeps letters and digits of every script', () => {
    expect(normaliseKey('ｆｕｌｌＷｉｄｔｈ')).toBe('full_width');
    expect(normaliseKey('Größe')).toBe('größe');
    expect(normaliseKey('日本語キー')).toBe('日本語キー');
    expect(normaliseKey('ﬁle')).toBe('file');
    expect(normaliseKey('٣ items')).toBe('٣_items');
  });

  it('makes every run of other characters one underscore, and drops them at either end', () => {
    expect(normaliseKey('a -.b')).toBe('a_b');
    expect(normaliseKey('a__b')).toBe('a_b');
    expect(normaliseKey('--a--b--')).toBe('a_b');
    expect(normaliseKey('__a')).toBe('a');
    expect(normaliseKey('a!@#$%^&*()b')).toBe('a_b');
    expect(normaliseKey('---')).toBe('');
  });
});

describe('fieldKey', () => {
  const refusal = (raw: string, max = 64) => {
    try {
      fieldKey(raw, max);
    } catch (err) {
      expect(err).toBeInstanceOf(Problem);
      expect((err as Problem).status).toBe(422);
      return (err as Problem).detail;
    }
    throw new Error(`${raw} was taken`);
  };

  it('answers the normalised key', () => {
    expect(fieldKey('Favourite Colour', 64)).toBe('favourite_colour');
  });

  it('refuses a raw key starting with "_", which the service\u2019s own paths use', () => {
    for (const raw of ['_schema', '_', '__x'])
      expect(refusal(raw)).toBe(
        'A field key may not start with "_": paths under /fields/_ are reserved for the service (such as /fields/_schema). Choose a key that starts with a letter or digit.',
      );
    expect(fieldKey('-x', 64)).toBe('x');
  });

  it('refuses a key with no letter or digit', () => {
    for (const raw of ['---', ' ', '!?', ''])
      expect(refusal(raw)).toBe(
        'The field key has no letters or digits, so it normalises to nothing; choose a key with at least one letter or digit.',
      );
  });

  it('refuses a key longer than the limit after normalisation, counting characters rather than UTF-16 units', () => {
    expect(fieldKey('abcd', 4)).toBe('abcd');
    expect(refusal('abcde', 4)).toBe(
      'The field key is longer than 4 characters after normalisation to snake_case; choose a shorter key.',
    );
    // Longer as written, short once normalised.
    expect(fieldKey('  a--b  ', 3)).toBe('a_b');
    // Four Deseret letters: eight UTF-16 units, four characters.
    expect(fieldKey('\u{10428}\u{10429}\u{1042A}\u{1042B}', 4)).toBe('\u{10428}\u{10429}\u{1042A}\u{1042B}');
    expect(refusal('\u{10428}\u{10429}\u{1042A}\u{1042B}\u{1042C}', 4)).toMatch(/longer than 4 characters/);
  });
});
