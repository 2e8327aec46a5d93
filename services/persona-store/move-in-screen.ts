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

/** Strings up to this length are read for credentials once per move-in (ids, times, kinds, keys): a repeat is not read again. */
const REMEMBERED_CHARS = 64;

/**
 * The screen of a move-in, row by row, in the order the rows are copied: `persona`, `fields`, `notes`,
 * `events` queue each row's strings and check its rules (a rule that fails throws RowRefused at once);
 * `flush` reads what is queued for credentials (it also runs by itself each SCREEN_BATCH_CHARS), so rows
 * are screened before any of them is written; `finish` throws what was deferred (a lone surrogate, a
 * number JSON cannot keep: a credential anywhere is named first). A short string that was read once is
 * not read again (the same kind, source, time or key in thousands of rows); every string is still read.
 */
export class RowScreen {
  private readonly shapes: ReturnType<typeof rowShapes>;
  private readonly longest: number;
  private batch: WrittenString[] = [];
  private batchChars = 0;
  private readonly read = new Set<string>();
  private deferred: string | undefined;

  constructor(private readonly limits: Limits) {
    this.shapes = rowShapes(limits);
    this.longest = Math.max(limits.maxNoteChars, limits.maxValueBytes, 2000) + 2000;
  }

  /** Whether a row screened so far will refuse the move-in when it finishes. */
  get refused(): boolean {
    return this.deferred !== undefined;
  }

  async flush(): Promise<void> {
    const found = await findCredential(this.batch);
    this.batch = [];
    this.batchChars = 0;
    if (found)
      throw new RowRefused(
        `${found.where} looks like it holds ${found.kind}, and the persona store never keeps secrets`,
      );
  }

  /** Flushes, then throws what a row deferred. */
  async finish(): Promise<void> {
    await this.flush();
    if (this.deferred !== undefined) throw new RowRefused(this.deferred);
  }

  /** A persona's card, located as `persona "ada" (account …)`. */
  async persona({ persona }: PersonaCopy): Promise<void> {
    const who = whoOf(persona);
    const { id: _id, account: _account, created_at, updated_at, ...card } = persona;
    await this.gate({ ...card, created_at, updated_at }, who);
    this.rule(CreatePersona.safeParse(card), `${who}, its card`);
    this.rule(
      z.object({ created_at: Time, updated_at: Time }).safeParse({ created_at, updated_at }),
      `${who}, its card`,
    );
  }

