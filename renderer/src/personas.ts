/** Personas of the local account: the list, and one persona's card, fields, notes and change log. */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
// The change log's list of actions (pinned to the persona store's own by a test), so the filter offers exactly what it records.
import { CHANGE_ACTIONS as ACTIONS, ACTION_WORDS, VIA_WORDS } from '../../common/change-log.ts';
import type { ForgetPolicy } from '../../common/contract.ts';
import type { ChangeLogEntryView, PersonaView, WholeExport } from '../../main/console/answers.ts';
import type { Card, ForgetResult } from '../../services/persona-store/shapes.ts';
import { Dialog } from './dialog.ts';
import {
  EntryTable,
  FIELD_ROWS,
  NOTE_ROWS,
  entryMatches,
  firstWords,
  noteText,
  writtenVia,
  type EntryRows,
  type FieldEntry,
  type NoteEntry,
} from './entries.ts';
import { ActionAnswer, useOutcome, type Outcome } from './outcome.ts';
import { Empty, Failed, Loaded, formatTime, itemsOf, useCall, type Load } from './states.ts';
import { ColumnHeads } from './table.ts';
import { call } from './transport.ts';
import { plural } from './words.ts';

export function PersonaList({ open }: { open: (profile: string) => void }) {
  return html`<section aria-labelledby="personas-title">
    <h2 id="personas-title" tabindex="-1">Personas</h2>
    <${Paged}
      method="personas.list"
      params=${{}}
      what="personas"
      member="personas"
      empty="No personas yet. The hub creates one the first time your assistant writes to the persona store for a profile, and it appears here then. If the hub is already in use, check that it points at this persona store (its port is in the Services panel)."
      renderList=${(list: Card[]) =>
        html`<table class="personas">
          <${ColumnHeads} names=${['Name', 'Profile', 'Language', 'Tone']} />
          <tbody>
            ${list.map(
              (p) =>
                html`<tr key=${p.profile}>
                  <td>
                    <button type="button" class="link" onClick=${() => open(p.profile)}>${p.display_name}</button>
                  </td>
                  <td><code>${p.profile}</code></td>
                  <td>${p.language ?? '—'}</td>
                  <td>${p.tone ?? '—'}</td>
                </tr>`,
            )}
          </tbody>
        </table>`}
    />
  </section>`;
}

/** Fields and notes a page: one line each, so a screenful and more (the store's page is at most 100). */
const ENTRY_PAGE_SIZE = 50;

/** "3 of 50 fields on this page match." */
function matchWords(matched: number, of: number, one: string): string {
  return `${matched} of ${plural(of, one)} on this page ${matched === 1 ? 'matches' : 'match'}.`;
}

type Asking =
  | { kind: 'forget-field'; key: string; revision: number }
  | { kind: 'forget-note'; id: string; preview: string; revision: number }
  | { kind: 'delete' }
  | { kind: 'edit'; persona: Card; etag?: string }
  | undefined;

const FORGOTTEN: Record<ForgetResult['outcome'], string> = {
  kept: 'kept: it is out of every answer, recall and export, and stays in the database file',
  pending: 'pending destruction: it is out of every answer now and is destroyed when the grace period ends',
  destroyed: 'destroyed: erased from the database file, its search index and the change log\u2019s replaced values',
};

/** An entry's name on the page: `field:<key>` or `note:<id>`. */
const entryId = (kind: 'field' | 'note', target: string) => `${kind}:${target}`;

/** Moves to a part of the page and puts the focus there (the address's hash is the app's location, not an anchor). */
function jumpTo(id: string): void {
  const target = document.getElementById(id);
  target?.scrollIntoView({ block: 'start' });
  target?.focus();
}

