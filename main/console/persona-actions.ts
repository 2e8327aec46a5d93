/**
 * What a person can do to a persona from the console, each through the persona store's own API with
 * the person's token (audience `persona`), so each lands in the change log like any other write:
 * export, forget a field or a note, delete the persona, pin and unpin, edit the card. And the forget
 * policy that will apply, so the page can say it before the person confirms.
 */
import { z } from 'zod';
import {
  DEFAULT_FORGET_MODE,
  DEFAULT_GRACE_PERIOD_SECONDS,
  FORGET_MODES,
  type ForgetMode,
} from '../../common/change-log.ts';
import type { ForgetPolicy } from '../../common/contract.ts';
import { urlPath } from '../../common/url-path.ts';
import type {
  Card,
  Export,
  Field,
  FieldPage,
  ForgetResult,
  IdentityBlock,
  Note,
  NotePage,
} from '../../services/persona-store/shapes.ts';
import type { WholeExport } from './answers.ts';
import { method, Profile, personaPath, type MethodContext } from './method-spec.ts';
import { ConsoleError, type ServiceClient } from './service-client.ts';

/** A field key as the store keeps it (snake_case), or as a person types it; the store normalises it. */
const FieldKey = z.string().min(1).max(300);
const NoteId = z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'a note id is the id the persona store gave the note');
/** The most pages an export reads (100 entries each at the default page size): a runaway guard, not a limit anyone meets. */
const EXPORT_PAGES = 10_000;

const fieldPath = (profile: string, key: string) => urlPath`/v1/personas/${profile}/fields/${key}`;
const notePath = (profile: string, id: string) => urlPath`/v1/personas/${profile}/notes/${id}`;

/**
 * The forget policy as far as the console can know it before the store applies it: the identity block's
 * own `forget` member when the store sends one; otherwise this installation's configuration
 * (PERSONA_FORGET_MODE, PERSONA_GRACE_PERIOD_SECONDS), unless a settings service decides per person.
 */
export function forgetPolicy(block: Partial<IdentityBlock> | undefined, env: MethodContext['env']): ForgetPolicy {
  const own = block?.forget as { mode?: unknown; grace_period_seconds?: unknown } | undefined;
  if (own && FORGET_MODES.includes(own.mode as ForgetMode)) {
    return {
      mode: own.mode as ForgetMode,
      gracePeriodSeconds: typeof own.grace_period_seconds === 'number' ? own.grace_period_seconds : undefined,
      decidedBy: 'persona-store',
    };
  }
  const configured = env.PERSONA_FORGET_MODE as ForgetMode | undefined;
  const mode: ForgetMode = configured && FORGET_MODES.includes(configured) ? configured : DEFAULT_FORGET_MODE;
  const grace = Number(env.PERSONA_GRACE_PERIOD_SECONDS ?? DEFAULT_GRACE_PERIOD_SECONDS);
  const gracePeriodSeconds = Number.isInteger(grace) && grace > 0 ? grace : DEFAULT_GRACE_PERIOD_SECONDS;
  if (env.PERSONA_SETTINGS_API_BASE_URL && env.PERSONA_SETTINGS_API_TOKEN)
    return { mode, gracePeriodSeconds, decidedBy: 'settings-service' };
  return { mode, gracePeriodSeconds, decidedBy: 'installation' };
}

/** The revision of an entry as the page showed it: a write then goes through only if it is still that one. */
const Revision = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional();
/** The card's ETag as the page read it (`personas.get`'s `etag`). */
const CardTag = z
  .string()
  .regex(/^"[\x21\x23-\x7e]{1,120}"$/, 'an ETag as personas.get answered it')
  .optional();

const ifMatch = (tag: string | undefined): Record<string, string> => (tag ? { 'if-match': tag } : {});
const revisionTag = (revision: number | undefined) => (revision === undefined ? undefined : `"${revision}"`);