  async fields({ persona }: PersonaCopy, fields: PersonaCopy['fields']): Promise<void> {
    const who = whoOf(persona);
    const { limits } = this;
    for (const f of fields) {
      const where = `${who}, field "${f.key.length <= 80 ? f.key : `${f.key.slice(0, 80)}…`}"`;
      if (Buffer.byteLength(f.value) > limits.maxValueBytes) {
        throw new RowRefused(
          `${where}: its value is larger than ${limits.maxValueBytes} bytes as compact JSON (PERSONA_MAX_VALUE_BYTES)`,
        );
      }
      const value = parsedJson(f.value, `${where}: its value`);
      const { id: _fid, value: _text, ...columns } = f;
      await this.gate({ ...columns, value }, where);
      this.rule(this.shapes.field.safeParse(f), where);
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
  }

  async notes({ persona }: PersonaCopy, notes: PersonaCopy['notes']): Promise<void> {
    const who = whoOf(persona);
    for (const n of notes) {
      const where = `${who}, note ${n.id.length <= 80 ? n.id : `${n.id.slice(0, 80)}…`}`;
      const { seq: _seq, idempotency_key, ...columns } = n;
      await this.gate(columns, where, { idempotency_key });
      this.rule(this.shapes.note.safeParse(n), where);
    }
  }

  /** Change-log entries of a persona (`copy`), or of personas deleted in the source (none). */
  async events(copy: PersonaCopy | undefined, events: (PersonaCopy['events'][number] | EventRow)[]): Promise<void> {
    for (const e of events) {
      const where = copy
        ? `${whoOf(copy.persona)}, change-log entry ${e.id}`
        : `the change-log entry ${e.id} of deleted persona "${(e as EventRow).profile}"`;
      const changes = parsedJson(e.changes, `${where}: its changes`);
      const replaced = e.replaced === null ? null : parsedJson(e.replaced, `${where}: its replaced values`);
      if (replaced !== null && (typeof replaced !== 'object' || Array.isArray(replaced)))
        throw new RowRefused(`${where}: its replaced values are not an object`);
      const { id: _eid, account: _account, profile: _profile, ...columns } = e as Partial<EventRow>;
      await this.gate({ ...columns, changes, replaced }, where);
      this.rule(this.shapes.event.safeParse({ ...columns, changes }), where);
    }
  }

  /**
   * Every string of a row through the write gate, located under `where`, each column as the member of a
   * write's body it would be (a value's nesting counted as in a PUT); the strings queued for credentials.
   * The columns of `randomRow` hold values meant to be random (a note's Idempotency-Key), screened as the
   * header is.
   */
  private async gate(row: object, where: string, randomRow: object = {}): Promise<void> {
    const { limits, longest } = this;
    for (const [column, value] of [...Object.entries(row), ...Object.entries(randomRow)]) {
      if (typeof value === 'string' && value.length > longest) {
        throw new RowRefused(
          `${where}: its ${column} is ${value.length.toLocaleString('en-US')} characters long, longer than any member may be ` +
            `(a note ${limits.maxNoteChars.toLocaleString('en-US')} characters, PERSONA_MAX_NOTE_CHARS; a field value ${limits.maxValueBytes.toLocaleString('en-US')} bytes, PERSONA_MAX_VALUE_BYTES)`,
        );
      }
    }
    const strings: WrittenString[] = [];
    for (const [column, value] of Object.entries(row)) {
      // The same short text was read already, with the same outcome: a kind, a source, a time many rows share.
      if (typeof value === 'string' && value.length <= REMEMBERED_CHARS && this.read.has(value)) continue;
      let problem: Problem | undefined;
      try {
        // A column's name is the store's, not the row's: only a JSON column's own member names are read, as a body's would be.
        problem =
          value !== null && typeof value === 'object'
            ? readBody({ [column]: value }, strings, where)
            : readBody(value, strings, `${where}.${column}`);
      } catch (err) {
        if (err instanceof Problem) throw new RowRefused(err.detail ?? err.title);
        throw err;
      }
      if (problem && this.deferred === undefined) this.deferred = problem.detail ?? problem.title;
    }
    for (const [column, value] of Object.entries(randomRow)) {
      if (typeof value !== 'string') continue;
      const random: WrittenString[] = [];
      let problem: Problem | undefined;
      try {
        problem = readBody(value, random, `${where}.${column}`);
      } catch (err) {
        if (err instanceof Problem) throw new RowRefused(err.detail ?? err.title);
        throw err;
      }
      if (problem && this.deferred === undefined) this.deferred = problem.detail ?? problem.title;
      // Not remembered: the same text read as an ordinary string would have another outcome.
      for (const r of random) {
        this.batch.push({ ...r, random: true });
        this.batchChars += r.text.length;
      }
    }
    for (const s of strings) {
      if (s.text.length <= REMEMBERED_CHARS) {
        if (this.read.has(s.text)) continue;
        this.read.add(s.text);
      }
      this.batch.push(s);
      this.batchChars += s.text.length;
    }
    if (this.batchChars >= SCREEN_BATCH_CHARS) await this.flush();
  }

  private rule<T>(parsed: z.ZodSafeParseResult<T>, where: string): void {
    if (!parsed.success) throw new RowRefused(`${where}: ${issuesOf(parsed.error)}`);
  }
}

const whoOf = (persona: PersonaCopy['persona']) => `persona "${persona.profile}" (account ${persona.account})`;

/**
 * Screens everything `moveIn` would copy from `source`; throws RowRefused naming the first row that no
 * write of the store could have made. Strings longer than any member may hold are refused before
 * anything reads them for credentials.
 */
export async function screenSource(
  source: Pick<SourceData, 'personas' | 'deletedLogs'>,
  limits: Limits,
): Promise<void> {
  const screen = new RowScreen(limits);
  for (const copy of source.personas) {
    await screen.persona(copy);
    await screen.fields(copy, copy.fields);
    await screen.notes(copy, copy.notes);
    await screen.events(copy, copy.events);
  }
  await screen.events(undefined, source.deletedLogs);
  await screen.finish();
}