export function PersonaDetail({ profile, back }: { profile: string; back: (notice?: string) => void }) {
  // Two versions: the card, the forgotten list and the change log follow every action at once; the lists of
  // entries are read again only where that moves no row (a pin, or an entry that changed under the person).
  const [version, setVersion] = useState(0);
  const [listVersion, setListVersion] = useState(0);
  const { outcome, setOutcome, attempt } = useOutcome();
  const [asking, setAsking] = useState<Asking>();
  const [filter, setFilter] = useState('');
  // What each entry's last action did, shown in its row; entries forgotten here stay in place, marked so.
  const [rowSaid, setRowSaid] = useState<Record<string, Outcome>>({});
  const [forgottenHere, setForgottenHere] = useState<Record<string, true>>({});
  const card = useCall<PersonaView>('personas.get', { profile }, `card:${profile}`, undefined, version);
  const { load: policy } = useCall<ForgetPolicy>('personas.forgetPolicy', { profile }, `policy:${profile}:${version}`);

  /** An action on one entry: its answer in the entry's row; an entry that changed under the person is read again. */
  const actOnEntry = async <T>(
    id: string,
    method: string,
    params: unknown,
    said: (data: T) => string,
    after?: (data: T) => void,
  ) => {
    setAsking(undefined);
    try {
      const data = await call<T>(method, params);
      setRowSaid((r) => ({ ...r, [id]: { kind: 'ok', text: said(data) } }));
      after?.(data);
    } catch (err) {
      setRowSaid((r) => ({ ...r, [id]: { kind: 'error', text: (err as Error).message } }));
      if ((err as { status?: number }).status === 412) setListVersion((v) => v + 1);
    }
    setVersion((v) => v + 1);
  };
  const exportNow = () =>
    attempt(async () => {
      const doc = await call<WholeExport>('personas.export', { profile });
      const file = `${profile}-persona-export.json`;
      const url = URL.createObjectURL(new Blob([JSON.stringify(doc, null, 2)], { type: 'application/json' }));
      const a = document.createElement('a');
      a.href = url;
      a.download = file;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 0);
      return `Exported ${plural(doc.fields.length, 'field')} and ${plural(doc.notes.length, 'note')} as ${file} (format ${doc.format}).`;
    });
  const askForget = (entry: FieldEntry | NoteEntry) =>
    setAsking(
      'key' in entry
        ? { kind: 'forget-field', key: entry.key, revision: entry.revision }
        : { kind: 'forget-note', id: entry.id, preview: noteText(entry).slice(0, 80), revision: entry.revision },
    );
  const pin = (kind: 'field' | 'note', target: string, pinned: boolean, revision: number) =>
    actOnEntry(
      entryId(kind, target),
      kind === 'field' ? 'personas.pinField' : 'personas.pinNote',
      kind === 'field' ? { profile, key: target, pinned, revision } : { profile, id: target, pinned, revision },
      () =>
        `${pinned ? 'Pinned' : 'Unpinned'}: ${pinned ? 'now' : 'no longer'} in the identity block the hub reads first.`,
      () => setListVersion((v) => v + 1),
    );
  const forget = (kind: 'field' | 'note', target: string, revision: number) =>
    actOnEntry<ForgetResult>(
      entryId(kind, target),
      kind === 'field' ? 'personas.forgetField' : 'personas.forgetNote',
      kind === 'field' ? { profile, key: target, revision } : { profile, id: target, revision },
      (d) => `Forgot it: ${FORGOTTEN[d.outcome]}.`,
      () => setForgottenHere((f) => ({ ...f, [entryId(kind, target)]: true })),
    );

  return html`<section class="persona" aria-labelledby="persona-title">
    <button type="button" class="link" onClick=${() => back()}>← All personas</button>
    <${Loaded}
      call=${card}
      what="the persona card"
      render=${(block: PersonaView) =>
        html`<header class="card">
          <h2 id="persona-title" tabindex="-1">${block.persona.display_name}</h2>
          <p class="muted">
            profile ${profile} · ${plural(block.field_count, 'field')} · ${plural(block.note_count, 'note')}
          </p>
          <${CardMembers} persona=${block.persona} />
          <div class="toolbar persona-actions">
            <button type="button" onClick=${exportNow}>Export (JSON)</button>
            <button
              type="button"
              onClick=${() => setAsking({ kind: 'edit', persona: block.persona, etag: block.etag })}
            >
              Edit the card
            </button>
            <button type="button" class="danger" onClick=${() => setAsking({ kind: 'delete' })}>Delete persona…</button>
          </div>
          <nav class="on-this-page" aria-label="On this persona’s page">
            <button type="button" class="link" onClick=${() => jumpTo('fields-title')}>Fields</button>
            <button type="button" class="link" onClick=${() => jumpTo('notes-title')}>Notes</button>
            <button type="button" class="link" onClick=${() => jumpTo('forgotten-title')}>Forgotten entries</button>
            <button type="button" class="link" onClick=${() => jumpTo('changelog-title')}>Change log</button>
          </nav>
          <p class="notice">
            Fields and notes are what their writers reported: data, never instructions. Open an entry (▸) to see who
            wrote it and through which client.
          </p>
          <${ActionAnswer} said=${outcome} />
        </header>`}
    />
    <form class="filters entry-filter" role="search" onSubmit=${(e: Event) => e.preventDefault()}>
      <label
        >Filter fields and notes
        <input
          type="search"
          name="entry-filter"
          value=${filter}
          onInput=${(e: Event) => setFilter((e.target as HTMLInputElement).value)}
          placeholder="key, value, words of a note"
      /></label>
    </form>
    ${ENTRY_LISTS.map(
      ({ rows, title, empty }) =>
        html`<h3 key=${`${rows.kind}-title`} id=${`${rows.kind}s-title`} tabindex="-1">${title}</h3>
          <${EntryList}
            key=${rows.kind}
            rows=${rows}
            empty=${empty}
            profile=${profile}
            version=${listVersion}
            filter=${filter}
            pin=${pin}
            forget=${askForget}
            said=${rowSaid}
            forgotten=${forgottenHere}
          />`,
    )}
    <${Forgotten} profile=${profile} version=${version} changed=${() => setVersion((v) => v + 1)} />
    <${ChangeLog} profile=${profile} version=${version} />
    ${
      asking?.kind === 'forget-field' || asking?.kind === 'forget-note'
        ? html`<${ForgetDialog}
            what=${asking.kind === 'forget-field' ? html`the field <code>${asking.key}</code>` : html`the note “${asking.preview}”`}
            kind=${asking.kind === 'forget-field' ? 'field' : 'note'}
            policy=${policy}
            cancel=${() => setAsking(undefined)}
            confirm=${() =>
              asking.kind === 'forget-field'
                ? forget('field', asking.key, asking.revision)
                : forget('note', asking.id, asking.revision)}
          />`
        : null
    }
    ${
      asking?.kind === 'delete'
        ? html`<${DeleteDialog}
            profile=${profile}
            cancel=${() => setAsking(undefined)}
            confirm=${async (typed: string) => {
              try {
                await call('personas.delete', { profile, confirm: typed });
                back(
                  `Deleted the persona “${profile}” with all its fields and notes; its change log keeps one entry saying so.`,
                );
              } catch (err) {
                setAsking(undefined);
                setOutcome({ kind: 'error', text: (err as Error).message });
              }
            }}
          />`
        : null
    }
    ${
      asking?.kind === 'edit'
        ? html`<${EditCard}
            persona=${asking.persona}
            cancel=${() => setAsking(undefined)}
            save=${async (changes: Record<string, string>) => {
              // A refusal stays in the dialog with what was typed, so the person corrects it there; a card that
              // changed meanwhile is said there too, and the page shows it as it is now.
              try {
                await call('personas.update', {
                  profile,
                  card: changes,
                  ...(asking.etag ? { etag: asking.etag } : {}),
                });
              } catch (err) {
                if ((err as { status?: number }).status === 412) setVersion((v) => v + 1);
                throw err;
              }
              setAsking(undefined);
              setOutcome({ kind: 'ok', text: `Saved the card: ${Object.keys(changes).join(', ')} changed.` });
              setVersion((v) => v + 1);
            }}
          />`
        : null
    }
  </section>`;
}

