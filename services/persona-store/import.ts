import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { Problem } from '../kit/problem.ts';
import { IMPORT_ACTOR, importedAssertedBy, MAX_CLAIMED_ASSERTED_BY } from '../../common/change-log.ts';
import { findCredential, type WrittenString } from './credential-screen.ts';
import type { PersonaEngine } from './engines/engine.ts';
import { fieldKey } from './field-key.ts';
import { liveCountTriggers, storedAccount, writePersona } from './move-in.ts';
import { noteMembers } from './move-in-screen.ts';
import type { PersonaCopy } from './tables.ts';
import { CARD_MEMBERS, SOURCES, valueType, VERBOSITIES, type Limits } from './personas.ts';
import { Profile } from './shapes.ts';
import { readBody } from './write-gate.ts';

/**
 * Import of an export file (`persona-export/1`, what GET /v1/personas/{profile}/export answers, every page
 * joined, as the console downloads it) as a new persona of one account, on either engine, in one
 * transaction. Every string the file brings passes the same gate as a write (credentials, nesting, lone
 * surrogates, numbers JSON cannot keep), then the same rules (profile, key form, sizes). Entries keep
 * their revisions, times, source and pin; `asserted_by` says the import wrote them, beside the file's
 * claim; the change log starts at the import (an export carries none). What an import holds is bounded
 * by the limits, not by the file's shape: no entry is parsed before its size in the file is known.
 */

/** A refusal that says what to do; nothing was written. */
export class ImportRefused extends Error {
  override name = 'ImportRefused';
}

/** How far ahead of this computer's clock a time in an export may be (clocks of two computers disagree a little). */
const CLOCK_SKEW_MS = 24 * 60 * 60 * 1000;

/**
 * ISO 8601 with a zone, kept as the store writes times (toISOString), so that they sort and filter like
 * its own: a year of four digits, and not later than a day from now (a time in the far future would sort
 * after every change the store makes from now on).
 */
const timeShape = (now: Date) =>
  z
    .string()
    .refine(
      (t) => /(Z|[+-]\d{2}:?\d{2})$/i.test(t) && !Number.isNaN(Date.parse(t)),
      'an ISO 8601 time with a zone, as the export writes it',
    )
    .transform((t) => new Date(t).toISOString())
    .refine((t) => /^\d{4}-/.test(t), 'a time in the years 0000-9999')
    .refine(
      (t) => Date.parse(t) <= now.getTime() + CLOCK_SKEW_MS,
      `a time no later than a day after this computer's clock (${now.toISOString()}): the export says when each entry was written; correct the file, or this computer's clock`,
    );
const Revision = z
  .number()
  .int()
  .min(1)
  .max(2 ** 31 - 1);
const provenance = {
  source: z.enum(SOURCES),
  // What the file says wrote the entry: kept as a claim (importedAssertedBy), never as what this store verified.
  asserted_by: z.string().min(1).max(MAX_CLAIMED_ASSERTED_BY),
  pinned: z.boolean(),
  revision: Revision,
};

const ONE_PAGE =
  'the file is one page of an export; export every page (the console\u2019s Export joins them) and import that';

/** The shapes of an export: its members but the entry lists, a field, a note. */
function exportShapes(limits: Limits, now: Date) {
  const Time = timeShape(now);
  return {
    head: z.strictObject({
      format: z.literal('persona-export/1', {
        message: 'the file is not a persona export (format must be "persona-export/1")',
      }),
      persona: z.strictObject({
        profile: Profile,
        display_name: z.string().min(1).max(200),
        pronouns: z.string().min(1).max(60).nullable(),
        language: z
          .string()
          .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'a BCP 47 tag such as en or pt-BR')
          .nullable(),
        tone: z.string().min(1).max(200).nullable(),
        verbosity: z.enum(VERBOSITIES).nullable(),
        speaking_style: z.string().min(1).max(2000).nullable(),
        created_at: Time,
        updated_at: Time,
      }),
      // Read entry by entry (entryShapes); here only whether each list is there.
      fields: z.array(z.unknown()),
      notes: z.array(z.unknown()),
      fields_next_after: z.null({ message: ONE_PAGE }).optional(),
      notes_next_after: z.null({ message: ONE_PAGE }).optional(),
    }),
    fields: z.strictObject({
      key: z.string().min(1),
      description: z.string().min(1).max(1000),
      value: z.unknown().refine((v) => v !== undefined, 'a field needs its value (any JSON value, null included)'),
      value_type: z.string().optional(),
      ...provenance,
      created_at: Time,
      updated_at: Time,
    }),
    notes: z.strictObject({ ...noteMembers(limits), ...provenance, written_at: Time, revised_at: Time }),
  };
}

