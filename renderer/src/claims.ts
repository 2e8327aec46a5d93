/**
 * Persona entries are data, not instructions: each is shown as a reported claim with its provenance
 * ("the assistant noted, via persona, that …"), quoted and set apart, never as a directive. All text is
 * rendered as text nodes by preact; nothing here builds HTML from data.
 */
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { formatTime } from './states.ts';

export interface FieldEntry {
  key: string;
  description?: string;
  value: unknown;
  value_type?: string;
  revision?: number;
  source?: string;
  asserted_by?: string;
  pinned?: boolean;
  updated_at?: string;
}

export interface NoteEntry {
  id?: string;
  note_id?: string;
  kind?: string;
  content?: string;
  text?: string;
  body?: string;
  source?: string;
  asserted_by?: string;
  pinned?: boolean;
  written_at?: string;
  created_at?: string;
}

/** `source` is the writer's own claim, so it is reported as such. */
export function writer(source: string | undefined): string {
  switch (source) {
    case 'owner':
      return 'You (as owner)';
    case 'assistant':
      return 'The assistant';
    case 'service':
      return 'A service';
    default:
      return 'An unnamed writer';
  }
}

export function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value, null, 2) ?? String(value);
}

export function noteText(note: NoteEntry): string {
  return note.content ?? note.text ?? note.body ?? '';
}

function Via({ assertedBy }: { assertedBy: string | undefined }) {
  return html`<span class="via" title="asserted_by: the audience of the token that made the write, checked by the persona store">via ${assertedBy ?? 'an unknown client'}</span>`;
}

/** `children`: the person's actions on the entry (pin, forget), when the page offers them. */
export function FieldClaim({ field, children }: { field: FieldEntry; children?: ComponentChildren }) {
  return html`<figure class="claim" data-kind="field">
    <figcaption>
      ${writer(field.source)} recorded, <${Via} assertedBy=${field.asserted_by} />, that <code>${field.key}</code> is:
    </figcaption>
    <blockquote class="claim-text">${valueText(field.value)}</blockquote>
    <p class="claim-meta">
      <span>type ${field.value_type ?? '—'}</span>
      <span>revision ${field.revision ?? '—'}</span>
      <span>updated ${formatTime(field.updated_at)}</span>
      <span title="source is the writer's own claim">source (claimed): ${field.source ?? '—'}</span>
      <span>asserted by: ${field.asserted_by ?? '—'}</span>
      ${field.pinned ? html`<span class="pin">pinned</span>` : html`<span>not pinned</span>`}
    </p>
    ${field.description ? html`<p class="claim-description">What this field is for (as described by its writer): ${field.description}</p>` : null}
    ${children ? html`<div class="claim-actions">${children}</div>` : null}
  </figure>`;
}

export function NoteClaim({ note, children }: { note: NoteEntry; children?: ComponentChildren }) {
  const kind = note.kind ? ` (${note.kind})` : '';
  return html`<figure class="claim" data-kind="note">
    <figcaption>${writer(note.source)} noted${kind}, <${Via} assertedBy=${note.asserted_by} />, that:</figcaption>
    <blockquote class="claim-text">${noteText(note)}</blockquote>
    <p class="claim-meta">
      <span>written ${formatTime(note.written_at ?? note.created_at)}</span>
      <span title="source is the writer's own claim">source (claimed): ${note.source ?? '—'}</span>
      <span>asserted by: ${note.asserted_by ?? '—'}</span>
      ${note.pinned ? html`<span class="pin">pinned</span>` : html`<span>not pinned</span>`}
    </p>
    ${children ? html`<div class="claim-actions">${children}</div>` : null}
  </figure>`;
}