/** The two lists of a persona's page, each with its heading and what it says while empty. */
const ENTRY_LISTS = [
  {
    rows: FIELD_ROWS,
    title: 'Fields',
    empty:
      'This persona has no fields yet. The assistant adds one when it learns something worth keeping about this profile.',
  },
  {
    rows: NOTE_ROWS,
    title: 'Notes',
    empty:
      'This persona has no notes yet. The assistant adds a note when something happens or it learns a lesson worth keeping.',
  },
];

/** A persona's fields or notes: a page of them, the filter's matches, Pin and Forget on each line, each line's answer in it. */
function EntryList<T extends FieldEntry | NoteEntry>(props: {
  rows: EntryRows<T>;
  profile: string;
  version: number;
  filter: string;
  empty: string;
  pin: (kind: 'field' | 'note', target: string, pinned: boolean, revision: number) => void;
  forget: (entry: T) => void;
  said: Record<string, Outcome>;
  forgotten: Record<string, true>;
}) {
  const { rows, filter } = props;
  return html`<${Paged}
    method=${`personas.${rows.kind}s`}
    params=${{ profile: props.profile, limit: ENTRY_PAGE_SIZE }}
    version=${props.version}
    what=${`${rows.kind}s`}
    member=${`${rows.kind}s`}
    empty=${props.empty}
    renderList=${(all: T[]) => {
      // An entry forgotten on this page stays where it was, marked, until the page is read anew.
      const list = all.filter((e) => entryMatches(filter, e));
      return html`${filter.trim() ? html`<p class="muted filter-count" role="status">${matchWords(list.length, all.length, rows.kind)}</p>` : null}
      ${
        list.length > 0
          ? html`<${EntryTable}
              entries=${list}
              rows=${rows}
              rowClass=${(e: T) => (props.forgotten[entryId(rows.kind, rows.id(e))] ? 'forgotten' : undefined)}
              actions=${(e: T) => {
                const id = entryId(rows.kind, rows.id(e));
                return html`${
                    props.forgotten[id]
                      ? null
                      : html`<button
                            type="button"
                            onClick=${() => props.pin(rows.kind, rows.id(e), !e.pinned, e.revision)}
                            aria-label=${`${e.pinned ? 'Unpin' : 'Pin'} ${rows.name(e)}`}
                          >
                            ${e.pinned ? 'Unpin' : 'Pin'}
                          </button>
                          <button type="button" onClick=${() => props.forget(e)} aria-label=${`Forget ${rows.name(e)}`}>
                            Forget…
                          </button>`
                  }<${ActionAnswer} said=${props.said[id]} />`;
              }}
            />`
          : null
      }`;
    }}
  />`;
}

