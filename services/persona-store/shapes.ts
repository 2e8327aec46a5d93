import { z } from 'zod';
import { pageLimit } from '../kit/paging.ts';
import { profileName } from '../kit/profile.ts';
import { ACTIONS } from './change-log.ts';
import { FORGET_MODES } from './config.ts';
import { NOTE_KINDS, SOURCES, VERBOSITIES } from './personas.ts';

/** One zod schema per shape: request validation and /openapi.json both come from these. */

export const Profile = profileName().meta({ description: 'Names the persona; unique per account.' });

const Source = z.enum(SOURCES).meta({
  description:
    'The writer\u2019s own claim of who the entry comes from (owner, assistant or service). A claim, not verified; asserted_by is what the service verified.',
});
const AssertedBy = z.string().meta({
  description:
    'Audience of the verified token that made the write; derived by the service, never read from the body. An entry an import brought in from an export file says `import:` and then what the file claimed (the service verified no token for it).',
});
const Timestamp = z.string().meta({ description: 'ISO 8601 time (UTC).' });

/** Where a forgotten entry is in its forgetting: only in a listing of forgotten entries (`state=forgotten`). */
const Forgotten = z
  .object({
    state: z
      .enum(['kept', 'pending'])
      .meta({ description: 'kept (stays, out of every answer) or pending destruction.' }),
    destroy_at: Timestamp.nullable().meta({ description: 'When a pending entry is destroyed; null for a kept one.' }),
  })
  .optional()
  .meta({
    description:
      'Present only when the list asked for forgotten entries (state=forgotten): what forgetting did to it. DELETE it with destroy=now, with your own credential, to destroy it at once.',
  });

/** Which entries a list answers: the live ones (default), or those forgotten but not destroyed. */
const ListState = z.enum(['live', 'forgotten']).optional().meta({
  description:
    'live (the default) or forgotten: the entries forgotten and not yet destroyed (kept, or pending destruction), each with its forgotten member.',
});

const cardMembers = {
  pronouns: z
    .string()
    .min(1)
    .max(60)
    .nullable()
    .optional()
    .meta({ description: 'Pronouns the assistant uses for itself, e.g. "she/her".' }),
  language: z
    .string()
    .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'a language is a BCP 47 tag such as en or pt-BR')
    .nullable()
    .optional()
    .meta({ description: 'Language the assistant speaks by default (BCP 47 tag).' }),
  tone: z
    .string()
    .min(1)
    .max(200)
    .nullable()
    .optional()
    .meta({ description: 'Tone of voice in a few words, e.g. "warm, dry humour".' }),
  verbosity: z
    .enum(VERBOSITIES)
    .nullable()
    .optional()
    .meta({ description: 'How much it says: terse, balanced or detailed.' }),
  speaking_style: z
    .string()
    .min(1)
    .max(2000)
    .nullable()
    .optional()
    .meta({ description: 'Free-text guidance on how the assistant speaks.' }),
};
const DisplayName = z.string().min(1).max(200).meta({ description: 'Name of the assistant.' });

export const CreatePersona = z
  .strictObject({ profile: Profile, display_name: DisplayName, ...cardMembers })
  .meta({ id: 'CreatePersona' });
export const UpdatePersona = z
  .strictObject({ display_name: DisplayName.optional(), ...cardMembers })
  .meta({ id: 'UpdatePersona', description: 'Only the members sent change; null clears an optional member.' });