/** The two lists of entries an export holds. */
const LISTS = ['fields', 'notes'] as const;
type List = (typeof LISTS)[number];

/**
 * An export as the import reads it: every member but the two lists of entries, and each entry on its
 * own, so that no entry is read (parsed, screened, checked) before its size is known, and none is held
 * parsed longer than it is looked at.
 */
interface ExportParts {
  /** Every member of the document but the entry lists (those that are lists). */
  head: Record<string, unknown>;
  lists: Partial<Record<List, EntryList>>;
}
interface EntryList {
  length: number;
  /** Entry i, parsed anew at every call from a file (and so never held by the list). */
  entry(i: number): unknown;
  /** Characters entry i takes in the file, whitespace between its tokens aside; undefined for a parsed document. */
  size(i: number): number | undefined;
}

/** A document already parsed (as a test or a caller in process gives it). */
function partsOf(document: unknown): ExportParts {
  if (document instanceof ExportFile) return document.parts;
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new ImportRefused(
      'Nothing was imported: the file is not a persona export (a JSON object, as GET /v1/personas/{profile}/export answers).',
    );
  }
  const head: Record<string, unknown> = {};
  const lists: ExportParts['lists'] = {};
  for (const [member, value] of Object.entries(document)) {
    if ((member === 'fields' || member === 'notes') && Array.isArray(value)) {
      lists[member] = { length: value.length, entry: (i) => value[i], size: () => undefined };
    } else head[member] = value;
  }
  return { head, lists };
}

/** Characters any member but the entry lists may take in a file: a card is a few kB. */
const MAX_HEAD_MEMBER_CHARS = 65_536;

/**
 * An export file's text and where each of its members and entries sits, found by one pass over the text
 * that parses nothing but the document's own frame: each member but the lists is then parsed alone (if it
 * is small enough to be a member of an export), each entry only when the import reads it. Whether the
 * text is JSON is known once every piece has been parsed; a malformed frame is refused here.
 */
export class ExportFile {
  readonly parts: ExportParts;

  constructor(
    private readonly text: string,
    name: string,
  ) {
    const notJson = () =>
      new ImportRefused(
        `${name} is not JSON; an export file is what GET /v1/personas/{profile}/export answers (the console\u2019s Export downloads one).`,
      );
    if (/^\s*\[/.test(text.slice(0, 1024)))
      throw new ImportRefused(
        `${name} holds a JSON list, not a persona export (a JSON object, as GET /v1/personas/{profile}/export answers).`,
      );
    const frame = new JsonFrame(text, notJson);
    const head: Record<string, unknown> = {};
    const lists: ExportParts['lists'] = {};
    for (const { name: member, start } of frame.members()) {
      if ((member === 'fields' || member === 'notes') && text.charCodeAt(start) === 0x5b) {
        const spans = frame.elements(start);
        lists[member] = {
          length: spans.length / 3,
          entry: (i) => frame.parse(spans[3 * i]!, spans[3 * i + 1]!),
          size: (i) => spans[3 * i + 2],
        };
        frame.at = spans.end;
        continue;
      }
      const { end, size } = frame.value(start);
      if (size > MAX_HEAD_MEMBER_CHARS) {
        const which = member === 'persona' || member === 'format' ? `its ${member}` : 'a member';
        throw new ImportRefused(
          `Nothing was imported: ${which} takes ${size.toLocaleString('en-US')} characters in the file, more than any member of a persona export but its fields and notes (${MAX_HEAD_MEMBER_CHARS.toLocaleString('en-US')}); it was not read.`,
        );
      }
      head[member] = frame.parse(start, end);
      frame.at = end;
    }
    this.parts = { head, lists };
  }
}

/** The frame of a JSON document whose top is an object: its members, the elements of an array member, the span of a value. */
class JsonFrame {
  /** Where the reader is: just past the last value it read. */
  at = 0;

  constructor(
    private readonly text: string,
    private readonly notJson: () => Error,
  ) {}