/**
 * A write made only if the entry is still as the page showed it (If-Match). When it moved, the person is
 * told in words what changed, from the store's 412, and that nothing was written (412 kept as the status,
 * so the page reads the entry again).
 */
async function conditional<T>(
  services: ServiceClient,
  what: string,
  request: Parameters<ServiceClient['call']>[1],
): Promise<T> {
  const answer = await services.call<T>('persona-store', { ...request, acceptStatus: [412] });
  if (answer.status !== 412) return answer.body;
  const changed = (answer.body as { changed?: unknown }).changed;
  const members = Array.isArray(changed) && changed.length > 0 ? `: ${changed.map(String).join(', ')} changed` : '';
  throw new ConsoleError(
    `${what} changed since this page showed it${members}. Nothing was written; the page now shows it as it is, so look again and try once more if you still want to.`,
    412,
  );
}

async function forget(
  services: ServiceClient,
  path: string,
  what: string,
  revision: number | undefined,
  query: Record<string, string> = {},
): Promise<ForgetResult> {
  // Checked, not trusted: the person is told what happened only as the store said it.
  const outcome: unknown = (
    await conditional<Partial<ForgetResult> | undefined>(services, what, {
      method: 'DELETE',
      path,
      query,
      headers: ifMatch(revisionTag(revision)),
    })
  )?.outcome;
  if (outcome !== 'kept' && outcome !== 'pending' && outcome !== 'destroyed') {
    throw new ConsoleError('The persona store forgot the entry but did not say how; see its change log.', 502);
  }
  return { outcome };
}

/** Every page of the export, joined into one document of the same format, with both cursors null. */
async function wholeExport(services: ServiceClient, profile: string): Promise<WholeExport> {
  let fieldsAfter: string | null | undefined;
  let notesAfter: string | null | undefined;
  let document: WholeExport | undefined;
  for (let page = 0; page < EXPORT_PAGES; page++) {
    const body = (
      await services.call<Export>('persona-store', {
        path: urlPath`/v1/personas/${profile}/export`,
        query: {
          fields_after: fieldsAfter ?? undefined,
          notes_after: notesAfter ?? undefined,
          // A list read to its end is asked for as little as possible while the other pages on.
          fields_limit: fieldsAfter === null ? 1 : undefined,
          notes_limit: notesAfter === null ? 1 : undefined,
        },
      })
    ).body;
    if (!document) document = { ...body, fields: [], notes: [], fields_next_after: null, notes_next_after: null };
    if (fieldsAfter !== null) document.fields.push(...body.fields);
    if (notesAfter !== null) document.notes.push(...body.notes);
    fieldsAfter = fieldsAfter === null ? null : body.fields_next_after;
    notesAfter = notesAfter === null ? null : body.notes_next_after;
    if (fieldsAfter === null && notesAfter === null) return document;
  }
  throw new ConsoleError('The export did not end; the persona store kept answering further pages. See its log.', 502);
}

const CardEdit = z
  .object({
    display_name: z.string().trim().min(1, 'a display name is 1-200 characters').max(200).optional(),
    pronouns: z.string().trim().max(60).nullable().optional(),
    language: z.string().trim().max(35).nullable().optional(),
    tone: z.string().trim().max(200).nullable().optional(),
    verbosity: z.enum(['terse', 'balanced', 'detailed']).nullable().optional(),
    speaking_style: z.string().trim().max(2000).nullable().optional(),
  })
  .strict()
  .refine((c) => Object.keys(c).length > 0, 'change at least one member of the card');

