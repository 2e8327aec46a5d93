/**
 * The persona page's pure parts: how a value is classed for display, which entries the filter keeps,
 * and counts in words.
 */
import { describe, expect, it } from 'vitest';
import { entryMatches, valueKind, writtenVia, type FieldEntry, type NoteEntry } from './src/entries.ts';
import { plural } from './src/words.ts';

const at = '2026-03-01T10:00:00.000Z';
const written = { source: 'assistant', asserted_by: 'persona', pinned: false, revision: 1 } as const;
/** A field as the persona store answers it. */
function field(key: string, value: unknown, description: string): FieldEntry {
  return {
    ...written,
    key,
    value,
    description,
    value_type: Array.isArray(value) ? 'list' : 'string',
    created_at: at,
    updated_at: at,
  };
}

describe('a persona entry on one line', () => {
  it('shows each value as what it is', () => {
    expect(valueKind('3')).toBe('text');
    expect(valueKind(3)).toBe('number');
    expect(valueKind(false)).toBe('boolean');
    expect(valueKind(null)).toBe('null');
    expect(valueKind({ a: 1 })).toBe('json');
    expect(valueKind(['Ada'])).toBe('json');
  });

  it('keeps the entries that hold every word of the filter, case aside', () => {
    const tea = field('favourite_tea', 'Assam, strong', 'The tea the household likes best');
    const kids = field('kids_names', ['Ada', 'Linus'], 'Names of the children');
    const walk: NoteEntry = {
      ...written,
      id: 'n1',
      content: 'The family walked the dog by the river.',
      kind: 'episode',
      written_at: at,
      revised_at: at,
    };
    expect(entryMatches('', tea)).toBe(true);
    expect(entryMatches('ASSAM', tea)).toBe(true);
    expect(entryMatches('household best', tea)).toBe(true);
    expect(entryMatches('household river', tea)).toBe(false);
    expect(entryMatches('linus', kids)).toBe(true);
    expect(entryMatches('river episode', walk)).toBe(true);
    expect(entryMatches('tea', walk)).toBe(false);
  });
});

describe('what wrote an entry', () => {
  it('is verified only when a token the store checked wrote it; an import and the file\u2019s claim never are', () => {
    expect(writtenVia('persona')).toEqual({ via: 'persona', verified: true });
    // What an import of an export file writes: the import, and what the file said wrote the entry.
    expect(writtenVia('import:persona')).toEqual({ via: 'an import', verified: false, claimed: 'persona' });
    expect(writtenVia('import:repohost-api')).toMatchObject({ verified: false, claimed: 'repohost-api' });
    expect(writtenVia('import')).toEqual({ via: 'an import', verified: false });
    expect(writtenVia('import').via).toBe('an import');
    expect(writtenVia('persona').via).toBe('persona');
  });
});

describe('counts in words', () => {
  it('says one in the singular and every other number in the plural', () => {
    expect(plural(1, 'CLI run')).toBe('1 CLI run');
    expect(plural(2, 'CLI run')).toBe('2 CLI runs');
    expect(plural(0, 'field')).toBe('0 fields');
    expect(plural(1, 'repository', 'repositories')).toBe('1 repository');
    expect(plural(1200, 'token')).toBe('1,200 tokens');
  });
});
