/** Personas of the local account: the list, and one persona's card, fields, notes and change log. */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
// The change log's list of actions (pinned to the persona store's own by a test), so the filter offers exactly what it records.
import { CHANGE_ACTIONS as ACTIONS } from '../../main/common/change-log.ts';
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
  return html`<section aria-labelledby="personas-title">
    <h2 id="personas-title">Personas</h2>
    <${Paged}
      method="personas.list"
      params=${{}}
      what="personas"
      member="personas"
      listClass="persona-list"
      empty="No personas yet. The hub creates one the first time your assistant writes to the persona store for a profile, and it appears here then. If the hub is already in use, check that it points at this persona store (its port is in the Services panel)."
      render=${(p: Persona) => html`<li key=${p.profile}>
        <button type="button" class="link" onClick=${() => open(p.profile)}>${p.display_name ?? p.profile}</button>
        <span class="muted"> profile ${p.profile}</span>
      </li>`}
    />
  </section>`;
}

/** Fields and notes a page: each is a full claim block, so fewer than the store's largest page. */
const ENTRY_PAGE_SIZE = 25;

export function PersonaDetail({ profile, back }: { profile: string; back: () => void }) {
  const [card, reloadCard] = useCall<IdentityBlock>('personas.get', { profile }, `card:${profile}`);
  return html`<section class="persona" aria-labelledby="persona-title">
    <button type="button" class="link" onClick=${back}>← All personas</button>
    <${Loaded}
      load=${card}
      what="the persona card"
      retry=${reloadCard}
      render=${(block: IdentityBlock) => html`<header class="card">
        <h2 id="persona-title">${block.persona?.display_name ?? profile}</h2>
        <p class="muted">profile ${profile} · ${block.field_count ?? 0} fields · ${block.note_count ?? 0} notes</p>
        <${CardMembers} persona=${block.persona} />
        <p class="notice">Entries below are what their writers reported. They are shown as claims, with who made them, never as instructions.</p>
      </header>`}
    />
    <h3>Fields</h3>
    <${Paged}
      method="personas.fields"
      params=${{ profile, limit: ENTRY_PAGE_SIZE }}
      what="fields"
      member="fields"
      empty="This persona has no fields yet. The assistant adds one when it learns something worth keeping about this profile."
      render=${(f: FieldEntry) => html`<${FieldClaim} key=${f.key} field=${f} />`}
    />
    <h3>Notes</h3>
    <${Paged}
      method="personas.notes"
      params=${{ profile, limit: ENTRY_PAGE_SIZE }}
      what="notes"
      member="notes"
      empty="This persona has no notes yet. The assistant adds a note when something happens or it learns a lesson worth keeping."
      render=${(n: NoteEntry) => html`<${NoteClaim} key=${n.id} note=${n} />`}
    />
    <${ChangeLog} profile=${profile} />
  </section>`;
}

const CARD_MEMBERS: [string, string][] = [
  ['pronouns', 'Pronouns'],
  ['language', 'Language'],
  ['tone', 'Tone'],
  ['verbosity', 'Verbosity'],
  ['speaking_style', 'Speaking style'],
];

function CardMembers({ persona }: { persona: Persona | undefined }) {
  const present = CARD_MEMBERS.filter(([m]) => typeof persona?.[m] === 'string' && persona[m]);
  if (!persona || present.length === 0) return null;
  return html`<dl class="card-members">
    ${present.map(([m, label]) => html`<dt key=${`t-${m}`}>${label}</dt><dd key=${`d-${m}`}>${String(persona[m])}</dd>`)}
  </dl>`;
}

/**
 * Pages pile up behind a stack of cursors: "Next" pushes the answer's next_after, "Previous" pops. A cursor
 * is opaque: it goes back to the console exactly as the persona store sent it.
 */
function usePages(): { after: unknown; page: number; next: (cursor: unknown) => void; previous: () => void; reset: () => void } {
  const [cursors, setCursors] = useState<unknown[]>([]);
  return {
    after: cursors[cursors.length - 1],
    page: cursors.length + 1,
    next: (cursor) => setCursors([...cursors, cursor]),
    previous: () => setCursors(cursors.slice(0, -1)),
    reset: () => setCursors([]),
  };
}

function Pager({ page, hasNext, next, previous, label }: { page: number; hasNext: boolean; next: () => void; previous: () => void; label: string }) {
  if (page === 1 && !hasNext) return null;
  return html`<nav class="paging" aria-label=${label}>
    <button type="button" disabled=${page === 1} onClick=${previous}>Previous</button>
    <span class="muted">page ${page}</span>
    <button type="button" disabled=${!hasNext} onClick=${next}>Next</button>
  </nav>`;
}

function nextAfter(data: unknown): unknown {
  const next = (data as { next_after?: unknown } | null)?.next_after;
  return next === null || next === undefined || next === '' ? undefined : next;
}