/** Entries forgotten but not destroyed (kept, or waiting for their grace period), each with "Destroy now". */
function Forgotten({ profile, version, changed }: { profile: string; version: number; changed: () => void }) {
  const [asking, setAsking] = useState<{ kind: 'field' | 'note'; target: string; name: string } | undefined>();
  const [said, setSaid] = useState<Record<string, Outcome>>({});
  const [gone, setGone] = useState<Record<string, true>>({});
  const destroy = async () => {
    if (!asking) return;
    const { kind, target } = asking;
    const id = entryId(kind, target);
    setAsking(undefined);
    try {
      await call(kind === 'field' ? 'personas.destroyField' : 'personas.destroyNote', {
        profile,
        ...(kind === 'field' ? { key: target } : { id: target }),
      });
      setSaid((s) => ({ ...s, [id]: { kind: 'ok', text: 'Destroyed: nothing of it is left on disk.' } }));
      setGone((g) => ({ ...g, [id]: true }));
    } catch (err) {
      setSaid((s) => ({ ...s, [id]: { kind: 'error', text: (err as Error).message } }));
    }
    changed();
  };
  const state = (e: FieldEntry | NoteEntry) =>
    e.forgotten?.state === 'pending' && e.forgotten.destroy_at
      ? `destroyed on ${formatTime(e.forgotten.destroy_at)}`
      : 'kept';
  const list = (kind: 'field' | 'note') =>
    html`<${Paged}
      key=${kind}
      method="personas.forgotten"
      params=${{ profile, kind }}
      version=${version}
      what=${`forgotten ${kind}s`}
      member=${`${kind}s`}
      empty=${`No forgotten ${kind}s are kept.`}
      renderList=${(entries: (FieldEntry | NoteEntry)[]) =>
        html`<table class="forgotten-entries">
          <${ColumnHeads} names=${[kind === 'field' ? 'Key' : 'Note', 'Now']} />
          <tbody>
            ${entries.map((e) => {
              const target = 'key' in e ? e.key : e.id;
              const name = 'key' in e ? e.key : firstWords(noteText(e));
              const id = entryId(kind, target);
              return html`<tr key=${id} class=${gone[id] ? 'forgotten' : undefined}>
                <td class="name">${'key' in e ? html`<code>${name}</code>` : name}</td>
                <td>${gone[id] ? 'destroyed' : state(e)}</td>
                <td class="actions">
                  ${
                    gone[id]
                      ? null
                      : html`<button
                          type="button"
                          class="danger"
                          aria-label=${`Destroy now: the ${kind} ${name}`}
                          onClick=${() => setAsking({ kind, target, name })}
                        >
                          Destroy now…
                        </button>`
                  }
                  <${ActionAnswer} said=${said[id]} />
                </td>
              </tr>`;
            })}
          </tbody>
        </table>`}
    />`;
  return html`<section class="forgotten" aria-labelledby="forgotten-title">
    <h3 id="forgotten-title" tabindex="-1">Forgotten, not destroyed</h3>
    <p class="muted">
      What your forget setting kept (or keeps until its grace period ends). Destroying one erases it from the database
      file, its search index and the change log’s replaced values.
    </p>
    ${list('field')} ${list('note')}
    ${
      asking
        ? html`<${Dialog}
            id="destroy"
            title=${`Destroy this ${asking.kind} now?`}
            onClose=${() => setAsking(undefined)}
          >
            <p>
              ${asking.kind === 'field' ? html`The field <code>${asking.name}</code>` : html`The note “${asking.name}”`}
              is erased for good, whatever your forget setting. This cannot be undone.
            </p>
            <div class="toolbar">
              <button type="button" class="danger" onClick=${destroy}>Destroy now</button>
              <button type="button" data-safe onClick=${() => setAsking(undefined)}>Keep it</button>
            </div>
          <//>`
        : null
    }
  </section>`;
}

function modeText(policy: ForgetPolicy, kind: 'field' | 'note'): string {
  const days = Math.round((policy.gracePeriodSeconds ?? 604_800) / 86_400);
  switch (policy.mode) {
    case 'keep':
      return kind === 'field'
        ? 'Kept: the field leaves every answer, recall and export, but stays in the database file; writing the same key again brings it back.'
        : 'Kept: the note leaves every answer, recall and export, but stays in the database file. A kept note is never brought back.';
    case 'destroy_after_grace':
      return `Destroyed after the grace period: the ${kind} leaves every answer now, and is erased from the database file in ${days} day${days === 1 ? '' : 's'} (on ${new Date(Date.now() + (policy.gracePeriodSeconds ?? 0) * 1000).toLocaleDateString()}).`;
    case 'destroy_now':
      return `Destroyed now: the ${kind} is erased from the database file, its search index and the change log\u2019s replaced values at once. This cannot be undone.`;
  }
}

function ForgetDialog(props: {
  what: unknown;
  kind: 'field' | 'note';
  policy: Load<ForgetPolicy>;
  cancel: () => void;
  confirm: () => void;
}) {
  const { policy } = props;
  return html`<${Dialog} id="forget" title=${`Forget this ${props.kind}?`} onClose=${props.cancel}>
    <p>You are about to forget ${props.what}.</p>
    ${
      policy.state === 'done'
        ? html`<p class="forget-mode" data-mode=${policy.data.mode}>
              <strong>What will happen: </strong>${modeText(policy.data, props.kind)}
            </p>
            <p class="muted">
              ${
                policy.data.decidedBy === 'settings-service'
                  ? 'A settings service decides the mode per person; this is this installation\u2019s default, and the persona store applies your own setting when you confirm.'
                  : policy.data.decidedBy === 'installation'
                    ? 'This is the forget mode of this installation.'
                    : 'This is your forget setting, as the persona store applies it; change it on the Settings page. Forgotten entries that are kept are listed on this page, where you can destroy them.'
              }
            </p>`
        : policy.state === 'error'
          ? html`<p class="state error">
              The forget mode could not be read: ${policy.message} The persona store applies your setting when you
              confirm.
            </p>`
          : html`<p class="muted">Reading your forget mode…</p>`
    }
    <div class="toolbar">
      <button type="button" class="danger" onClick=${props.confirm}>Forget</button>
      <button type="button" data-safe onClick=${props.cancel}>Keep it</button>
    </div>
  <//>`;
}

