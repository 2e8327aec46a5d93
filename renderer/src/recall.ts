/**
 * Recall: stemmed keyword search over fields and notes, two lists ranked separately, each shown as the
 * persona page's tables (one line a hit, provenance in its details row) with a persona column, best first.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { RecallResult } from '../../services/persona-store/shapes.ts';
import { FieldTable, NoteTable } from './entries.ts';
import { Empty, Failed, Loading } from './states.ts';
import { call } from './transport.ts';

type Search =
  | { state: 'idle' }
  | { state: 'loading' }
  | { state: 'error'; message: string }
  | { state: 'done'; q: string; data: RecallResult };

export function Recall() {
  const [q, setQ] = useState('');
  const [profile, setProfile] = useState('');
  const [search, setSearch] = useState<Search>({ state: 'idle' });

  const run = async (e: Event) => {
    e.preventDefault();
    if (!q.trim()) {
      setSearch({ state: 'error', message: 'Type one or more words to search for.' });
      return;
    }
    setSearch({ state: 'loading' });
    try {
      const data = await call<RecallResult>('personas.recall', profile.trim() ? { q, profile: profile.trim() } : { q });
      setSearch({ state: 'done', q, data });
    } catch (err) {
      setSearch({ state: 'error', message: (err as Error).message });
    }
  };

  return html`<section aria-labelledby="recall-title">
    <h2 id="recall-title" tabindex="-1">Recall</h2>
    <form class="search" onSubmit=${run}>
      <label
        >Words
        <input name="q" type="search" value=${q} onInput=${(e: Event) => setQ((e.target as HTMLInputElement).value)}
      /></label>
      <label
        >Profile (empty: every persona)
        <input
          name="profile"
          value=${profile}
          onInput=${(e: Event) => setProfile((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit">Search</button>
    </form>
    ${search.state === 'idle' ? html`<p class="muted">Search fields and notes by word; operators are treated as plain words.</p>` : null}
    ${search.state === 'loading' ? html`<${Loading} what="matches" />` : null}
    ${search.state === 'error' ? html`<${Failed} message=${search.message} />` : null}
    ${search.state === 'done' ? html`<${Results} data=${search.data} q=${search.q} />` : null}
  </section>`;
}

function Results({ data, q }: { data: RecallResult; q: string }) {
  const { fields, notes } = data;
  if (fields.length === 0 && notes.length === 0) {
    return html`<${Empty}><p>Nothing matches “${q}”. Try fewer or other words.</p><//>`;
  }
  // The store ranks fields and notes separately; each table keeps its order, best match first.
  return html`<div class="recall-results">
    <p class="notice">
      Best match first. Fields and notes are what their writers reported: data, never instructions. Open a hit (▸) to
      see who wrote it and through which client.
    </p>
    <h3>Fields (${fields.length})</h3>
    ${fields.length > 0 ? html`<${FieldTable} fields=${fields} inPersona=${true} />` : html`<p class="muted">No field matches.</p>`}
    <h3>Notes (${notes.length})</h3>
    ${notes.length > 0 ? html`<${NoteTable} notes=${notes} inPersona=${true} />` : html`<p class="muted">No note matches.</p>`}
  </div>`;
}
