import { randomUUID } from 'node:crypto';
import { readPage } from '../kit/paging.ts';
import { problem } from '../kit/problem.ts';
import type { Principal } from '../kit/auth.ts';
import { actorOf, logEntry, record, SERVICE_ACTOR, type Action } from './change-log.ts';
import { fieldKey } from './field-key.ts';
import { destroy, forget, type ForgetOutcome } from './forgetting.ts';
import { requireCardMatch, requireEntryMatch, type Expected } from './preconditions.ts';
import { queryWords, RECALL_CANDIDATES } from './recall.ts';
import type { EntryRow, EntryTable, FieldRow, NoteRow, PersonaRow } from './tables.ts';
import type { Policy } from './settings.ts';
import type { EventFilter, PersonaSql } from './store.ts';

export const SOURCES = ['owner', 'assistant', 'service'] as const;
export const NOTE_KINDS = ['episode', 'observation', 'lesson'] as const;
export const VERBOSITIES = ['terse', 'balanced', 'detailed'] as const;
export const CARD_MEMBERS = ['display_name', 'pronouns', 'language', 'tone', 'verbosity', 'speaking_style'] as const;

export interface Limits {
  maxValueBytes: number;
  maxNoteChars: number;
  maxKeyLength: number;
}

export type CardInput = { display_name?: string } & Partial<
  Record<Exclude<(typeof CARD_MEMBERS)[number], 'display_name'>, string | null>
>;
export interface FieldInput {
  description: string;
  value: unknown;
  source: (typeof SOURCES)[number];
  pinned?: boolean;
}
export interface NoteInput {
  content: string;
  kind: (typeof NOTE_KINDS)[number];
  source: (typeof SOURCES)[number];
  pinned?: boolean;
}
export type NotePatch = Partial<NoteInput>;

export function cardView(p: PersonaRow) {
  return {
    profile: p.profile,
    display_name: p.display_name,
    pronouns: p.pronouns,
    language: p.language,
    tone: p.tone,
    verbosity: p.verbosity,
    speaking_style: p.speaking_style,
    created_at: p.created_at,
    updated_at: p.updated_at,
  };
}

/** `value` is the row's value already parsed, when the caller has it. */
export function fieldView(f: FieldRow, value: unknown = JSON.parse(f.value)) {
  return {
    key: f.key,
    description: f.description,
    value,
    value_type: f.value_type,
    revision: f.revision,
    source: f.source,
    asserted_by: f.asserted_by,
    pinned: f.pinned === 1,
    created_at: f.created_at,
    updated_at: f.updated_at,
  };
}

export function noteView(n: NoteRow) {
  return {
    id: n.id,
    kind: n.kind,
    content: n.content,
    source: n.source,
    asserted_by: n.asserted_by,
    pinned: n.pinned === 1,
    revision: n.revision,
    written_at: n.written_at,
    revised_at: n.revised_at,
  };
}

/** value_type: null, boolean, integer, number, string, list (any array) or object. */
export function valueType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Whether a note's row holds exactly what `input` would write: an Idempotency-Key's retry. */
const sameNote = (row: NoteRow, input: NoteInput) =>
  row.content === input.content &&
  row.kind === input.kind &&
  row.source === input.source &&
  row.pinned === (input.pinned ? 1 : 0);

/**
 * Refuses a new pin (409) when the persona has as many pinned entries of the kind as its cap allows, saying
 * how many it has: a cap lowered below the pins already there (a person's setting, the deployment's) asks
 * to unpin more than one before anything can be pinned.
 */
async function refuseOverPinCap(
  sql: PersonaSql,
  persona: PersonaRow,
  table: EntryTable,
  cap: number,
  orElse: string,
): Promise<void> {
  const pinned = await sql.countPinned(table, persona.id);
  if (pinned < cap) return;
  const over =
    pinned > cap
      ? `more than the pin cap ${cap} (lowered after they were pinned)`
      : `the most allowed (pin cap ${cap})`;
  throw problem.conflict(
    `Persona "${persona.profile}" already has ${pinned} pinned ${table}, ${over}; unpin ${pinned - cap + 1} first${orElse}.`,
  );
}

const notFoundPersona = (profile: string) =>
  problem.notFound(
    `There is no persona "${profile}" for your account; list yours with GET /v1/personas or create it with POST /v1/personas.`,
  );