  private space(i: number): number {
    const t = this.text;
    while (i < t.length) {
      const c = t.charCodeAt(i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      i++;
    }
    return i;
  }

  /** Just past the string that starts at `i` (a quote): the next quote not escaped. */
  private stringEnd(i: number): number {
    const t = this.text;
    for (let from = i + 1; ;) {
      const quote = t.indexOf('"', from);
      if (quote < 0) throw this.notJson();
      let backslashes = 0;
      while (t.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
      if (backslashes % 2 === 0) return quote + 1;
      from = quote + 1;
    }
  }

  /** The value that starts at `i`: where it ends, and its size in characters without the whitespace between its tokens. */
  value(i: number): { end: number; size: number } {
    const t = this.text;
    const c = t.charCodeAt(i);
    if (c === 0x22) {
      const end = this.stringEnd(i);
      return { end, size: end - i };
    }
    if (c === 0x7b || c === 0x5b) {
      let depth = 0;
      let space = 0;
      for (let j = i; j < t.length;) {
        const d = t.charCodeAt(j);
        if (d === 0x22) {
          j = this.stringEnd(j);
          continue;
        }
        if (d === 0x7b || d === 0x5b) depth++;
        else if (d === 0x7d || d === 0x5d) {
          if (--depth === 0) return { end: j + 1, size: j + 1 - i - space };
        } else if (d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) space++;
        j++;
      }
      throw this.notJson();
    }
    // A number, true, false or null: up to the next comma, bracket, brace or whitespace (JSON.parse judges it).
    let j = i;
    while (j < t.length && !/[,\]}\s]/.test(t[j]!)) j++;
    if (j === i) throw this.notJson();
    return { end: j, size: j - i };
  }

  /** The text from `start` to `end` as JSON. */
  parse(start: number, end: number): unknown {
    try {
      return JSON.parse(this.text.slice(start, end)) as unknown;
    } catch {
      throw this.notJson();
    }
  }

  private expect(i: number, char: number): number {
    if (this.text.charCodeAt(i) !== char) throw this.notJson();
    return i + 1;
  }

  /** The top object's members in order: each one's name, and where its value starts (read it, then set `at` past it). */
  *members(): Generator<{ name: string; start: number }> {
    let i = this.expect(this.space(0), 0x7b);
    i = this.space(i);
    if (this.text.charCodeAt(i) === 0x7d) {
      this.at = i + 1;
    } else {
      for (;;) {
        if (this.text.charCodeAt(i) !== 0x22) throw this.notJson();
        const nameEnd = this.stringEnd(i);
        const name = this.parse(i, nameEnd) as string;
        i = this.space(this.expect(this.space(nameEnd), 0x3a));
        yield { name, start: i };
        i = this.space(this.at);
        if (this.text.charCodeAt(i) === 0x7d) {
          this.at = i + 1;
          break;
        }
        i = this.space(this.expect(i, 0x2c));
      }
    }
    if (this.space(this.at) !== this.text.length) throw this.notJson();
  }