export const Card = z
  .object({
    profile: z.string(),
    display_name: z.string(),
    pronouns: z.string().nullable(),
    language: z.string().nullable(),
    tone: z.string().nullable(),
    verbosity: z.enum(VERBOSITIES).nullable(),
    speaking_style: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Persona', description: 'The identity card: who the assistant is and how it speaks.' });

export const PutField = z
  .strictObject({
    description: z.string().min(1).max(1000).meta({ description: 'What the field is for (at most 1000 characters).' }),
    value: z
      .unknown()
      .refine((v) => v !== undefined, 'value is required (any JSON value, null included)')
      .meta({ description: 'Any JSON value.' }),
    source: Source,
    pinned: z.boolean().optional().meta({ description: 'Pinned fields appear in the identity block (default false).' }),
  })
  .meta({ id: 'PutField' });

export const Field = z
  .object({
    key: z.string().meta({ description: 'The key, normalised to snake_case.' }),
    description: z.string(),
    value: z.unknown(),
    value_type: z.enum(['null', 'boolean', 'integer', 'number', 'string', 'list', 'object']),
    revision: z
      .number()
      .int()
      .meta({ description: '1 after the first write; +1 for each write that changed something.' }),
    source: Source,
    asserted_by: AssertedBy,
    pinned: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    forgotten: Forgotten,
  })
  .meta({ id: 'Field' });

export const SchemaListing = z
  .object({
    fields: z.array(z.object({ key: z.string(), description: z.string() })),
    next_after: z.string().nullable(),
  })
  .meta({
    id: 'SchemaListing',
    description: 'Keys and descriptions of the live fields, no values: reuse a key rather than invent a second one.',
  });

export const AddNote = z
  .strictObject({
    content: z.string().min(1).meta({ description: 'Free text (at most PERSONA_MAX_NOTE_CHARS characters).' }),
    kind: z.enum(NOTE_KINDS).meta({ description: 'episode, observation or lesson.' }),
    source: Source,
    pinned: z.boolean().optional(),
  })
  .meta({ id: 'AddNote' });
export const ReviseNote = z
  .strictObject({
    content: z.string().min(1).optional(),
    kind: z.enum(NOTE_KINDS).optional(),
    source: Source.optional(),
    pinned: z.boolean().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, 'send at least one of content, kind, source, pinned')
  .meta({ id: 'ReviseNote', description: 'Only the parts sent change; the note keeps its time of writing.' });

export const Note = z
  .object({
    id: z.string(),
    kind: z.enum(NOTE_KINDS),
    content: z.string(),
    source: Source,
    asserted_by: AssertedBy,
    pinned: z.boolean(),
    revision: z.number().int(),
    written_at: Timestamp.meta({ description: 'When the note was written; revising never moves it.' }),
    revised_at: Timestamp,
    forgotten: Forgotten,
  })
  .meta({ id: 'Note' });

export const IdentityBlock = z
  .object({
    persona: Card,
    fields: z.array(Field).meta({ description: 'Pinned live fields, by key.' }),
    notes: z.array(Note).meta({ description: 'Pinned live notes, oldest first.' }),
    field_count: z.number().int(),
    note_count: z.number().int(),
    pin_caps: z.object({ fields: z.number().int(), notes: z.number().int() }),
    forget: z
      .object({
        mode: z.enum(FORGET_MODES).meta({
          description:
            'keep (kept, out of every answer), destroy_after_grace (destroyed when the grace period ends) or destroy_now.',
        }),
        grace_period_seconds: z
          .number()
          .int()
          .meta({ description: 'How long a forgotten entry waits before it is destroyed under destroy_after_grace.' }),
      })
      .meta({
        description:
          'What forgetting a field or note of this persona does now: the person\u2019s setting, else the deployment\u2019s.',
      }),
  })
  .meta({ id: 'IdentityBlock' });

export const ForgetResult = z
  .object({
    outcome: z
      .enum(['kept', 'pending', 'destroyed'])
      .meta({ description: 'What forgetting did, per the person\u2019s setting.' }),
  })
  .meta({ id: 'ForgetResult' });

export const RecallResult = z
  .object({
    fields: z
      .array(Field.extend({ profile: z.string(), score: z.number() }))
      .meta({ description: 'Matching live fields, best first (bm25).' }),
    notes: z
      .array(Note.extend({ profile: z.string(), score: z.number() }))
      .meta({ description: 'Matching live notes, best first (bm25); ranked apart from fields.' }),
    stopped_early: z
      .object({
        fields: z.number().int().optional(),
        notes: z.number().int().optional(),
      })
      .optional()
      .meta({
        description:
          'Present only when a list stopped early: more entries matched than recall ranks, so that list ranked only its newest matches (by when each was first written), as many as given here; an older match may score higher than its hits. Absent: every match was ranked.',
      }),
  })
  .meta({ id: 'RecallResult' });

export const Export = z
  .object({
    format: z.literal('persona-export/1'),
    persona: Card,
    fields: z.array(Field),
    notes: z.array(Note),
    fields_next_after: z.string().nullable(),
    notes_next_after: z.string().nullable(),
  })
  .meta({ id: 'PersonaExport' });

export const Event = z
  .object({
    id: z.number().int(),
    at: Timestamp,
    action: z.enum(ACTIONS),
    target_kind: z.enum(['persona', 'field', 'note']),
    target: z
      .string()
      .meta({ description: 'Profile, field key or note id; "(destroyed field)" once a field was destroyed.' }),
    asserted_by: z.string(),
    via: z.enum(['owner', 'hub', 'import', 'store']).nullable().meta({
      description:
        'How the change came in, recorded by the store: owner (a token of the person\u2019s own credential: the app, the command line), hub (a hub credential\u2019s), import (an export file imported), store (the store itself: the grace period ended); null when the token did not say.',
    }),
    source: z.string().nullable(),
    changes: z.array(z.string()).meta({ description: 'Names of the members that changed; never their values.' }),
    replaced: z
      .record(z.string(), z.unknown())
      .optional()
      .meta({ description: 'What the change replaced; only when the person keeps replaced values.' }),
  })
  .meta({ id: 'Event' });

/** The list answers: a page of at most `limit` items and the `after` of the next page (null: the last). */
export const PersonaPage = z.object({ personas: z.array(Card), next_after: z.string().nullable() });
export const FieldPage = z.object({ fields: z.array(Field), next_after: z.string().nullable() });
export const NotePage = z.object({ notes: z.array(Note), next_after: z.string().nullable() });
export const EventPage = z.object({ events: z.array(Event), next_after: z.number().int().nullable() });

/** The answers' types, for the console and its page (imported with `import type`: nothing of this file is bundled there). */
export type Card = z.infer<typeof Card>;
export type Field = z.infer<typeof Field>;
export type Note = z.infer<typeof Note>;
export type IdentityBlock = z.infer<typeof IdentityBlock>;
export type ForgetResult = z.infer<typeof ForgetResult>;
export type RecallResult = z.infer<typeof RecallResult>;
export type Export = z.infer<typeof Export>;
export type Event = z.infer<typeof Event>;
export type PersonaPage = z.infer<typeof PersonaPage>;
export type FieldPage = z.infer<typeof FieldPage>;
export type NotePage = z.infer<typeof NotePage>;
export type EventPage = z.infer<typeof EventPage>;

/** A page's `limit`: at least 1 (the kit's rule); its ceiling is the person's page size, applied by the route (pageOf). */
const Limit = (member = 'limit') =>
  pageLimit({ member }).meta({
    description:
      'Page size: at most PERSONA_PAGE_SIZE (100 by default; a person may lower it); asking for more is refused with 422 naming the limit.',
  });
export const PageQuery = z.object({ after: z.string().max(300).optional(), limit: Limit() });
export const FieldsQuery = PageQuery.extend({ state: ListState });
export const NotesQuery = z.object({
  after: z.coerce.number().int().min(0).optional(),
  limit: Limit(),
  kind: z.enum(NOTE_KINDS).optional(),
  state: ListState,
});
/** `destroy=now`: destroy at once whatever the forget setting; the person's own credential only. */
export const ForgetQuery = z.object({
  destroy: z.enum(['now']).optional().meta({
    description:
      'now: destroy at once whatever the person\u2019s forget setting, also an entry already kept or pending. Only with a token of the person\u2019s own credential (identity\u2019s purpose claim owner); a hub\u2019s forget follows the setting (403 otherwise).',
  }),
});
export const RecallQuery = z.object({
  q: z
    .string()
    .min(1)
    .max(1000)
    .meta({ description: 'Words to find; every word is an ordinary word (no operators). All must occur.' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(50)
    .optional()
    .meta({ description: 'Hits per list (default 10, at most 50).' }),
});
export const ExportQuery = z.object({
  fields_after: z.string().max(300).optional(),
  fields_limit: Limit('fields_limit'),
  notes_after: z.coerce.number().int().min(0).optional(),
  notes_limit: Limit('notes_limit'),
});
/**
 * The action filter is a set of known actions: each at most once, so a list is never longer than
 * the actions there are. An unknown or repeated action is refused, never silently dropped; it is
 * named when it is a short plain word (nothing credential-shaped is echoed), else by its position.
 */
export function actionListProblem(list: string): string | undefined {
  const seen = new Set<string>();
  const items = list.split(',');
  for (const [i, item] of items.entries()) {
    const named = /^[a-z_]{1,24}$/.test(item) ? `"${item}"` : `item ${i + 1}`;
    if (!(ACTIONS as readonly string[]).includes(item)) {
      return `${named} is not an action; name each action once, comma-separated, from ${ACTIONS.join(', ')}`;
    }
    if (seen.has(item))
      return `${named} is named twice; name each action once (a list holds at most ${ACTIONS.length})`;
    seen.add(item);
  }
  return undefined;
}
const IsoTime = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 time');
export const EventsQuery = z.object({
  order: z.enum(['oldest', 'newest']).optional().meta({ description: 'oldest first (the default) or newest first.' }),
  after: z.coerce.number().int().min(0).optional().meta({
    description: 'Only entries after this id in the order asked (paging: the previous page\u2019s next_after).',
  }),
  limit: Limit(),
  since: IsoTime.optional().meta({ description: 'Only entries at or after this time.' }),
  until: IsoTime.optional().meta({ description: 'Only entries before this time.' }),
  target: z
    .string()
    .max(300)
    .optional()
    .meta({ description: 'Only entries about this profile, field key or note id.' }),
  target_kind: z.enum(['persona', 'field', 'note']).optional(),
  action: z
    .string()
    .optional()
    .superRefine((s, ctx) => {
      const problem = s === undefined ? undefined : actionListProblem(s);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({
      description: `Comma-separated actions to include, each at most once (so at most ${ACTIONS.length}): ${ACTIONS.join(', ')}.`,
    }),
});