function DeleteDialog(props: { profile: string; cancel: () => void; confirm: (typed: string) => void }) {
  const [typed, setTyped] = useState('');
  return html`<${Dialog} id="delete" title="Delete this persona?" onClose=${props.cancel}>
    <p>
      Deleting removes the card, every field and every note of <strong>${props.profile}</strong> from the database for
      good, whatever your forget mode. The change log keeps one entry saying it was deleted.
    </p>
    <form onSubmit=${(e: Event) => (e.preventDefault(), typed === props.profile && props.confirm(typed))}>
      <label
        >Type the profile <code>${props.profile}</code> to confirm
        <input
          name="confirm-profile"
          autocomplete="off"
          spellcheck=${false}
          value=${typed}
          onInput=${(e: Event) => setTyped((e.target as HTMLInputElement).value)}
        />
      </label>
      <div class="toolbar">
        <button type="submit" class="danger" disabled=${typed !== props.profile}>Delete for good</button>
        <button type="button" onClick=${props.cancel}>Keep it</button>
      </div>
    </form>
  <//>`;
}

/** The card's members a person writes here (verbosity is a choice of three, below them). */
type CardMember = 'display_name' | 'pronouns' | 'language' | 'tone' | 'verbosity' | 'speaking_style';
const EDITABLE: [CardMember, string][] = [
  ['display_name', 'Display name'],
  ['pronouns', 'Pronouns'],
  ['language', 'Language (BCP 47, e.g. en or pt-BR)'],
  ['tone', 'Tone'],
  ['speaking_style', 'Speaking style'],
];

