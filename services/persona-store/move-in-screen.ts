import { z } from 'zod';
import { MAX_ASSERTED_BY } from '../../common/change-log.ts';
import { Problem } from '../kit/problem.ts';
import { ACTIONS } from './change-log.ts';
import { findCredential, type WrittenString } from './credential-screen.ts';
import { fieldKey } from './field-key.ts';
import { NOTE_KINDS, SOURCES, valueType, type Limits } from './personas.ts';
import type { EventRow, PersonaCopy, SourceData } from './tables.ts';
import { CreatePersona } from './shapes.ts';
import { readBody } from './write-gate.ts';

/**
 * What move-in checks before it copies anything: every row of the SQLite file as the store's own writes
 * would have made it, since another program on the computer may have written the file. Each row passes
 * the write gate (credentials, nesting, lone surrogates, numbers JSON cannot keep) and the store's rules
 * (card, key form, sizes, kinds, sources, revisions, states, times, change-log actions), as import does.
 * The first row that fails is named, never echoed.
 */

/** A refusal of one row: where it is and what is wrong with it. */
export class RowRefused extends Error {
  override name = 'RowRefused';
}

/** Characters looked at for credentials at once (as much as one write's body): bounds what one look holds. */
const SCREEN_BATCH_CHARS = 256_000;
const STATES = ['live', 'kept', 'pending'] as const;
const TARGET_KINDS = ['persona', 'field', 'note'] as const;

const Time = z
  .string()
  .refine((t) => /(Z|[+-]\d{2}:?\d{2})$/i.test(t) && !Number.isNaN(Date.parse(t)), 'an ISO 8601 time with a zone');
const Entry = {
  revision: z
    .number()
    .int()
    .min(1)
    .max(2 ** 31 - 1),
  source: z.enum(SOURCES),
  asserted_by: z.string().min(1).max(MAX_ASSERTED_BY),
  pinned: z.union([z.literal(0), z.literal(1)]),
  state: z.enum(STATES),
  destroy_at: Time.nullable(),
};
/** A note's name, kind and text as the store's writes make them (an import checks a file's notes by these too). */
export const noteMembers = (limits: Limits) => ({
  id: z.string().min(1).max(200),
  kind: z.enum(NOTE_KINDS),
  content: z
    .string()
    .min(1)
    .max(limits.maxNoteChars, `longer than ${limits.maxNoteChars} characters (PERSONA_MAX_NOTE_CHARS)`),
});
const pendingHasItsTime = (row: { state: string; destroy_at: string | null }) =>
  (row.state === 'pending') === (row.destroy_at !== null);

function rowShapes(limits: Limits) {
  return {
    field: z
      .object({
        description: z.string().min(1).max(1000),
        value_type: z.string(),
        ...Entry,
        created_at: Time,
        updated_at: Time,
      })
      .refine(pendingHasItsTime, 'destroy_at is set exactly when the state is pending'),
    note: z
      .object({
        ...noteMembers(limits),
        idempotency_key: z.string().min(1).max(200).nullable(),
        ...Entry,
        written_at: Time,
        revised_at: Time,
      })
      .refine(pendingHasItsTime, 'destroy_at is set exactly when the state is pending'),
    event: z.object({
      at: Time,
      action: z.enum(ACTIONS),
      target_kind: z.enum(TARGET_KINDS),
      target: z
        .string()
        .min(1)
        .max(Math.max(200, limits.maxKeyLength * 4)),
      asserted_by: z.string().min(1).max(MAX_ASSERTED_BY),
      source: z.enum(SOURCES).nullable(),
      changes: z.array(z.string().max(40)).max(20),
    }),
  };
}

