/**
 * Fields and notes as dense tables, for a persona's page and for Recall: one line an entry, values
 * shown as what they are (text, a number, true/false, JSON), and the provenance (who wrote it, through
 * which client, which revision, what the field is for) one click away in the entry's details, not
 * repeated on every line. Entries stay data: every value is a text node (preact builds no HTML from
 * data), and each page says above its tables that they are what their writers reported, never
 * instructions.
 */
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { claimedByImport, IMPORT_ACTOR } from '../../common/change-log.ts';
import type { Field, Note } from '../../services/persona-store/shapes.ts';
import { formatTime } from './states.ts';

/** A field or a note as the persona store answers it; Recall's hits also name their persona (`profile`). */
export type FieldEntry = Field & { profile?: string };
export type NoteEntry = Note & { profile?: string };

/** `source` is the writer's own claim, so it is reported as such. */
const WRITERS: Record<Field['source'], string> = {
  owner: 'You (as owner)',
  assistant: 'The assistant',
  service: 'A service',
};

function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value, null, 2) ?? String(value);
}

export function noteText(note: NoteEntry): string {
  return note.content;
}

/** A note named by its first words ("The family walked the dog by the…"). */
export function firstWords(text: string, words = 8): string {
  const all = text.trim().split(/\s+/);
  return all.length <= words ? all.join(' ') : `${all.slice(0, words).join(' ')}\u2026`;
}

export type ValueKind = 'text' | 'number' | 'boolean' | 'null' | 'json';

export function valueKind(value: unknown): ValueKind {
  if (typeof value === 'string') return 'text';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (value === null || value === undefined) return 'null';
  return 'json';
}

/** A value on one line: text as it is, numbers and booleans as literals, JSON compact (pretty in the details). */
export function Value({ value }: { value: unknown }) {
  const kind = valueKind(value);
  const text = kind === 'json' ? JSON.stringify(value) : kind === 'null' ? 'null' : String(value);
  return html`<span class=${`value value-${kind}`} data-value-kind=${kind}>${text}</span>`;
}

/** Whether an entry matches the filter: every word, case aside, in its key, value, description, kind or text. */
export function entryMatches(filter: string, entry: FieldEntry | NoteEntry): boolean {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const haystack = (
    'key' in entry ? [entry.key, valueText(entry.value), entry.description ?? ''] : [noteText(entry), entry.kind]
  )
    .join('\n')
    .toLowerCase();
  return words.every((w) => haystack.includes(w));
}

/**
 * What wrote an entry or a change, in the words the console shows (`asserted_by`): the audience of the
 * token the persona store verified, or an import, which the store verified nothing of. An imported
 * entry's `asserted_by` from the file is a claim, shown apart, never as verified.
 */
export function writtenVia(assertedBy: string): { via: string; verified: boolean; claimed?: string } {
  const claimed = claimedByImport(assertedBy);
  if (claimed !== undefined) return { via: 'an import', verified: false, claimed };
  if (assertedBy === IMPORT_ACTOR) return { via: 'an import', verified: false };
  return { via: assertedBy, verified: true };
}

const VERIFIED = 'the audience of the token that made the write, checked by the persona store';
const IMPORTED = 'an import brought it in from an export file: the persona store checked no token for it';

function Provenance({
  source,
  assertedBy,
  children,
}: {
  source: Field['source'];
  assertedBy: string;
  children?: ComponentChildren;
}) {
  const written = writtenVia(assertedBy);
  const via = written.verified
    ? html`<dt title=${VERIFIED}>Checked</dt>
        <dd>
          ${`written with a token for \u201c${written.via}\u201d, verified by the persona store `}<span class="muted"
            >(the change log says who)</span
          >
        </dd>`
    : html`<dt title=${IMPORTED}>Via</dt>
        <dd>${written.via} <span class="muted">(not verified by this store)</span></dd>`;
  const claimed =
    written.claimed === undefined
      ? null
      : html`<dt>Via, the file says (claimed)</dt>
          <dd>${written.claimed}</dd>`;
  return html`<dl class="provenance">
    <dt>Written by (claimed)</dt>
    <dd>${WRITERS[source]} <span class="muted">(source: ${source})</span></dd>
    ${via} ${claimed} ${children}
  </dl>`;
}

/** The details toggle of a row: a button that opens the row below it. */
function DetailsButton({
  open,
  toggle,
  label,
  controls,
}: {
  open: boolean;
  toggle: () => void;
  label: string;
  controls: string;
}) {
  return html`<button
    type="button"
    class="details-toggle"
    aria-expanded=${open}
    aria-controls=${controls}
    aria-label=${label}
    onClick=${toggle}
  >
    ${open ? '▾' : '▸'}
  </button>`;
}

const rowId = (kind: string, id: string) => `${kind}-details-${id.replace(/[^A-Za-z0-9_-]/g, '_')}`;

/** A row's identity: the same key or note id may recur across personas in Recall's hits. */
const rowKey = (profile: string | undefined, id: string) => (profile === undefined ? id : `${profile}/${id}`);

/** Options shared by both tables. `inPersona`: a first column naming each entry's persona (Recall). */
interface TableOptions<T> {
  inPersona?: boolean;
  /** The person's actions on an entry (pin, forget), when the page offers them. */
  actions?: (entry: T) => unknown;
  /** A class for an entry's row (one forgotten a moment ago stays in place, marked so). */
  rowClass?: (entry: T) => string | undefined;
}

function PersonaCell({ profile }: { profile: string | undefined }) {
  return html`<td class="persona-cell">
    ${profile ? html`<a href=${`#personas/${encodeURIComponent(profile)}`}>${profile}</a>` : '—'}
  </td>`;
}