function EditCard(props: { persona: Card; cancel: () => void; save: (card: Record<string, string>) => Promise<void> }) {
  const initial: Record<string, string> = Object.fromEntries(
    [...EDITABLE.map(([m]) => m), 'verbosity' as const].map((m) => [m, props.persona[m] ?? '']),
  );
  const [draft, setDraft] = useState<Record<string, string>>(initial);
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<string | undefined>();
  const set = (m: string) => (e: Event) => setDraft({ ...draft, [m]: (e.target as HTMLInputElement).value });
  const changed = Object.fromEntries(Object.entries(draft).filter(([m, v]) => v !== initial[m]));
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setRefused(undefined);
    try {
      await props.save(changed);
    } catch (err) {
      setRefused((err as Error).message);
      setBusy(false);
    }
  };
  return html`<${Dialog} id="edit-card" title="Edit the card" onClose=${props.cancel}>
    <form class="edit-card" onSubmit=${save}>
      ${EDITABLE.map(
        ([m, label]) =>
          html`<label key=${m}
            >${label}
            ${
              m === 'speaking_style'
                ? html`<textarea name=${m} rows="3" value=${draft[m]} onInput=${set(m)}></textarea>`
                : html`<input name=${m} value=${draft[m]} onInput=${set(m)} />`
            }
          </label>`,
      )}
      <label
        >Verbosity
        <select name="verbosity" value=${draft.verbosity} onChange=${set('verbosity')}>
          <option value="">not set</option>
          <option value="terse">terse</option>
          <option value="balanced">balanced</option>
          <option value="detailed">detailed</option>
        </select>
      </label>
      <p class="muted">
        An emptied box clears that member. The change is written as you, through the persona store, and logged.
      </p>
      ${refused ? html`<${Failed} message=${refused} />` : null}
      <div class="toolbar">
        <button type="submit" disabled=${busy || Object.keys(changed).length === 0}>Save</button>
        <button type="button" onClick=${props.cancel}>Cancel</button>
      </div>
    </form>
  <//>`;
}

const CARD_MEMBERS: [CardMember, string][] = [
  ['pronouns', 'Pronouns'],
  ['language', 'Language'],
  ['tone', 'Tone'],
  ['verbosity', 'Verbosity'],
  ['speaking_style', 'Speaking style'],
];