export const PERSONA_ACTIONS = {
  'personas.forgetPolicy': method(z.object({ profile: Profile }).strict(), async ({ profile }, { services, env }) =>
    forgetPolicy((await services.call<IdentityBlock>('persona-store', { path: personaPath(profile) })).body, env),
  ),
  'personas.export': method(z.object({ profile: Profile }).strict(), async ({ profile }, { services }) =>
    wholeExport(services, profile),
  ),
  'personas.forgetField': method(
    z.object({ profile: Profile, key: FieldKey, revision: Revision }).strict(),
    async ({ profile, key, revision }, { services }) =>
      forget(services, fieldPath(profile, key), `The field ${key}`, revision),
  ),
  'personas.forgetNote': method(
    z.object({ profile: Profile, id: NoteId, revision: Revision }).strict(),
    async ({ profile, id, revision }, { services }) => forget(services, notePath(profile, id), 'The note', revision),
  ),
  // Forgotten entries (kept, or pending destruction), and destroying one at once on the person's word.
  'personas.forgotten': method(
    z.object({ profile: Profile, kind: z.enum(['field', 'note']), after: z.string().max(300).optional() }).strict(),
    async ({ profile, kind, after }, { services }) =>
      (
        await services.call<FieldPage | NotePage>('persona-store', {
          path: kind === 'field' ? urlPath`/v1/personas/${profile}/fields` : urlPath`/v1/personas/${profile}/notes`,
          query: { state: 'forgotten', after },
        })
      ).body,
  ),
  'personas.destroyField': method(
    z.object({ profile: Profile, key: FieldKey }).strict(),
    async ({ profile, key }, { services }) =>
      forget(services, fieldPath(profile, key), `The field ${key}`, undefined, { destroy: 'now' }),
  ),
  'personas.destroyNote': method(
    z.object({ profile: Profile, id: NoteId }).strict(),
    async ({ profile, id }, { services }) =>
      forget(services, notePath(profile, id), 'The note', undefined, { destroy: 'now' }),
  ),
  // The profile typed again is checked here too, so a script cannot delete a persona by a slip either.
  'personas.delete': method(
    z.object({ profile: Profile, confirm: z.string().max(100) }).strict(),
    async ({ profile, confirm }, { services }) => {
      if (confirm !== profile)
        throw new ConsoleError(
          `Type the profile "${profile}" exactly to delete this persona; nothing was deleted.`,
          422,
        );
      await services.call('persona-store', { method: 'DELETE', path: personaPath(profile) });
      return { deleted: profile };
    },
  ),
  /*
   * A field is written whole: the stored description, value and source (the writer's claim stays theirs), with the
   * pin changed, and only if it is still the revision the page showed (else the one just read): a hub's write in
   * between is never reverted.
   */
  'personas.pinField': method(
    z.object({ profile: Profile, key: FieldKey, pinned: z.boolean(), revision: Revision }).strict(),
    async ({ profile, key, pinned, revision }, { services }) => {
      const read = await services.call<Field>('persona-store', { path: fieldPath(profile, key) });
      const field = read.body;
      return conditional<Field>(services, `The field ${key}`, {
        method: 'PUT',
        path: fieldPath(profile, field.key),
        headers: ifMatch(revisionTag(revision) ?? read.etag ?? revisionTag(field.revision)),
        body: { description: field.description, value: field.value, source: field.source, pinned },
      });
    },
  ),
  'personas.pinNote': method(
    z.object({ profile: Profile, id: NoteId, pinned: z.boolean(), revision: Revision }).strict(),
    async ({ profile, id, pinned, revision }, { services }) =>
      conditional<Note>(services, 'The note', {
        method: 'PATCH',
        path: notePath(profile, id),
        headers: ifMatch(revisionTag(revision)),
        body: { pinned },
      }),
  ),
  // Only if the card is still as the edit dialog showed it (`etag`, from personas.get).
  'personas.update': method(
    z.object({ profile: Profile, card: CardEdit, etag: CardTag }).strict(),
    async ({ profile, card, etag }, { services }) => {
      // An emptied optional member is cleared (null), as the store's PATCH takes it.
      const body = Object.fromEntries(Object.entries(card).map(([k, v]) => [k, v === '' ? null : v]));
      return conditional<Card>(services, 'The card', {
        method: 'PATCH',
        path: personaPath(profile),
        headers: ifMatch(etag),
        body,
      });
    },
  ),
};