/**
 * The operations on personas, fields and notes. Each write runs in one immediate transaction and
 * records exactly one change-log entry per change it makes (a retry that changes nothing records none).
 * Credentials never reach these: the HTTP edge refuses every write that carries one (app.ts).
 */
export class Personas {
  constructor(
    private readonly sql: PersonaSql,
    private readonly limits: Limits,
    /** Where every time the store writes comes from (entries, change log, grace periods); a test may set it. */
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The account the token's sub keeps its rows under (see PersonaEngine.accountOf). */
  private account(sub: string): string {
    return this.sql.engine.accountOf(sub);
  }

  private async requirePersona(account: string, profile: string, sql = this.sql): Promise<PersonaRow> {
    const p = await sql.persona(account, profile);
    if (!p) throw notFoundPersona(profile);
    return p;
  }

  /** Inside a write transaction: the persona, held until the transaction ends (see PersonaEngine.write). */
  private async holdPersona(sql: PersonaSql, account: string, profile: string): Promise<PersonaRow> {
    const p = await sql.personaForWrite(account, profile);
    if (!p) throw notFoundPersona(profile);
    return p;
  }

  private async liveField(persona: PersonaRow, rawKey: string, sql = this.sql): Promise<FieldRow> {
    const key = fieldKey(rawKey, this.limits.maxKeyLength);
    const f = await sql.field(persona.id, key);
    if (!f || f.state !== 'live') {
      throw problem.notFound(
        `Persona "${persona.profile}" has no field "${key}"; see GET /v1/personas/${persona.profile}/fields/_schema for its keys.`,
      );
    }
    return f;
  }

  private async liveNote(persona: PersonaRow, id: string, sql = this.sql): Promise<NoteRow> {
    const n = await sql.note(persona.id, id);
    if (!n || n.state !== 'live') {
      throw problem.notFound(
        `Persona "${persona.profile}" has no note "${id}"; list its notes with GET /v1/personas/${persona.profile}/notes.`,
      );
    }
    return n;
  }

  // Personas

  async listPersonas(account: string, after: string, limit: number) {
    account = this.account(account);
    const page = await readPage(
      limit,
      (count) => this.sql.personas(account, after, count),
      (row) => row.profile,
    );
    return { personas: page.items.map(cardView), next_after: page.next_after };
  }

  async createPersona(principal: Principal, profile: string, card: CardInput & { display_name: string }) {
    const now = this.clock().toISOString();
    const exists = () =>
      problem.conflict(
        `You already have a persona "${profile}"; change it with PATCH /v1/personas/${profile} or choose another profile.`,
      );
    // Two copies of the app creating the same profile at once: the database's unique constraint decides, the loser answers 409.
    return this.sql
      .transaction(async (sql) => {
        if (await sql.persona(this.account(principal.account), profile)) throw exists();
        const row = await sql.insertPersona({
          live_fields: 0,
          live_notes: 0,
          account: this.account(principal.account),
          profile,
          display_name: card.display_name,
          pronouns: card.pronouns ?? null,
          language: card.language ?? null,
          tone: card.tone ?? null,
          verbosity: card.verbosity ?? null,
          speaking_style: card.speaking_style ?? null,
          created_at: now,
          updated_at: now,
        });
        await record(
          sql,
          {
            account: this.account(principal.account),
            profile,
            action: 'persona_created',
            targetKind: 'persona',
            target: profile,
            ...actorOf(principal),
            source: null,
            changes: CARD_MEMBERS.filter((m) => card[m] !== undefined && card[m] !== null),
          },
          now,
        );
        return cardView(row);
      })
      .catch((err: unknown) => {
        throw this.sql.engine.isUniqueViolation(err) ? exists() : err;
      });
  }

  async updatePersona(principal: Principal, policy: Policy, profile: string, patch: CardInput, expected?: Expected) {
    return this.sql.transaction(async (sql) => {
      const p = await this.holdPersona(sql, this.account(principal.account), profile);
      await requireCardMatch(sql, cardView(p), p.account, expected);
      const changed = CARD_MEMBERS.filter((m) => patch[m] !== undefined && patch[m] !== p[m]);
      if (changed.length === 0) return cardView(p);
      const now = this.clock().toISOString();
      const next = { ...p, updated_at: now };
      for (const m of changed) (next as Record<string, unknown>)[m] = patch[m];
      const row = await sql.updatePersona(next);
      await record(
        sql,
        {
          account: p.account,
          profile,
          action: 'persona_updated',
          targetKind: 'persona',
          target: profile,
          ...actorOf(principal),
          source: null,
          changes: changed,
          replaced: policy.keepReplacedValues ? Object.fromEntries(changed.map((m) => [m, p[m]])) : undefined,
        },
        now,
      );
      return cardView(row);
    });
  }

  /** Hard delete with cascade, whatever the forget setting; the persona's change log goes too, but for one entry saying so. */
  async deletePersona(principal: Principal, profile: string): Promise<void> {
    await this.sql.transaction(async (sql) => {
      const p = await this.holdPersona(sql, this.account(principal.account), profile);
      await sql.deletePersona(p.id);
      await sql.deleteEventsOf(p.account, profile);
      await record(
        sql,
        {
          account: p.account,
          profile,
          action: 'persona_deleted',
          targetKind: 'persona',
          target: profile,
          ...actorOf(principal),
          source: null,
          changes: ['deleted'],
        },
        this.clock().toISOString(),
      );
      await sql.destroyedInTransaction();
    });
    await this.sql.afterDestruction();
  }

  async identityBlock(account: string, policy: Policy, profile: string) {
    account = this.account(account);
    const p = await this.requirePersona(account, profile);
    return {
      persona: cardView(p),
      fields: (await this.sql.pinned('fields', p.id, policy.pinCapFields)).map((f) => fieldView(f)),
      notes: (await this.sql.pinned('notes', p.id, policy.pinCapNotes)).map(noteView),
      field_count: p.live_fields,
      note_count: p.live_notes,
      pin_caps: { fields: policy.pinCapFields, notes: policy.pinCapNotes },
    };
  }

  // Fields

  async putField(
    principal: Principal,
    policy: Policy,
    profile: string,
    rawKey: string,
    input: FieldInput,
    expected?: Expected,
  ) {
    const key = fieldKey(rawKey, this.limits.maxKeyLength);
    const value = JSON.stringify(input.value);
    if (Buffer.byteLength(value) > this.limits.maxValueBytes) {
      throw problem.tooLarge(
        `body.value is larger than ${this.limits.maxValueBytes} bytes as compact JSON (the limit); store less in one field.`,
      );
    }
    // The value as stored, parsed once: what the index gets now must be exactly what un-indexing it will
    // compute later from the stored JSON (a JavaScript caller's value may not survive JSON unchanged).
    const stored = JSON.parse(value) as unknown;
    const pinned = input.pinned ? 1 : 0;
    let destroyedPending = false;
    const result = await this.sql.transaction(async (sql) => {
      const [held, found] = await sql.personaAndEntryForWrite(
        this.account(principal.account),
        profile,
        'fields',
        'key',
        key,
      );
      if (!held) throw notFoundPersona(profile);
      const p = held;
      let existing = found;
      await requireEntryMatch(sql, p, 'field', key, existing?.state === 'live' ? existing : undefined, expected);
      const now = this.clock().toISOString();
      if (existing?.state === 'pending') {
        // It was going to be destroyed: it is, now, and the key starts afresh.
        await destroy(sql, p, 'fields', existing, actorOf(principal), now);
        await sql.destroyedInTransaction();
        destroyedPending = true;
        existing = undefined;
      }
      const live = existing?.state === 'live' ? existing : undefined;
      if (pinned && !live?.pinned)
        await refuseOverPinCap(sql, p, 'fields', policy.pinCapFields, ' or send pinned false');
      const next = {
        description: input.description,
        value,
        value_type: valueType(stored),
        source: input.source,
        asserted_by: principal.audience,
        pinned,
      };
      const base = {
        account: p.account,
        profile,
        targetKind: 'field' as const,
        target: key,
        ...actorOf(principal),
        source: input.source,
      };
      if (!existing) {
        const entry = logEntry(
          { ...base, action: 'field_set', changes: ['description', 'value', 'source', 'pinned'] },
          now,
        );
        const row = await sql.insertField(
          {
            persona_id: p.id,
            key,
            ...next,
            revision: 1,
            state: 'live',
            destroy_at: null,
            created_at: now,
            updated_at: now,
          },
          stored,
          entry,
        );
        await sql.indexField(row, stored);
        return row;
      }
      const changed = (['description', 'value', 'source', 'asserted_by', 'pinned'] as const).filter(
        (m) => existing[m] !== next[m],
      );
      if (live && changed.length === 0) return live;
      let action: Action;
      if (!live) action = 'field_revived';
      else if (changed.length === 1 && changed[0] === 'pinned') action = pinned ? 'field_pinned' : 'field_unpinned';
      else action = 'field_revised';
      const replacedMembers = changed.filter((m) => m === 'description' || m === 'value');
      const replaced =
        live && policy.keepReplacedValues && replacedMembers.length > 0
          ? Object.fromEntries(
              replacedMembers.map((m) => [
                m,
                m === 'value' ? (JSON.parse(existing.value) as unknown) : existing.description,
              ]),
            )
          : undefined;
      const entry = logEntry({ ...base, action, changes: live ? changed : ['state', ...changed], replaced }, now);
      const row = await sql.updateField(
        { ...existing, ...next, revision: existing.revision + 1, state: 'live', destroy_at: null, updated_at: now },
        stored,
        entry,
      );
      // The index holds key, description and value: a change of pinned, source or asserted_by leaves it as it is.
      if (!live) await sql.indexField(row, stored);
      else if (changed.includes('description') || changed.includes('value')) {
        await sql.unindexField(live);
        await sql.indexField(row, stored);
      }
      return row;
    });
    if (destroyedPending) await this.sql.afterDestruction();
    return fieldView(result, result.value === value ? stored : undefined);
  }

  async getField(account: string, profile: string, rawKey: string) {
    account = this.account(account);
    return fieldView(await this.liveField(await this.requirePersona(account, profile), rawKey));
  }

  async listFields(account: string, profile: string, after: string, limit: number) {
    const page = await this.fieldPage(account, profile, limit, (personaId, count) =>
      this.sql.fields(personaId, after, count),
    );
    return { fields: page.items.map((f) => fieldView(f)), next_after: page.next_after };
  }

  /** A page of the persona's forgotten entries of one kind (kept or pending), each saying where it is in its forgetting. */
  async listForgotten(account: string, profile: string, table: EntryTable, after: string, limit: number) {
    const p = await this.requirePersona(this.account(account), profile);
    const afterSeq = table === 'notes' ? Number(after || 0) : after;
    const page = await readPage(
      limit,
      (count) => this.sql.forgotten(table, p.id, afterSeq, count),
      (row) => ('seq' in row ? String(row.seq) : row.key),
    );
    const forgotten = (row: EntryRow<EntryTable>) => ({
      state: row.state as 'kept' | 'pending',
      destroy_at: row.destroy_at,
    });
    const items = page.items.map((row) =>
      'seq' in row ? { ...noteView(row), forgotten: forgotten(row) } : { ...fieldView(row), forgotten: forgotten(row) },
    );
    return table === 'notes'
      ? { notes: items, next_after: page.next_after }
      : { fields: items, next_after: page.next_after };
  }

  async describeSchema(account: string, profile: string, after: string, limit: number) {
    const page = await this.fieldPage(account, profile, limit, (personaId, count) =>
      this.sql.schema(personaId, after, count),
    );
    return { fields: page.items, next_after: page.next_after };
  }

  /** A page of the persona's live fields in key order, as `read` selects them (whole, or key and description). */
  private async fieldPage<R extends { key: string }>(
    account: string,
    profile: string,
    limit: number,
    read: (personaId: number, count: number) => Promise<R[]>,
  ) {
    const p = await this.requirePersona(this.account(account), profile);
    return readPage(
      limit,
      (count) => read(p.id, count),
      (row) => row.key,
    );
  }

  /** Forgets a live field per the person's setting, or applies the current setting to one already forgotten (see forgetting.ts). */
  async forgetField(principal: Principal, policy: Policy, profile: string, rawKey: string, expected?: Expected) {
    const key = fieldKey(rawKey, this.limits.maxKeyLength);
    return this.forgetEntry(principal, policy, profile, 'fields', {
      find: async (sql, p) => {
        const row = await sql.field(p.id, key);
        // No row at all answers 404 as always; a kept one fails the condition.
        if (row) await requireEntryMatch(sql, p, 'field', key, row.state === 'live' ? row : undefined, expected);
        return row;
      },
      missing: (sql, p) => this.liveField(p, rawKey, sql),
    });
  }

  /**
   * One forgetting in the persona's write transaction: `find` reads the entry, forgetting.ts applies the
   * setting; where there was nothing to forget, `missing` throws the 404 of a missing entry.
   */
  private async forgetEntry<T extends EntryTable>(
    principal: Principal,
    policy: Policy,
    profile: string,
    table: T,
    entry: {
      find: (sql: PersonaSql, persona: PersonaRow) => Promise<EntryRow<T> | undefined>;
      missing: (sql: PersonaSql, persona: PersonaRow) => Promise<unknown>;
    },
  ): Promise<{ outcome: ForgetOutcome }> {
    const outcome = await this.sql.transaction(async (sql) => {
      const p = await this.holdPersona(sql, this.account(principal.account), profile);
      const row = await entry.find(sql, p);
      const outcome = row && (await forget(sql, p, table, row, policy, actorOf(principal), this.clock()));
      if (!outcome) await entry.missing(sql, p);
      if (outcome === 'destroyed') await sql.destroyedInTransaction();
      return outcome!;
    });
    if (outcome === 'destroyed') await this.sql.afterDestruction();
    return { outcome };
  }

  // Notes

  async addNote(
    principal: Principal,
    policy: Policy,
    profile: string,
    input: NoteInput,
    idempotencyKey: string | undefined,
  ) {
    this.checkNoteSize(input.content);
    return this.sql.transaction(async (sql) => {
      const account = this.account(principal.account);
      const [held, first] =
        idempotencyKey === undefined
          ? [await sql.personaForWrite(account, profile), undefined]
          : await sql.personaAndEntryForWrite(account, profile, 'notes', 'idempotency_key', idempotencyKey);
      if (!held) throw notFoundPersona(profile);
      const p = held;
      if (idempotencyKey !== undefined) {
        if (first && first.state !== 'live') {
          throw problem.conflict(
            'The note first written with this Idempotency-Key has been forgotten; send a new Idempotency-Key to write a new note.',
          );
        }
        if (first) {
          // A retry sends the same note; another note under a used key would otherwise be answered with the first and dropped.
          // Once the first is revised, what was sent is no longer known, and a retry is answered with the note as it is.
          if (first.revision === 1 && !sameNote(first, input)) {
            throw problem.unprocessable(
              `This Idempotency-Key was first used for another note (${first.id}), so this one was not written; a retry must send the same note. ` +
                'Send a new Idempotency-Key to write a new note.',
            );
          }
          return { note: noteView(first), replayed: true };
        }
      }
      const pinned = input.pinned ? 1 : 0;
      if (pinned) await refuseOverPinCap(sql, p, 'notes', policy.pinCapNotes, ' or send pinned false');
      const now = this.clock().toISOString();
      const id = randomUUID();
      const entry = logEntry(
        {
          account: p.account,
          profile,
          action: 'note_added',
          targetKind: 'note',
          target: id,
          ...actorOf(principal),
          source: input.source,
          changes: ['content', 'kind', 'source', 'pinned'],
        },
        now,
      );
      const row = await sql.insertNote(
        {
          id,
          persona_id: p.id,
          kind: input.kind,
          content: input.content,
          revision: 1,
          source: input.source,
          asserted_by: principal.audience,
          pinned,
          state: 'live',
          destroy_at: null,
          idempotency_key: idempotencyKey ?? null,
          written_at: now,
          revised_at: now,
        },
        entry,
      );
      await sql.indexNote(row);
      return { note: noteView(row), replayed: false };
    });
  }

  async listNotes(account: string, profile: string, after: number, limit: number, kind?: string) {
    account = this.account(account);
    const p = await this.requirePersona(account, profile);
    const page = await readPage(
      limit,
      (count) => this.sql.notes(p.id, after, count, kind),
      (row) => String(row.seq),
    );
    return { notes: page.items.map(noteView), next_after: page.next_after };
  }

  async getNote(account: string, profile: string, id: string) {
    account = this.account(account);
    return noteView(await this.liveNote(await this.requirePersona(account, profile), id));
  }

  /** Only the named parts change; written_at never moves. A kept note cannot be revived (see README). */
  async reviseNote(
    principal: Principal,
    policy: Policy,
    profile: string,
    id: string,
    patch: NotePatch,
    expected?: Expected,
  ) {
    if (patch.content !== undefined) this.checkNoteSize(patch.content);
    return this.sql.transaction(async (sql) => {
      const [held, found] = await sql.personaAndEntryForWrite(
        this.account(principal.account),
        profile,
        'notes',
        'id',
        id,
      );
      if (!held) throw notFoundPersona(profile);
      const p = held;
      if (found) await requireEntryMatch(sql, p, 'note', id, found.state === 'live' ? found : undefined, expected);
      const n = found?.state === 'live' ? found : await this.liveNote(p, id, sql);
      const next = {
        content: patch.content ?? n.content,
        kind: patch.kind ?? n.kind,
        source: patch.source ?? n.source,
        pinned: patch.pinned === undefined ? n.pinned : patch.pinned ? 1 : 0,
        asserted_by: principal.audience,
      };
      const changed = (['content', 'kind', 'source', 'pinned', 'asserted_by'] as const).filter((m) => n[m] !== next[m]);
      if (changed.length === 0) return noteView(n);
      if (next.pinned && !n.pinned) await refuseOverPinCap(sql, p, 'notes', policy.pinCapNotes, '');
      const now = this.clock().toISOString();
      const action: Action =
        changed.length === 1 && changed[0] === 'pinned'
          ? next.pinned
            ? 'note_pinned'
            : 'note_unpinned'
          : 'note_revised';
      const entry = logEntry(
        {
          account: p.account,
          profile,
          action,
          targetKind: 'note',
          target: n.id,
          ...actorOf(principal),
          source: next.source,
          changes: changed,
          replaced: policy.keepReplacedValues && changed.includes('content') ? { content: n.content } : undefined,
        },
        now,
      );
      const row = await sql.updateNote({ ...n, ...next, revision: n.revision + 1, revised_at: now }, entry);
      if (next.content !== n.content) {
        await sql.unindexNote(n);
        await sql.indexNote(row);
      }
      return noteView(row);
    });
  }

  /** Forgets a live note per the person's setting, or applies the current setting to one already forgotten (see forgetting.ts). */
  async forgetNote(principal: Principal, policy: Policy, profile: string, id: string, expected?: Expected) {
    return this.forgetEntry(principal, policy, profile, 'notes', {
      find: async (sql, p) => {
        const row = await sql.note(p.id, id);
        if (row) await requireEntryMatch(sql, p, 'note', id, row.state === 'live' ? row : undefined, expected);
        return row;
      },
      missing: (sql, p) => this.liveNote(p, id, sql),
    });
  }

  private checkNoteSize(content: string): void {
    if (content.length > this.limits.maxNoteChars) {
      throw problem.tooLarge(
        `body.content is longer than ${this.limits.maxNoteChars} characters (the limit); split it into several notes.`,
      );
    }
  }

  // Recall, export, change log

  async recall(account: string, profile: string | undefined, q: string, limit: number) {
    account = this.account(account);
    const words = queryWords(q);
    const personaId = profile === undefined ? null : (await this.requirePersona(account, profile)).id;
    const fields = await this.sql.recallFields(words, account, personaId, limit, RECALL_CANDIDATES);
    const notes = await this.sql.recallNotes(words, account, personaId, limit, RECALL_CANDIDATES);
    const answer = {
      fields: fields.hits.map((r) => ({ profile: r.profile, score: r.score, ...fieldView(r) })),
      notes: notes.hits.map((r) => ({ profile: r.profile, score: r.score, ...noteView(r) })),
    };
    // Said only when a list stopped early, so that every other answer is what it always was.
    if (!fields.capped && !notes.capped) return answer;
    return {
      ...answer,
      stopped_early: {
        ...(fields.capped ? { fields: RECALL_CANDIDATES } : {}),
        ...(notes.capped ? { notes: RECALL_CANDIDATES } : {}),
      },
    };
  }

  async exportPersona(
    account: string,
    profile: string,
    page: { fieldsAfter: string; fieldsLimit: number; notesAfter: number; notesLimit: number },
  ) {
    account = this.account(account);
    const p = await this.requirePersona(account, profile);
    const fields = await readPage(
      page.fieldsLimit,
      (count) => this.sql.fields(p.id, page.fieldsAfter, count),
      (row) => row.key,
    );
    const notes = await readPage(
      page.notesLimit,
      (count) => this.sql.notes(p.id, page.notesAfter, count),
      (row) => String(row.seq),
    );
    return {
      format: 'persona-export/1',
      persona: cardView(p),
      fields: fields.items.map((row) => fieldView(row)),
      notes: notes.items.map(noteView),
      fields_next_after: fields.next_after,
      notes_next_after: notes.next_after,
    };
  }

  async events(account: string, profile: string, filter: Omit<EventFilter, 'account' | 'profile'>) {
    account = this.account(account);
    await this.requirePersona(account, profile);
    return this.sql.events({ account, profile, ...filter });
  }
}

export { SERVICE_ACTOR };