function CardMembers({ persona }: { persona: Card }) {
  const present = CARD_MEMBERS.filter(([m]) => persona[m]);
  if (present.length === 0) return null;
  return html`<dl class="card-members">
    ${present.map(
      ([m, label]) =>
        html`<dt key=${`t-${m}`}>${label}</dt>
          <dd key=${`d-${m}`}>${String(persona[m])}</dd>`,
    )}
  </dl>`;
}

/**
 * Pages pile up behind a stack of cursors: "Next" pushes the answer's next_after, "Previous" pops. A cursor
 * is opaque: it goes back to the console exactly as the persona store sent it.
 */
function usePages(): {
  after: unknown;
  page: number;
  next: (cursor: unknown) => void;
  previous: () => void;
} {
  const [cursors, setCursors] = useState<unknown[]>([]);
  return {
    after: cursors[cursors.length - 1],
    page: cursors.length + 1,
    next: (cursor) => setCursors([...cursors, cursor]),
    previous: () => setCursors(cursors.slice(0, -1)),
  };
}

function Pager({
  page,
  hasNext,
  next,
  previous,
  label,
}: {
  page: number;
  hasNext: boolean;
  next: () => void;
  previous: () => void;
  label: string;
}) {
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
  /** Read again (same page) when it changes: after an action. */
  version?: number;
  what: string;
  member: string;
  empty: string;
  /** The name of its row of page buttons; "Pages of" its `what` unless given. */
  pagesLabel?: string;
  renderList: (items: T[]) => unknown;
}) {
  const pages = usePages();
  const params = pages.after === undefined ? props.params : { ...props.params, after: pages.after };
  const page = useCall<unknown>(
    props.method,
    params,
    `${props.method}:${JSON.stringify(params)}`,
    undefined,
    props.version,
  );
  return html`<${Loaded}
    call=${page}
    what=${props.what}
    render=${(data: unknown) => {
      const list = itemsOf<T>(data, props.member);
      const next = nextAfter(data);
      if (list.length === 0 && pages.page === 1) return html`<${Empty}><p>${props.empty}</p><//>`;
      return html`${props.renderList(list)}
        <${Pager}
          page=${pages.page}
          hasNext=${next !== undefined}
          next=${() => pages.next(next)}
          previous=${pages.previous}
          label=${props.pagesLabel ?? `Pages of ${props.what}`}
        />`;
    }}
  />`;
}

/** Change-log entries a page, as the person chooses (the store's page is at most 100). */
const LOG_PAGE_SIZES = [10, 25, 50, 100] as const;

interface LogFilters {
  target_kind?: string;
  action?: string;
  target?: string;
  since?: string;
}

/** A replaced or new value, short: text as it is, anything else as compact JSON. */
function shortValue(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
  return text.length > 80 ? `${text.slice(0, 80)}\u2026` : text;
}

/** What a change was about, in words: the card, a field by its key, a note by its first words. */
function AboutCell({ entry }: { entry: ChangeLogEntryView }) {
  if (entry.target_kind === 'persona') return html`the card`;
  if (entry.target_kind === 'field') return html`the field <code>${entry.target}</code>`;
  return html`the note “${entry.label ?? entry.target}”`;
}

/** Who made a change: the store's own record of how it came in, the writer's claim beside it. */
function whoOf(entry: ChangeLogEntryView): string {
  if (entry.via) return VIA_WORDS[entry.via];
  const written = writtenVia(entry.asserted_by);
  return written.verified ? `A client with a \u201c${written.via}\u201d token` : VIA_WORDS.import;
}

/** What changed: the members, and before \u2192 after where the person keeps replaced values. */
function ChangedCell({ entry }: { entry: ChangeLogEntryView }) {
  const replaced = entry.replaced ?? {};
  const pairs = Object.keys(replaced);
  if (pairs.length === 0) return html`${entry.changes.join(', ') || '\u2014'}`;
  return html`<ul class="before-after">
    ${pairs.map(
      (m) =>
        html`<li key=${m}>
          ${m}: <del>${shortValue(replaced[m])}</del> →
          ${entry.after && m in entry.after ? html`<ins>${shortValue(entry.after[m])}</ins>` : html`<span class="muted">no longer kept</span>`}
        </li>`,
    )}
    ${entry.changes.filter((m) => !pairs.includes(m)).length > 0 ? html`<li>also ${entry.changes.filter((m) => !pairs.includes(m)).join(', ')}</li>` : null}
  </ul>`;
}

/**
 * The change log, newest first, with filters, a page size and paging; each entry in words: when, what was done
 * to what (a note by its first words), who did it (from the store's record), and what changed.
 * Filter (even with the filters unchanged) or a new page size starts again from the first page (a new Paged).
 */
// Newest first: the action just taken is on the first page.
const CHANGE_LOG_ORDER = { order: 'newest' } as const;
export function ChangeLog({ profile, version }: { profile: string; version?: number }) {
  const [draft, setDraft] = useState<LogFilters>({});
  const [filters, setFilters] = useState<LogFilters>({});
  const [size, setSize] = useState<number>(25);
  // Counts the Filter presses: each one is a new Paged, back on the newest entries.
  const [applied, setApplied] = useState(0);
  const set = (member: keyof LogFilters) => (e: Event) =>
    setDraft({ ...draft, [member]: (e.target as HTMLInputElement).value });

  const apply = (e: Event) => {
    e.preventDefault();
    const next: LogFilters = {};
    if (draft.target_kind) next.target_kind = draft.target_kind;
    if (draft.action) next.action = draft.action;
    if (draft.target?.trim()) next.target = draft.target.trim();
    if (draft.since) next.since = new Date(draft.since).toISOString();
    setFilters(next);
    setApplied((n) => n + 1);
  };
  const filtered = Object.keys(filters).length > 0;

  return html`<section class="changelog" aria-labelledby="changelog-title">
    <h3 id="changelog-title" tabindex="-1">Change log</h3>
    <form class="filters" onSubmit=${apply}>
      <label
        >About
        <select name="target_kind" value=${draft.target_kind ?? ''} onChange=${set('target_kind')}>
          <option value="">everything</option>
          <option value="field">fields</option>
          <option value="note">notes</option>
          <option value="persona">the card</option>
        </select>
      </label>
      <label
        >Change
        <select name="action" value=${draft.action ?? ''} onChange=${set('action')}>
          <option value="">any</option>
          ${ACTIONS.map((a) => html`<option key=${a} value=${a}>${a.replace('_', ' ')}</option>`)}
        </select>
      </label>
      <label>Field key or note id <input name="target" value=${draft.target ?? ''} onInput=${set('target')} /></label>
      <label
        >Since <input name="since" type="datetime-local" value=${draft.since ?? ''} onInput=${set('since')}
      /></label>
      <button type="submit">Filter</button>
      <label
        >Per page
        <select
          name="page-size"
          value=${String(size)}
          onChange=${(e: Event) => setSize(Number((e.target as HTMLSelectElement).value))}
        >
          ${LOG_PAGE_SIZES.map((n) => html`<option key=${n} value=${String(n)}>${n}</option>`)}
        </select>
      </label>
    </form>
    <${Paged}
      key=${`${applied}:${size}`}
      method="personas.events"
      params=${{ profile, limit: size, ...CHANGE_LOG_ORDER, ...filters }}
      version=${version}
      what="the change log"
      member="events"
      empty=${filtered ? 'No changes match these filters. Choose "everything" and "any" and clear the other boxes to see all.' : 'No changes recorded yet. Every change to this persona\u2019s card, fields and notes is logged here, with who made it.'}
      pagesLabel="Change log pages"
      renderList=${(list: ChangeLogEntryView[]) =>
        html`<table class="events">
          <${ColumnHeads} names=${['When', 'What', 'Who', 'Changed']} />
          <tbody>
            ${list.map(
              (ev) =>
                html`<tr key=${ev.id} data-action=${ev.action}>
                  <td class="when">${formatTime(ev.at)}</td>
                  <td>
                    ${`${ACTION_WORDS[ev.action]} `}${ev.target_kind === 'persona' && ev.action !== 'persona_updated' ? null : html`<${AboutCell} entry=${ev} />`}
                  </td>
                  <td>${whoOf(ev)}${ev.source ? html`<span class="muted"> (said: ${ev.source})</span>` : null}</td>
                  <td><${ChangedCell} entry=${ev} /></td>
                </tr>`,
            )}
          </tbody>
        </table>`}
    />
  </section>`;
}