const issuesOf = (error: z.ZodError) =>
  error.issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || 'the row'}: ${i.message}`)
    .join('; ');

/** A JSON column's value, or the refusal saying that it is not JSON (a value nested past the parser's depth included). */
function parsedJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new RowRefused(`${what} is not JSON as the store writes it`);
  }
}

/**
 * Screens everything `moveIn` would copy from `source`; throws RowRefused naming the first row that no
 * write of the store could have made. Strings longer than any member may hold are refused before
 * anything reads them for credentials.
 */
export async function screenSource(
  source: Pick<SourceData, 'personas' | 'deletedLogs'>,
  limits: Limits,
): Promise<void> {
  const shapes = rowShapes(limits);
  const longest = Math.max(limits.maxNoteChars, limits.maxValueBytes, 2000) + 2000;
  let batch: WrittenString[] = [];
  let batchChars = 0;
  let refusal: { where: string; detail: string } | undefined;

  const flush = async () => {
    const found = await findCredential(batch);
    batch = [];
    batchChars = 0;
    if (found)
      throw new RowRefused(
        `${found.where} looks like it holds ${found.kind}, and the persona store never keeps secrets`,
      );
  };
  /**
   * Every string of `row` through the write gate, located under `where`; the columns of `randomRow` hold
   * values meant to be random (a note's Idempotency-Key), screened as the header is.
   */
  const gate = async (row: object, where: string, randomRow: object = {}) => {
    for (const [column, value] of [...Object.entries(row), ...Object.entries(randomRow)]) {
      if (typeof value === 'string' && value.length > longest) {
        throw new RowRefused(
          `${where}: its ${column} is ${value.length.toLocaleString('en-US')} characters long, longer than any member may be ` +
            `(a note ${limits.maxNoteChars.toLocaleString('en-US')} characters, PERSONA_MAX_NOTE_CHARS; a field value ${limits.maxValueBytes.toLocaleString('en-US')} bytes, PERSONA_MAX_VALUE_BYTES)`,
        );
      }
    }
    const strings: WrittenString[] = [];
    try {
      const problem = readBody(row, strings, where);
      if (problem && !refusal) refusal = { where, detail: problem.detail ?? problem.title };
      const random: WrittenString[] = [];
      const randomProblem = readBody(randomRow, random, where);
      if (randomProblem && !refusal) refusal = { where, detail: randomProblem.detail ?? randomProblem.title };
      for (const s of random) strings.push({ ...s, random: true });
    } catch (err) {
      if (err instanceof Problem) throw new RowRefused(err.detail ?? err.title);
      throw err;
    }
    for (const s of strings) {
      batch.push(s);
      batchChars += s.text.length;
    }
    if (batchChars >= SCREEN_BATCH_CHARS) await flush();
  };
  const rule = <T>(parsed: z.ZodSafeParseResult<T>, where: string) => {
    if (!parsed.success) throw new RowRefused(`${where}: ${issuesOf(parsed.error)}`);
  };

  for (const copy of source.personas) await screenPersona(copy);
  for (const e of source.deletedLogs)
    await screenEvent(e, `the change-log entry ${e.id} of deleted persona "${e.profile}"`);
  await flush();
  if (refusal) throw new RowRefused(refusal.detail);

  async function screenPersona({ persona, fields, notes, events }: PersonaCopy): Promise<void> {
    const who = `persona "${persona.profile}" (account ${persona.account})`;
    const { id: _id, account: _account, created_at, updated_at, ...card } = persona;
    await gate({ ...card, created_at, updated_at }, who);
    rule(CreatePersona.safeParse(card), `${who}, its card`);
    rule(z.object({ created_at: Time, updated_at: Time }).safeParse({ created_at, updated_at }), `${who}, its card`);
    for (const f of fields) {
      const where = `${who}, field "${f.key.length <= 80 ? f.key : `${f.key.slice(0, 80)}…`}"`;
      if (Buffer.byteLength(f.value) > limits.maxValueBytes) {
        throw new RowRefused(
          `${where}: its value is larger than ${limits.maxValueBytes} bytes as compact JSON (PERSONA_MAX_VALUE_BYTES)`,
        );
      }
      const value = parsedJson(f.value, `${where}: its value`);
      const { id: _fid, value: _text, ...columns } = f;
      await gate({ ...columns, value }, where);
      rule(shapes.field.safeParse(f), where);
      let key: string;
      try {
        key = fieldKey(f.key, limits.maxKeyLength);
      } catch (err) {
        throw new RowRefused(
          `${where}: not a key this store accepts (${(err as { detail?: string }).detail ?? String(err)})`,
        );
      }
      if (key !== f.key)
        throw new RowRefused(`${where}: its key is not in the form the store writes (a write of it would be "${key}")`);
      if (valueType(value) !== f.value_type)
        throw new RowRefused(
          `${where}: its value_type "${f.value_type}" is not its value's type (${valueType(value)})`,
        );
    }
    for (const n of notes) {
      const where = `${who}, note ${n.id.length <= 80 ? n.id : `${n.id.slice(0, 80)}…`}`;
      const { seq: _seq, idempotency_key, ...columns } = n;
      await gate(columns, where, { idempotency_key });
      rule(shapes.note.safeParse(n), where);
    }
    for (const e of events) await screenEvent(e, `${who}, change-log entry ${e.id}`);
  }

  async function screenEvent(
    e: Omit<EventRow, 'id' | 'account' | 'profile'> & Partial<EventRow>,
    where: string,
  ): Promise<void> {
    const changes = parsedJson(e.changes, `${where}: its changes`);
    const replaced = e.replaced === null ? null : parsedJson(e.replaced, `${where}: its replaced values`);
    if (replaced !== null && (typeof replaced !== 'object' || Array.isArray(replaced)))
      throw new RowRefused(`${where}: its replaced values are not an object`);
    const { id: _eid, account: _account, profile: _profile, ...columns } = e;
    await gate({ ...columns, changes, replaced }, where);
    rule(shapes.event.safeParse({ ...columns, changes }), where);
  }
}