function Paged<T>(props: {
  method: string;
  params: Record<string, unknown>;
  what: string;
  member: string;
  empty: string;
  render: (item: T) => unknown;
  /** A list class renders the items in a <ul>; without one they are claims. */
  listClass?: string;
}) {
  const pages = usePages();
  const params = pages.after === undefined ? props.params : { ...props.params, after: pages.after };
  const [load, reload] = useCall<unknown>(props.method, params, `${props.method}:${JSON.stringify(params)}`);
  return html`<${Loaded}
    load=${load}
    what=${props.what}
    retry=${reload}
    render=${(data: unknown) => {
      const list = itemsOf<T>(data, props.member);
      const next = nextAfter(data);
      if (list.length === 0 && pages.page === 1) return html`<${Empty}><p>${props.empty}</p><//>`;
      return html`${props.listClass ? html`<ul class=${props.listClass}>${list.map(props.render)}</ul>` : html`<div class="claims">${list.map(props.render)}</div>`}
        <${Pager} page=${pages.page} hasNext=${next !== undefined} next=${() => pages.next(next)} previous=${pages.previous} label=${`Pages of ${props.what}`} />`;
    }}
  />`;
}

interface ChangeEvent {
  id: number;
  at: string;
  action: string;
  target_kind: string;
  target: string;
  asserted_by: string;
  source: string | null;
  changes?: string[];
}


const PAGE_SIZE = 10;

interface LogFilters {
  target_kind?: string;
  action?: string;
  target?: string;
  since?: string;
}

/** The change log, oldest first, with filters and paging; entries name what changed, never values. */
export function ChangeLog({ profile }: { profile: string }) {
  const [draft, setDraft] = useState<LogFilters>({});
  const [filters, setFilters] = useState<LogFilters>({});
  const pages = usePages();
  const params = { profile, limit: PAGE_SIZE, ...filters, ...(pages.after === undefined ? {} : { after: pages.after }) };
  const [events, reload] = useCall<unknown>('personas.events', params, `events:${JSON.stringify(params)}`);
  const set = (member: keyof LogFilters) => (e: Event) => setDraft({ ...draft, [member]: (e.target as HTMLInputElement).value });

  const apply = (e: Event) => {
    e.preventDefault();
    const next: LogFilters = {};
    if (draft.target_kind) next.target_kind = draft.target_kind;
    if (draft.action) next.action = draft.action;
    if (draft.target?.trim()) next.target = draft.target.trim();
    if (draft.since) next.since = new Date(draft.since).toISOString();
    setFilters(next);
    pages.reset();
  };
  const filtered = Object.keys(filters).length > 0;

  return html`<section class="changelog" aria-labelledby="changelog-title">
    <h3 id="changelog-title">Change log</h3>
    <form class="filters" onSubmit=${apply}>
      <label>About
        <select name="target_kind" value=${draft.target_kind ?? ''} onChange=${set('target_kind')}>
          <option value="">everything</option>
          <option value="field">fields</option>
          <option value="note">notes</option>
          <option value="persona">the card</option>
        </select>
      </label>
      <label>Change
        <select name="action" value=${draft.action ?? ''} onChange=${set('action')}>
          <option value="">any</option>
          ${ACTIONS.map((a) => html`<option key=${a} value=${a}>${a.replace('_', ' ')}</option>`)}
        </select>
      </label>
      <label>Key or note id <input name="target" value=${draft.target ?? ''} onInput=${set('target')} /></label>
      <label>Since <input name="since" type="datetime-local" value=${draft.since ?? ''} onInput=${set('since')} /></label>
      <button type="submit">Filter</button>
    </form>
    <${Loaded}
      load=${events}
      what="the change log"
      retry=${reload}
      render=${(data: unknown) => {
        const list = itemsOf<ChangeEvent>(data, 'events');
        const next = nextAfter(data);
        if (list.length === 0 && pages.page === 1) {
          return html`<${Empty}><p>${filtered ? 'No changes match these filters. Choose "everything" and "any" and clear the other boxes to see all.' : 'No changes recorded yet. Every change to this persona\u2019s card, fields and notes is logged here, with who made it.'}</p><//>`;
        }
        return html`<table class="events">
            <thead><tr><th>When</th><th>Change</th><th>About</th><th>Members changed</th><th>Via (verified)</th><th>Source (claimed)</th></tr></thead>
            <tbody>
              ${list.map(
                (ev) => html`<tr key=${ev.id}>
                  <td>${formatTime(ev.at)}</td>
                  <td>${ev.action.replace('_', ' ')}</td>
                  <td>${ev.target_kind} <code>${ev.target}</code></td>
                  <td>${(ev.changes ?? []).join(', ') || '—'}</td>
                  <td>${ev.asserted_by}</td>
                  <td>${ev.source ?? '—'}</td>
                </tr>`,
              )}
            </tbody>
          </table>
          <${Pager} page=${pages.page} hasNext=${next !== undefined} next=${() => pages.next(next)} previous=${pages.previous} label="Change log pages" />`;
      }}
    />
  </section>`;
}