function Heads({ inPersona, actions, names }: { inPersona: boolean; actions: boolean; names: string[] }) {
  return html`<thead>
    <tr>
      <th class="narrow"><span class="visually-hidden">Details</span></th>
      ${inPersona ? html`<th>Persona</th>` : null} ${names.map((n) => html`<th key=${n}>${n}</th>`)}
      ${actions ? html`<th><span class="visually-hidden">Actions</span></th>` : null}
    </tr>
  </thead>`;
}

const PINNED = html` <span class="pin" title="In the identity block the hub reads first">pinned</span>`;

/** What sets a table of fields apart from one of notes: its columns, and how a row names and shows its entry. */
export interface EntryRows<T> {
  kind: 'field' | 'note';
  names: string[];
  /** The field's key or the note's id. */
  id: (entry: T) => string;
  /** The entry in an action's name: "field theme", "note: Prefers short answers". */
  name: (entry: T) => string;
  /** The details button's name; `where` names the persona in Recall (" in alice"). */
  label: (entry: T, where: string) => string;
  /** The three cells after the persona's, the first with the pinned mark. */
  cells: (entry: T, pinned: unknown) => unknown;
  details: (entry: T, where: string) => unknown;
}

export function EntryTable<T extends FieldEntry | NoteEntry>({
  entries,
  rows,
  inPersona = false,
  actions,
  rowClass,
}: { entries: T[]; rows: EntryRows<T> } & TableOptions<T>) {
  const [open, setOpen] = useState<string | undefined>();
  const span = 3 + (inPersona ? 1 : 0) + (actions ? 1 : 0);
  return html`<table class=${`entries ${rows.kind}s`}>
    <${Heads} inPersona=${inPersona} actions=${actions !== undefined} names=${rows.names} />
    <tbody>
      ${entries.map((entry) => {
        const key = rowKey(inPersona ? (entry.profile ?? '') : undefined, rows.id(entry));
        const id = rowId(rows.kind, key);
        const shown = open === key;
        const where = inPersona && entry.profile ? ` in ${entry.profile}` : '';
        return html`<tr
            key=${key}
            ...${{ [`data-${rows.kind}`]: rows.id(entry) }}
            data-profile=${inPersona ? entry.profile : undefined}
            class=${[entry.pinned ? 'pinned' : '', rowClass?.(entry) ?? ''].join(' ').trim() || undefined}
          >
            <td class="narrow">
              <${DetailsButton}
                open=${shown}
                toggle=${() => setOpen(shown ? undefined : key)}
                label=${rows.label(entry, where)}
                controls=${id}
              />
            </td>
            ${inPersona ? html`<${PersonaCell} profile=${entry.profile} />` : null}
            ${rows.cells(entry, entry.pinned ? PINNED : null)}
            ${actions ? html`<td class="actions">${actions(entry)}</td>` : null}
          </tr>
          ${
            shown
              ? html`<tr key=${`${key}-details`} class="detail-row" id=${id}>
                  <td></td>
                  <td colspan=${span}>${rows.details(entry, where)}</td>
                </tr>`
              : null
          }`;
      })}
    </tbody>
  </table>`;
}

export const FIELD_ROWS: EntryRows<FieldEntry> = {
  kind: 'field',
  names: ['Key', 'Value', 'Updated'],
  id: (f) => f.key,
  name: (f) => `field ${f.key}`,
  label: (f, where) => `Details of field ${f.key}${where}`,
  cells: (f, pinned) =>
    html`<td class="key"><code>${f.key}</code>${pinned}</td>
      <td class="value-cell"><${Value} value=${f.value} /></td>
      <td class="when">${formatTime(f.updated_at)}</td>`,
  details: (f, where) =>
    html`<${Provenance} source=${f.source} assertedBy=${f.asserted_by}>
        <dt>Type</dt>
        <dd>${f.value_type}</dd>
        <dt>Revision</dt>
        <dd>${f.revision}</dd>
        ${
          f.description
            ? html`<dt>What it is for (its writer says)</dt>
                <dd>${f.description}</dd>`
            : null
        }
      <//>
      ${
        valueKind(f.value) === 'json' || (typeof f.value === 'string' && f.value.length > 80)
          ? html`<pre class="value-full" tabindex="0" aria-label=${`Whole value of ${f.key}${where}`}>
${valueText(f.value)}</pre>`
          : null
      }`,
};

export const NOTE_ROWS: EntryRows<NoteEntry> = {
  kind: 'note',
  names: ['Note', 'Kind', 'Written'],
  id: (n) => n.id,
  name: (n) => `note: ${noteText(n).slice(0, 40)}`,
  label: (n) => `Details of ${NOTE_ROWS.name(n)}`,
  cells: (n, pinned) =>
    html`<td class="note-text">${noteText(n)}${pinned}</td>
      <td>${n.kind}</td>
      <td class="when">${formatTime(n.written_at)}</td>`,
  details: (n) =>
    html`<${Provenance} source=${n.source} assertedBy=${n.asserted_by}>
      <dt>Note id</dt>
      <dd><code>${n.id}</code></dd>
    <//>`,
};

export function FieldTable({ fields, ...options }: { fields: FieldEntry[] } & TableOptions<FieldEntry>) {
  return html`<${EntryTable} entries=${fields} rows=${FIELD_ROWS} ...${options} />`;
}

export function NoteTable({ notes, ...options }: { notes: NoteEntry[] } & TableOptions<NoteEntry>) {
  return html`<${EntryTable} entries=${notes} rows=${NOTE_ROWS} ...${options} />`;
}
