/**
 * A persona's fields and notes as dense tables: one line an entry, values shown as what they are
 * (text, a number, true/false, JSON), and the provenance (who wrote it, through which client, which
 * revision, what the field is for) one click away in the entry's details, not repeated on every line.
 * Entries stay data: every value is a text node, and the page says above the tables that they are
 * what their writers reported, never instructions.
 */
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { noteText, valueText, writer, type FieldEntry, type NoteEntry } from './claims.ts';
import { formatTime } from './states.ts';

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
  const haystack = ('key' in entry
    ? [entry.key, valueText(entry.value), entry.description ?? '']
    : [noteText(entry), entry.kind ?? '']
  ).join('\n').toLowerCase();
  return words.every((w) => haystack.includes(w));
}

function Provenance({ source, assertedBy, children }: { source: string | undefined; assertedBy: string | undefined; children?: ComponentChildren }) {
  return html`<dl class="provenance">
    <dt>Written by (claimed)</dt><dd>${writer(source)}${source ? html` <span class="muted">(source: ${source})</span>` : null}</dd>
    <dt title="the audience of the token that made the write, checked by the persona store">Via (verified)</dt><dd>${assertedBy ?? 'an unknown client'}</dd>
    ${children}
  </dl>`;
}

/** The details toggle of a row: a button that opens the row below it. */
function DetailsButton({ open, toggle, label, controls }: { open: boolean; toggle: () => void; label: string; controls: string }) {
  return html`<button type="button" class="details-toggle" aria-expanded=${open} aria-controls=${controls} aria-label=${label} onClick=${toggle}>${open ? '▾' : '▸'}</button>`;
}

const rowId = (kind: string, id: string) => `${kind}-details-${id.replace(/[^A-Za-z0-9_-]/g, '_')}`;

export function FieldTable({ fields, actions }: { fields: FieldEntry[]; actions: (f: FieldEntry) => unknown }) {
  const [open, setOpen] = useState<string | undefined>();
  return html`<table class="entries fields">
    <thead><tr><th class="narrow"><span class="visually-hidden">Details</span></th><th>Key</th><th>Value</th><th>Updated</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>
      ${fields.map((f) => {
        const id = rowId('field', f.key);
        const shown = open === f.key;
        return html`<tr key=${f.key} data-field=${f.key} class=${f.pinned ? 'pinned' : undefined}>
            <td class="narrow"><${DetailsButton} open=${shown} toggle=${() => setOpen(shown ? undefined : f.key)} label=${`Details of field ${f.key}`} controls=${id} /></td>
            <td class="key"><code>${f.key}</code>${f.pinned ? html` <span class="pin" title="In the identity block the hub reads first">pinned</span>` : null}</td>
            <td class="value-cell"><${Value} value=${f.value} /></td>
            <td class="when">${formatTime(f.updated_at)}</td>
            <td class="actions">${actions(f)}</td>
          </tr>
          ${shown
            ? html`<tr key=${`${f.key}-details`} class="detail-row" id=${id}><td></td><td colspan="4">
                <${Provenance} source=${f.source} assertedBy=${f.asserted_by}>
                  <dt>Type</dt><dd>${f.value_type ?? valueKind(f.value)}</dd>
                  <dt>Revision</dt><dd>${f.revision ?? '—'}</dd>
                  ${f.description ? html`<dt>What it is for (its writer says)</dt><dd>${f.description}</dd>` : null}
                <//>
                ${valueKind(f.value) === 'json' || (typeof f.value === 'string' && f.value.length > 80)
                  ? html`<pre class="value-full" tabindex="0" aria-label=${`Whole value of ${f.key}`}>${valueText(f.value)}</pre>`
                  : null}
              </td></tr>`
            : null}`;
      })}
    </tbody>
  </table>`;
}

export function NoteTable({ notes, actions }: { notes: NoteEntry[]; actions: (n: NoteEntry) => unknown }) {
  const [open, setOpen] = useState<string | undefined>();
  return html`<table class="entries notes">
    <thead><tr><th class="narrow"><span class="visually-hidden">Details</span></th><th>Note</th><th>Kind</th><th>Written</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>
      ${notes.map((n, i) => {
        const key = n.id ?? n.note_id ?? String(i);
        const id = rowId('note', key);
        const shown = open === key;
        return html`<tr key=${key} data-note=${key} class=${n.pinned ? 'pinned' : undefined}>
            <td class="narrow"><${DetailsButton} open=${shown} toggle=${() => setOpen(shown ? undefined : key)} label=${`Details of note: ${noteText(n).slice(0, 40)}`} controls=${id} /></td>
            <td class="note-text">${noteText(n)}${n.pinned ? html` <span class="pin" title="In the identity block the hub reads first">pinned</span>` : null}</td>
            <td>${n.kind ?? '—'}</td>
            <td class="when">${formatTime(n.written_at ?? n.created_at)}</td>
            <td class="actions">${actions(n)}</td>
          </tr>
          ${shown
            ? html`<tr key=${`${key}-details`} class="detail-row" id=${id}><td></td><td colspan="4">
                <${Provenance} source=${n.source} assertedBy=${n.asserted_by}>
                  <dt>Note id</dt><dd><code>${key}</code></dd>
                <//>
              </td></tr>`
            : null}`;
      })}
    </tbody>
  </table>`;
}
