/** Personas of the local account: the list, and one persona's card, fields, notes and change log. */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { FieldClaim, NoteClaim, type FieldEntry, type NoteEntry } from './claims.ts';
import { Empty, Loaded, formatTime, itemsOf, useCall } from './states.ts';

interface Persona {
  profile: string;
  display_name?: string;
  [member: string]: unknown;
}

interface IdentityBlock {
  persona?: Persona;
  fields?: FieldEntry[];
  notes?: NoteEntry[];
  field_count?: number;
  note_count?: number;
}

export function PersonaList({ open }: { open: (profile: string) => void }) {
  const [load, reload] = useCall<unknown>('personas.list', undefined, 'personas');
  return html`<section aria-labelledby="personas-title">
    <h2 id="personas-title">Personas</h2>
    <${Loaded}
      load=${load}
      what="personas"
      retry=${reload}
      render=${(data: unknown) => {
        const personas = itemsOf<Persona>(data, 'personas');
        if (personas.length === 0) {
          return html`<${Empty}>
            <p>No personas yet.</p>
            <p>Your assistant creates a persona the first time it writes to the persona store; once it has, it appears here.</p>
          <//>`;
        }
        return html`<ul class="persona-list">
          ${personas.map(
            (p) => html`<li key=${p.profile}>
              <button type="button" class="link" onClick=${() => open(p.profile)}>${p.display_name ?? p.profile}</button>
              <span class="muted"> profile ${p.profile}</span>
            </li>`,
          )}
        </ul>`;
      }}
    />
  </section>`;
}

export function PersonaDetail({ profile, back }: { profile: string; back: () => void }) {
  const [card, reloadCard] = useCall<IdentityBlock>('personas.get', { profile }, `card:${profile}`);
  const [fields, reloadFields] = useCall<unknown>('personas.fields', { profile }, `fields:${profile}`);
  const [notes, reloadNotes] = useCall<unknown>('personas.notes', { profile }, `notes:${profile}`);
  return html`<section class="persona" aria-labelledby="persona-title">
    <button type="button" class="link" onClick=${back}>← All personas</button>
    <${Loaded}
      load=${card}
      what="the persona card"
      retry=${reloadCard}
      render=${(block: IdentityBlock) => html`<header class="card">
        <h2 id="persona-title">${block.persona?.display_name ?? profile}</h2>
        <p class="muted">profile ${profile} · ${block.field_count ?? 0} fields · ${block.note_count ?? 0} notes</p>
        <p class="notice">Entries below are what writers reported. They are shown as claims with who made them, not as instructions.</p>
      </header>`}
    />
    <h3>Fields</h3>
    <${Loaded}
      load=${fields}
      what="fields"
      retry=${reloadFields}
      render=${(data: unknown) => {
        const list = itemsOf<FieldEntry>(data, 'fields');
        if (list.length === 0) return html`<${Empty}><p>This persona has no fields yet. The assistant adds them as it learns what to keep.</p><//>`;
        return html`<div class="claims">${list.map((f) => html`<${FieldClaim} key=${f.key} field=${f} />`)}</div>`;
      }}
    />
    <h3>Notes</h3>
    <${Loaded}
      load=${notes}
      what="notes"
      retry=${reloadNotes}
      render=${(data: unknown) => {
        const list = itemsOf<NoteEntry>(data, 'notes');
        if (list.length === 0) return html`<${Empty}><p>This persona has no notes yet.</p><//>`;
        return html`<div class="claims">${list.map((n, i) => html`<${NoteClaim} key=${n.id ?? n.note_id ?? i} note=${n} />`)}</div>`;
      }}
    />
    <${ChangeLog} profile=${profile} />
  </section>`;
}

interface ChangeEvent {
  [member: string]: unknown;
}

const PAGE_SIZE = 20;

/** The change log with filters and paging; entries carry no values or bodies. */
export function ChangeLog({ profile }: { profile: string }) {
  const [draft, setDraft] = useState({ target: '', action: '' });
  const [filters, setFilters] = useState<Record<string, string>>({});
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors[cursors.length - 1];
  const params = { profile, filters, limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) };
  const [events, reload] = useCall<unknown>('personas.events', params, `events:${profile}:${JSON.stringify(filters)}:${cursor ?? ''}`);

  const apply = (e: Event) => {
    e.preventDefault();
    const next: Record<string, string> = {};
    if (draft.target) next.target = draft.target;
    if (draft.action) next.action = draft.action;
    setFilters(next);
    setCursors([]);
  };

  return html`<section class="changelog" aria-labelledby="changelog-title">
    <h3 id="changelog-title">Change log</h3>
    <form class="filters" onSubmit=${apply}>
      <label>What changed
        <select name="target" value=${draft.target} onChange=${(e: Event) => setDraft({ ...draft, target: (e.target as HTMLSelectElement).value })}>
          <option value="">everything</option>
          <option value="field">fields</option>
          <option value="note">notes</option>
          <option value="persona">the card</option>
        </select>
      </label>
      <label>Change
        <select name="action" value=${draft.action} onChange=${(e: Event) => setDraft({ ...draft, action: (e.target as HTMLSelectElement).value })}>
          <option value="">any</option>
          <option value="set">set</option>
          <option value="revise">revised</option>
          <option value="forget">forgotten</option>
        </select>
      </label>
      <button type="submit">Filter</button>
    </form>
    <${Loaded}
      load=${events}
      what="the change log"
      retry=${reload}
      render=${(data: unknown) => {
        const list = itemsOf<ChangeEvent>(data, 'events');
        const next = nextCursor(data);
        return html`${list.length === 0
            ? html`<${Empty}><p>${Object.keys(filters).length ? 'No changes match these filters; choose "everything" and "any" to see all.' : 'No changes recorded yet.'}</p><//>`
            : html`<table class="events">
                <thead><tr><th>When</th><th>Change</th><th>What</th><th>By</th><th>Source (claimed)</th></tr></thead>
                <tbody>
                  ${list.map(
                    (ev, i) => html`<tr key=${String(ev.id ?? i)}>
                      <td>${formatTime(ev.at ?? ev.time ?? ev.created_at ?? ev.occurred_at)}</td>
                      <td>${String(ev.action ?? ev.type ?? ev.change ?? '—')}</td>
                      <td>${describeTarget(ev)}</td>
                      <td>${String(ev.asserted_by ?? ev.actor ?? '—')}</td>
                      <td>${String(ev.source ?? '—')}</td>
                    </tr>`,
                  )}
                </tbody>
              </table>`}
          <nav class="paging" aria-label="Change log pages">
            <button type="button" disabled=${cursors.length === 0} onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
            <span class="muted">page ${cursors.length + 1}</span>
            <button type="button" disabled=${!next} onClick=${() => next && setCursors([...cursors, next])}>Older</button>
          </nav>`;
      }}
    />
  </section>`;
}

function describeTarget(ev: ChangeEvent): string {
  const kind = String(ev.target ?? ev.entity ?? ev.kind ?? '');
  const name = ev.key ?? ev.field_key ?? ev.note_id ?? ev.target_id ?? '';
  return [kind, String(name)].filter(Boolean).join(' ') || '—';
}

function nextCursor(data: unknown): string | undefined {
  const d = data as Record<string, unknown> | null;
  const next = d?.next_cursor ?? d?.next ?? (d?.page as Record<string, unknown> | undefined)?.next_cursor;
  return typeof next === 'string' && next ? next : undefined;
}
