import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { Problem } from '../kit/problem.ts';
import { SERVICE_ACTOR } from './change-log.ts';
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
 * their provenance, revisions and times; the change log starts at the import (an export carries none).
 */

/** A refusal that says what to do; nothing was written. */
export class ImportRefused extends Error {
  override name = 'ImportRefused';
}

/** ISO 8601 with a zone, kept as the store writes times (toISOString), so that they sort and filter like its own. */
const Time = z
  .string()
  .refine(
    (t) => /(Z|[+-]\d{2}:?\d{2})$/i.test(t) && !Number.isNaN(Date.parse(t)),
    'an ISO 8601 time with a zone, as the export writes it',
  )
  .transform((t) => new Date(t).toISOString());
const Revision = z
  .number()
  .int()
  .min(1)
  .max(2 ** 31 - 1);
const Provenance = {
  source: z.enum(SOURCES),
  asserted_by: z.string().min(1).max(200),
  pinned: z.boolean(),
  revision: Revision,
};

function exportShape(limits: Limits) {
  return z.strictObject({
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
    fields: z.array(
      z.strictObject({
        key: z.string().min(1),
        description: z.string().min(1).max(1000),
        value: z.unknown().refine((v) => v !== undefined, 'a field needs its value (any JSON value, null included)'),
        value_type: z.string().optional(),
        ...Provenance,
        created_at: Time,
        updated_at: Time,
      }),
    ),
    notes: z.array(
      z.strictObject({
        ...noteMembers(limits),
        ...Provenance,
        written_at: Time,
        revised_at: Time,
      }),
    ),
    fields_next_after: z
      .null({
        message:
          'the file is one page of an export; export every page (the console\u2019s Export joins them) and import that',
      })
      .optional(),
    notes_next_after: z
      .null({
        message:
          'the file is one page of an export; export every page (the console\u2019s Export joins them) and import that',
      })
      .optional(),
  });
}

/**
 * Reads an export file as JSON; the refusal says what is wrong with the file. A file larger than
 * `maxBytes` is refused before it is read: parsed, a file takes several times its size in memory.
 */
export function readExportFile(file: string, maxBytes: number): unknown {
  let text: string;
  try {
    const { size } = statSync(file);
    if (size > maxBytes) {
      throw new ImportRefused(
        `${file} is ${size.toLocaleString('en-US')} bytes, larger than the ${maxBytes.toLocaleString('en-US')} an import reads (PERSONA_MAX_IMPORT_BYTES). ` +
          'Nothing was imported. Set PERSONA_MAX_IMPORT_BYTES to at least the file\u2019s size for this import if the computer has the memory ' +
          '(an import takes about five times the file\u2019s size), or move the persona in from its SQLite file instead.',
      );
    }
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (err instanceof ImportRefused) throw err;
    throw new ImportRefused(
      `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}); give the path of an export file (JSON).`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ImportRefused(
      `${file} is not JSON; an export file is what GET /v1/personas/{profile}/export answers (the console\u2019s Export downloads one).`,
    );
  }
}

/** Characters of strings looked at for credentials at once, as much as one write's body (PERSONA_BODY_LIMIT): bounds what one look holds. */
const SCREEN_BATCH_CHARS = 256_000;

/**
 * The gate every write passes, over the whole file: each entry is screened as the body of its own
 * write would be (so nesting counts from the entry, as it does for a PUT of the field), then every
 * string is looked at for credentials, a batch of entries at a time. A string longer than any member
 * may be is refused before anything reads it. Never echoes what it found.
 */
async function screen(document: unknown, target: PersonaEngine, limits: Limits, profile?: string): Promise<void> {
  const longest = Math.max(limits.maxNoteChars, limits.maxValueBytes, 2000);
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
  if (document !== null && typeof document === 'object' && !Array.isArray(document)) {
    for (const [member, value] of Object.entries(document)) {
      if (Array.isArray(value) && (member === 'fields' || member === 'notes')) {
        for (const [i, entry] of value.entries()) await read(entry, `${member}[${i}]`);
      } else await read(value, member);
    }
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

/** Imports one export document as a new persona of `options.account`: all of it or nothing. */
export async function importExport(
  document: unknown,
  target: PersonaEngine,
  options: ImportOptions,
): Promise<ImportReport> {
  await screen(document, target, options.limits, options.profile);
  const parsed = exportShape(options.limits).safeParse(document);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map(issueText).join('; ');
    throw new ImportRefused(
      `Nothing was imported: the file is not a whole persona export as this store writes one (${issues}).`,
    );
  }
  const doc = parsed.data;
  const profile = options.profile ?? doc.persona.profile;
  if (options.profile !== undefined && !Profile.safeParse(profile).success) {
    throw new ImportRefused(
      `--profile "${profile}" is not a profile: 1-64 letters, digits, dot, dash or underscore, starting with a letter or digit.`,
    );
  }

  const fields: PersonaCopy['fields'] = [];
  const keys = new Set<string>();
  for (const [i, f] of doc.fields.entries()) {
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
      asserted_by: f.asserted_by,
      pinned: f.pinned ? 1 : 0,
      state: 'live',
      destroy_at: null,
      created_at: f.created_at,
      updated_at: f.updated_at,
    });
  }
  const ids = new Set<string>();
  for (const [i, n] of doc.notes.entries()) {
    if (ids.has(n.id))
      throw new ImportRefused(
        `Nothing was imported: notes[${i}].id "${n.id}" appears twice; every note has its own id.`,
      );
    ids.add(n.id);
  }
  // Oldest first, as the store lists them (and as new sequence numbers will order them).
  const notes = [...doc.notes].sort((a, b) => (a.written_at < b.written_at ? -1 : a.written_at > b.written_at ? 1 : 0));

  const now = (options.now ?? new Date()).toISOString();
  const logged = (action: string, target_kind: string, target: string, changes: string[]) => ({
    at: now,
    action,
    target_kind,
    target,
    asserted_by: SERVICE_ACTOR,
    source: target_kind === 'persona' ? null : 'owner',
    changes: JSON.stringify(changes),
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
      fields: [...fields].sort((a, b) => (a.key < b.key ? -1 : 1)),
      notes: notes.map((n) => ({
        id: taken.has(n.id) ? randomUUID() : n.id,
        kind: n.kind,
        content: n.content,
        revision: n.revision,
        source: n.source,
        asserted_by: n.asserted_by,
        pinned: n.pinned ? 1 : 0,
        state: 'live',
        destroy_at: null,
        idempotency_key: null,
        written_at: n.written_at,
        revised_at: n.revised_at,
      })),
      events: [],
    };
    copy.events = [
      logged(
        'persona_created',
        'persona',
        profile,
        CARD_MEMBERS.filter((m) => card[m] !== null),
      ),
      ...copy.fields.map((f) => logged('field_set', 'field', f.key, ['description', 'value', 'source', 'pinned'])),
      ...copy.notes.map((n) => logged('note_added', 'note', n.id, ['content', 'kind', 'source', 'pinned'])),
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
