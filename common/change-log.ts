/**
 * The persona store's change-log actions, for the store itself (services/persona-store/change-log.ts
 * takes them from here) and the console's filter and its sentences. Imports nothing.
 */

export const CHANGE_ACTIONS = [
  'persona_created',
  'persona_updated',
  'persona_deleted',
  'field_set',
  'field_revised',
  'field_pinned',
  'field_unpinned',
  'field_revived',
  'field_forgotten',
  'field_destroyed',
  'note_added',
  'note_revised',
  'note_pinned',
  'note_unpinned',
  'note_forgotten',
  'note_destroyed',
] as const;
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

export const CHANGE_TARGET_KINDS = ['persona', 'field', 'note'] as const;
export type ChangeTargetKind = (typeof CHANGE_TARGET_KINDS)[number];

/** The forget modes a person may choose, as the persona store names them. */
export const FORGET_MODES = ['keep', 'destroy_after_grace', 'destroy_now'] as const;
export type ForgetMode = (typeof FORGET_MODES)[number];

/** What forgetting does when neither the person nor the installation chose (the persona store's PERSONA_FORGET_MODE default). */
export const DEFAULT_FORGET_MODE: ForgetMode = 'keep';
/** The grace period before a forgotten entry is destroyed, unless configured: 7 days (PERSONA_GRACE_PERIOD_SECONDS' default). */
export const DEFAULT_GRACE_PERIOD_SECONDS = 604_800;

/**
 * Who wrote what an import brought in. The store verifies no token of an import (the file came from
 * elsewhere), so an imported entry's `asserted_by` says so, `import:` followed by the `asserted_by` the
 * file claimed (a claim, as `source` is), and the import's own change-log entries say `import`.
 */
export const IMPORT_ACTOR = 'import';
const IMPORTED = `${IMPORT_ACTOR}:`;
/** Longest `asserted_by` an export file may claim for an entry; stored behind `import:`. */
export const MAX_CLAIMED_ASSERTED_BY = 200;
/** Longest `asserted_by` the store keeps: an audience, or `import:` and a claim. */
export const MAX_ASSERTED_BY = IMPORTED.length + MAX_CLAIMED_ASSERTED_BY;

/** An imported entry's `asserted_by`: `import:` and the file's claim (an entry imported again keeps its first claim). */
export const importedAssertedBy = (claimed: string): string =>
  claimed.startsWith(IMPORTED) ? claimed : `${IMPORTED}${claimed}`;

/** The `asserted_by` the import file claimed, when an import wrote the entry; undefined when a verified token did. */
export const claimedByImport = (assertedBy: string): string | undefined =>
  assertedBy.startsWith(IMPORTED) ? assertedBy.slice(IMPORTED.length) : undefined;

/** The longest grace period a person or an installation may choose: a year (PERSONA_GRACE_PERIOD_SECONDS' bound). */
export const MAX_GRACE_PERIOD_SECONDS = 31_536_000;

/** How a change came in (the change log's `via`, recorded by the persona store), as the console says who made it. */
export const VIA_WORDS: Readonly<Record<'owner' | 'hub' | 'import' | 'store', string>> = {
  owner: 'You, in this app',
  hub: 'The hub',
  import: 'An import',
  store: 'The persona store, when the grace period ended',
};

/** Each change as the console says it, with what it is about after it ("Set the field mood"). */
export const ACTION_WORDS: Readonly<Record<ChangeAction, string>> = {
  persona_created: 'Created the persona',
  persona_updated: 'Changed the card',
  persona_deleted: 'Deleted the persona',
  field_set: 'Set',
  field_revised: 'Changed',
  field_pinned: 'Pinned',
  field_unpinned: 'Unpinned',
  field_revived: 'Brought back',
  field_forgotten: 'Forgot',
  field_destroyed: 'Destroyed',
  note_added: 'Wrote',
  note_revised: 'Revised',
  note_pinned: 'Pinned',
  note_unpinned: 'Unpinned',
  note_forgotten: 'Forgot',
  note_destroyed: 'Destroyed',
};