  /** The elements of the array that starts at `start`: start, end and size of each, three numbers an element; `end` past the array. */
  elements(start: number): number[] & { end: number } {
    const spans: number[] = [];
    let i = this.space(start + 1);
    if (this.text.charCodeAt(i) !== 0x5d) {
      for (;;) {
        const { end, size } = this.value(i);
        spans.push(i, end, size);
        i = this.space(end);
        if (this.text.charCodeAt(i) === 0x5d) break;
        i = this.space(this.expect(i, 0x2c));
      }
    }
    return Object.assign(spans, { end: i + 1 });
  }
}

/**
 * Reads an export file; the refusal says what is wrong with the file. A file larger than `maxBytes` is
 * refused before it is read. Nothing of it is parsed whole: see ExportFile.
 */
export function readExportFile(file: string, maxBytes: number): ExportFile {
  let text: string;
  try {
    const { size } = statSync(file);
    if (size > maxBytes) {
      throw new ImportRefused(
        `${file} is ${size.toLocaleString('en-US')} bytes, larger than the ${maxBytes.toLocaleString('en-US')} an import reads (PERSONA_MAX_IMPORT_BYTES). ` +
          'Nothing was imported. Set PERSONA_MAX_IMPORT_BYTES to at least the file\u2019s size for this import if the computer has the memory ' +
          '(an import holds four to five times the file\u2019s size for notes of a few kB, up to about eleven times for a file of very many tiny entries), or move the persona in from its SQLite file instead.',
      );
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof ImportRefused) throw err;
    throw new ImportRefused(
      `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}); give the path of an export file (JSON).`,
    );
  }
  return new ExportFile(text, file);
}

/** Characters of strings looked at for credentials at once, as much as one write's body (PERSONA_BODY_LIMIT): bounds what one look holds. */
const SCREEN_BATCH_CHARS = 256_000;

/**
 * The most characters one entry may take in a file, whitespace between its tokens aside: its longest
 * member (a value's PERSONA_MAX_VALUE_BYTES, a note's PERSONA_MAX_NOTE_CHARS), a key and the short
 * members, each character written as JSON's longest escape (six characters, `\u00e9`), and room for the
 * member names. An entry past it is refused before it is parsed: what an import holds is bounded by
 * the limits, not by how a file is shaped (a value of millions of tiny members is no larger a problem
 * than a long string).
 */
export const maxEntryChars = (limits: Limits) =>
  6 * (Math.max(limits.maxValueBytes, limits.maxNoteChars) + 4 * limits.maxKeyLength + 2_000) + 4_096;

/**
 * The gate every write passes, over the whole file: each entry is screened as the body of its own
 * write would be (so nesting counts from the entry, as it does for a PUT of the field), then every
 * string is looked at for credentials, a batch of entries at a time. An entry larger than any entry
 * may be, and a string longer than any member may be, is refused before anything reads it. Never
 * echoes what it found.
 */
async function screen(parts: ExportParts, target: PersonaEngine, limits: Limits, profile?: string): Promise<void> {
  const longest = Math.max(limits.maxNoteChars, limits.maxValueBytes, 2000);
  const largest = maxEntryChars(limits);
  for (const list of LISTS) {
    const entries = parts.lists[list];
    for (let i = 0; entries && i < entries.length; i++) {
      const size = entries.size(i);
      if (size !== undefined && size > largest) {
        throw new ImportRefused(
          `Nothing was imported: ${list}[${i}] takes ${size.toLocaleString('en-US')} characters in the file, more than any entry of a persona can ` +
            `(${largest.toLocaleString('en-US')}, from a field value's PERSONA_MAX_VALUE_BYTES and a note's PERSONA_MAX_NOTE_CHARS, every character escaped); it was not read.`,
        );
      }
    }
  }
  // A profile given on the command line is stored as the file's own would be.
  let batch: WrittenString[] = profile === undefined ? [] : [{ where: '--profile', text: profile }];
  let batchChars = 0;
  let refusal: { detail: string } | undefined;
  let nul: WrittenString | undefined;
  const flush = async () => {
    const credential = await findCredential(batch);
    batch = [];
    batchChars = 0;
    if (credential) {
      throw new ImportRefused(
        `Nothing was imported: ${credential.where} looks like it holds ${credential.kind}. The persona store never keeps secrets: store the credential in ` +
          'the identity service, the vault for secrets (for example PUT /v1/connections/{profile} there), keep at most a description of it in the ' +
          'persona, remove it from the file (or the command line), and import again.',
      );
    }
  };
  const read = async (value: unknown, where: string) => {
    const strings: WrittenString[] = [];
    try {
      refusal ??= readBody(value, strings, where);
    } catch (err) {
      // Nested past the limit: refused at once, before anything else reads it.
      if (err instanceof Problem) throw new ImportRefused(`Nothing was imported: ${err.detail}`);
      throw err;
    }
    for (const s of strings) {
      if (s.text.length > longest) {
        throw new ImportRefused(
          `Nothing was imported: ${whereOf(s)} is ${s.text.length.toLocaleString('en-US')} characters long, longer than any member of a persona may be ` +
            `(a note ${limits.maxNoteChars.toLocaleString('en-US')} characters, PERSONA_MAX_NOTE_CHARS; a field value ${limits.maxValueBytes.toLocaleString('en-US')} bytes, PERSONA_MAX_VALUE_BYTES).`,
        );
      }
      // PostgreSQL's text cannot hold U+0000 (SQLite's can, and the store there keeps it).
      if (target.name === 'postgres' && nul === undefined && s.text.includes('\u0000')) nul = s;
      batch.push(s);
      batchChars += s.text.length;
    }
    if (batchChars >= SCREEN_BATCH_CHARS) await flush();
  };
  for (const [member, value] of Object.entries(parts.head)) await read(value, member);
  for (const list of LISTS) {
    const entries = parts.lists[list];
    for (let i = 0; entries && i < entries.length; i++) await read(entries.entry(i), `${list}[${i}]`);
  }
  await flush();
  if (refusal) throw new ImportRefused(`Nothing was imported: ${refusal.detail}`);
  if (nul) {
    throw new ImportRefused(
      `Nothing was imported: ${whereOf(nul)} holds the character U+0000 (NUL), which PostgreSQL cannot store; remove it from the file and import again.`,
    );
  }
}

const whereOf = (s: WrittenString) => (typeof s.where === 'string' ? s.where : s.where());

const issueText = (issue: z.core.$ZodIssue) =>
  `${
    issue.path.length > 0
      ? issue.path
          .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
          .join('')
          .replace(/^\./, '')
      : 'the file'
  }: ${issue.message}`;

export interface ImportOptions {
  /** The account (a token's sub) the persona will belong to; kept under the name the service there keeps it under (storedAccount). */
  account: string;
  /** Import under this profile instead of the export's own (when that one is taken). */
  profile?: string;
  limits: Limits;
  /** The time of the change-log entries the import writes. */
  now?: Date;
}

export interface ImportReport {
  account: string;
  profile: string;
  fields: number;
  notes: number;
  /** Notes whose id was already used on the target (by another persona) and got a new one. */
  newNoteIds: number;
}

/** The first few ways a piece of the file is not what the store writes, where each is (`fields[2].key`). */
function refusedShape(error: z.ZodError, at: (string | number)[] = []): ImportRefused {
  const issues = error.issues
    .slice(0, 5)
    .map((issue) => issueText({ ...issue, path: [...at, ...issue.path] }))
    .join('; ');
  return new ImportRefused(
    `Nothing was imported: the file is not a whole persona export as this store writes one (${issues}).`,
  );
}

/**
 * Imports one export as a new persona of `options.account`: all of it or nothing. `document` is what
 * readExportFile read (read entry by entry) or a document already parsed. Entries keep their revisions,
 * times, source and pin; what wrote them is recorded as the import, with the file's `asserted_by` kept
 * as its claim (importedAssertedBy).
 */
export async function importExport(
  document: ExportFile | unknown,
  target: PersonaEngine,
  options: ImportOptions,
): Promise<ImportReport> {
  const parts = partsOf(document);
  await screen(parts, target, options.limits, options.profile);
  const clock = options.now ?? new Date();
  const shapes = exportShapes(options.limits, clock);
  const head = shapes.head.safeParse({
    ...parts.head,
    ...Object.fromEntries(LISTS.filter((list) => parts.lists[list]).map((list) => [list, []])),
  });
  if (!head.success) throw refusedShape(head.error);
  const doc = head.data;
  const profile = options.profile ?? doc.persona.profile;
  if (options.profile !== undefined && !Profile.safeParse(profile).success) {
    throw new ImportRefused(
      `--profile "${profile}" is not a profile: 1-64 letters, digits, dot, dash or underscore, starting with a letter or digit.`,
    );
  }
  /** Each entry of a list, parsed (again, from a file) and checked, one at a time. */
  function* entries<L extends List>(list: L): Generator<[number, z.output<(typeof shapes)[L]>]> {
    const all = parts.lists[list]!;
    for (let i = 0; i < all.length; i++) {
      const entry = shapes[list].safeParse(all.entry(i));
      if (!entry.success) throw refusedShape(entry.error, [list, i]);
      yield [i, entry.data as z.output<(typeof shapes)[L]>];
    }
  }

  const fields: PersonaCopy['fields'] = [];
  const keys = new Set<string>();
  for (const [i, f] of entries('fields')) {
    let key: string;
    try {
      key = fieldKey(f.key, options.limits.maxKeyLength);
    } catch (err) {
      throw new ImportRefused(
        `Nothing was imported: fields[${i}].key is not a key this store accepts (${(err as { detail?: string }).detail ?? String(err)}).`,
      );
    }
    if (keys.has(key))
      throw new ImportRefused(
        `Nothing was imported: fields[${i}].key "${key}" appears twice; a persona has one field per key.`,
      );
    keys.add(key);
    const value = JSON.stringify(f.value);
    if (Buffer.byteLength(value) > options.limits.maxValueBytes) {
      throw new ImportRefused(
        `Nothing was imported: fields[${i}].value is larger than ${options.limits.maxValueBytes} bytes as compact JSON (PERSONA_MAX_VALUE_BYTES).`,
      );
    }
    fields.push({
      key,
      description: f.description,
      value,
      value_type: valueType(f.value),
      revision: f.revision,
      source: f.source,
      asserted_by: importedAssertedBy(f.asserted_by),
      pinned: f.pinned ? 1 : 0,
      state: 'live',
      destroy_at: null,
      created_at: f.created_at,
      updated_at: f.updated_at,
    });
  }
  const notes: PersonaCopy['notes'] = [];
  const ids = new Set<string>();
  for (const [i, n] of entries('notes')) {
    if (ids.has(n.id))
      throw new ImportRefused(
        `Nothing was imported: notes[${i}].id "${n.id}" appears twice; every note has its own id.`,
      );
    ids.add(n.id);
    notes.push({
      id: n.id,
      kind: n.kind,
      content: n.content,
      revision: n.revision,
      source: n.source,
      asserted_by: importedAssertedBy(n.asserted_by),
      pinned: n.pinned ? 1 : 0,
      state: 'live',
      destroy_at: null,
      idempotency_key: null,
      written_at: n.written_at,
      revised_at: n.revised_at,
    });
  }
  // Oldest first, as the store lists them (and as new sequence numbers will order them).
  notes.sort((a, b) => (a.written_at < b.written_at ? -1 : a.written_at > b.written_at ? 1 : 0));

  const now = clock.toISOString();
  const logged = (action: string, target_kind: string, target: string, changes: string) => ({
    at: now,
    action,
    target_kind,
    target,
    asserted_by: IMPORT_ACTOR,
    source: target_kind === 'persona' ? null : 'owner',
    changes,
    replaced: null,
    via: 'import',
  });
  const card = { ...doc.persona, profile };
  const account = storedAccount(target, options.account);

  return target.write(async (db) => {
    const there = await db
      .selectFrom('personas')
      .select('id')
      .where('account', '=', account)
      .where('profile', '=', profile)
      .executeTakeFirst();
    if (there) throw refusedProfile(account, profile);
    // Note ids are unique across the database: one already used (the same export imported for another account or profile) gets a new one.
    const taken = new Set<string>();
    const wanted = notes.map((n) => n.id);
    for (let i = 0; i < wanted.length; i += 500) {
      const rows = await db
        .selectFrom('notes')
        .select('id')
        .where('id', 'in', wanted.slice(i, i + 500))
        .execute();
      for (const r of rows) taken.add(r.id);
    }
    const copy: PersonaCopy = {
      persona: { ...card, account },
      fields: fields.sort((a, b) => (a.key < b.key ? -1 : 1)),
      notes: taken.size === 0 ? notes : notes.map((n) => (taken.has(n.id) ? { ...n, id: randomUUID() } : n)),
      events: [],
    };
    // One text for every entry's list of members (an import of many entries holds it once).
    const fieldChanges = JSON.stringify(['description', 'value', 'source', 'pinned']);
    const noteChanges = JSON.stringify(['content', 'kind', 'source', 'pinned']);
    copy.events = [
      logged('persona_created', 'persona', profile, JSON.stringify(CARD_MEMBERS.filter((m) => card[m] !== null))),
      ...copy.fields.map((f) => logged('field_set', 'field', f.key, fieldChanges)),
      ...copy.notes.map((n) => logged('note_added', 'note', n.id, noteChanges)),
    ];
    try {
      await liveCountTriggers(target, db, 'off');
      await liveCountTriggers(target, db, 'on', [await writePersona(target, db, copy, account)]);
    } catch (err) {
      // Another copy of the app created the profile meanwhile.
      if (target.isUniqueViolation(err)) throw refusedProfile(account, profile);
      throw err;
    }
    return { account, profile, fields: copy.fields.length, notes: copy.notes.length, newNoteIds: taken.size };
  });
}

const refusedProfile = (account: string, profile: string) =>
  new ImportRefused(
    `Nothing was imported: account ${account} already has a persona "${profile}", and an import never overwrites. Import it under another ` +
      `profile (--profile <new name>), or delete the existing one first (DELETE /v1/personas/${profile}, after exporting it if you want to keep it).`,
  );
