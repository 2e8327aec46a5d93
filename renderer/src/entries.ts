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

function Provenance({
  source,
  assertedBy,
  children,
}: {
  source: Field['source'];
  assertedBy: string;
  children?: ComponentChildren;
}) {
  return html`<dl class="provenance">
    <dt>Written by (claimed)</dt>
    <dd>${WRITERS[source]} <span class="muted">(source: ${source})</span></dd>
    <dt title="the audience of the token that made the write, checked by the persona store">Via (verified)</dt>
    <dd>${assertedBy}</dd>
    ${children}
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

export function FieldTable({
  fields,
  inPersona = false,
  actions,
}: { fields: FieldEntry[] } & TableOptions<FieldEntry>) {
  const [open, setOpen] = useState<string | undefined>();
  const span = 3 + (inPersona ? 1 : 0) + (actions ? 1 : 0);
  return html`<table class="entries fields">
    <${Heads} inPersona=${inPersona} actions=${actions !== undefined} names=${['Key', 'Value', 'Updated']} />
    <tbody>
      ${fields.map((f) => {
        const key = rowKey(inPersona ? (f.profile ?? '') : undefined, f.key);
        const id = rowId('field', key);
        const shown = open === key;
        const where = inPersona && f.profile ? ` in ${f.profile}` : '';
        return html`<tr
            key=${key}
            data-field=${f.key}
            data-profile=${inPersona ? f.profile : undefined}
            class=${f.pinned ? 'pinned' : undefined}
          >
            <td class="narrow">
              <${DetailsButton}
                open=${shown}
                toggle=${() => setOpen(shown ? undefined : key)}
                label=${`Details of field ${f.key}${where}`}
                controls=${id}
              />
            </td>
            ${inPersona ? html`<${PersonaCell} profile=${f.profile} />` : null}
            <td class="key">
              <code>${f.key}</code
              >${f.pinned ? html` <span class="pin" title="In the identity block the hub reads first">pinned</span>` : null}
            </td>
            <td class="value-cell"><${Value} value=${f.value} /></td>
            <td class="when">${formatTime(f.updated_at)}</td>
            ${actions ? html`<td class="actions">${actions(f)}</td>` : null}
          </tr>
          ${
            shown
              ? html`<tr key=${`${key}-details`} class="detail-row" id=${id}>
                  <td></td>
                  <td colspan=${span}>
                    <${Provenance} source=${f.source} assertedBy=${f.asserted_by}>
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
                    }
                  </td>
                </tr>`
              : null
          }`;
      })}
    </tbody>
  </table>`;
}

export function NoteTable({ notes, inPersona = false, actions }: { notes: NoteEntry[] } & TableOptions<NoteEntry>) {
  const [open, setOpen] = useState<string | undefined>();
  const span = 3 + (inPersona ? 1 : 0) + (actions ? 1 : 0);
  return html`<table class="entries notes">
    <${Heads} inPersona=${inPersona} actions=${actions !== undefined} names=${['Note', 'Kind', 'Written']} />
    <tbody>
      ${notes.map((n) => {
        const noteId = n.id;
        const key = rowKey(inPersona ? (n.profile ?? '') : undefined, noteId);
        const id = rowId('note', key);
        const shown = open === key;
        return html`<tr
            key=${key}
            data-note=${noteId}
            data-profile=${inPersona ? n.profile : undefined}
            class=${n.pinned ? 'pinned' : undefined}
          >
            <td class="narrow">
              <${DetailsButton}
                open=${shown}
                toggle=${() => setOpen(shown ? undefined : key)}
                label=${`Details of note: ${noteText(n).slice(0, 40)}`}
                controls=${id}
              />
            </td>
            ${inPersona ? html`<${PersonaCell} profile=${n.profile} />` : null}
            <td class="note-text">
              ${noteText(n)}${n.pinned ? html` <span class="pin" title="In the identity block the hub reads first">pinned</span>` : null}
            </td>
            <td>${n.kind}</td>
            <td class="when">${formatTime(n.written_at)}</td>
            ${actions ? html`<td class="actions">${actions(n)}</td>` : null}
          </tr>
          ${
            shown
              ? html`<tr key=${`${key}-details`} class="detail-row" id=${id}>
                  <td></td>
                  <td colspan=${span}>
                    <${Provenance} source=${n.source} assertedBy=${n.asserted_by}>
                      <dt>Note id</dt>
                      <dd><code>${noteId}</code></dd>
                    <//>
                  </td>
                </tr>`
              : null
          }`;
      })}
    </tbody>
  </table>`;
}
