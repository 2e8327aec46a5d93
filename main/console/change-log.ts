/**
 * The change log as a person reads it: the persona store's page, with each note named by its first words
 * and, where the person keeps replaced values, what each change left (after) beside what it replaced
 * (before). Who made a change is the store's own fact (`via`), put in words by the page.
 */
import { urlPath } from '../../common/url-path.ts';
import type { Card, Event, EventPage, Field, Note, NotePage } from '../../services/persona-store/shapes.ts';
import type { ChangeLogEntryView, ChangeLogPageView } from './answers.ts';
import type { ServiceClient } from './service-client.ts';

/** How many words of a note name it in the log. */
const NOTE_WORDS = 8;
/** Pages of forgotten notes read to name a kept note (a runaway guard). */
const FORGOTTEN_PAGES = 5;

export function firstWords(text: string, words = NOTE_WORDS): string {
  const all = text.trim().split(/\s+/);
  return all.length <= words ? all.join(' ') : `${all.slice(0, words).join(' ')}\u2026`;
}

/** The first words of each note named on the page: live ones read one by one, kept ones from the forgotten list. */
async function noteLabels(services: ServiceClient, profile: string, ids: string[]): Promise<Map<string, string>> {
  const labels = new Map<string, string>();
  await Promise.all(
    ids.map(async (id) => {
      const answer = await services.call<Note>('persona-store', {
        path: urlPath`/v1/personas/${profile}/notes/${id}`,
        acceptStatus: [404],
      });
      if (answer.status === 200) labels.set(id, firstWords(answer.body.content));
    }),
  );
  let after: string | undefined;
  for (let page = 0; page < FORGOTTEN_PAGES && ids.some((id) => !labels.has(id)); page++) {
    const body = (
      await services.call<NotePage>('persona-store', {
        path: urlPath`/v1/personas/${profile}/notes`,
        query: { state: 'forgotten', after },
      })
    ).body;
    for (const n of body.notes) if (ids.includes(n.id)) labels.set(n.id, `${firstWords(n.content)} (forgotten)`);
    if (body.next_after === null) break;
    after = body.next_after;
  }
  for (const id of ids) if (!labels.has(id)) labels.set(id, 'a destroyed note');
  return labels;
}

/** What an entry holds now, by the members a change log's `replaced` names; undefined when it is no longer live. */
async function currentValues(
  services: ServiceClient,
  profile: string,
  entry: Event,
): Promise<Record<string, unknown> | undefined> {
  if (entry.target_kind === 'persona') {
    const block = await services.call<{ persona: Card }>('persona-store', { path: urlPath`/v1/personas/${profile}` });
    return block.body.persona;
  }
  const path =
    entry.target_kind === 'field'
      ? urlPath`/v1/personas/${profile}/fields/${entry.target}`
      : urlPath`/v1/personas/${profile}/notes/${entry.target}`;
  const answer = await services.call<Field | Note>('persona-store', { path, acceptStatus: [404] });
  return answer.status === 200 ? answer.body : undefined;
}

/**
 * For each entry that kept what it replaced (before), what the change left (after): the `replaced` of the
 * next later change of the same member, else the entry as it is now. Later changes are read from the store,
 * oldest first after the entry, so a page boundary or the order asked changes nothing.
 */
async function afterValues(
  services: ServiceClient,
  profile: string,
  entries: Event[],
): Promise<Map<number, Record<string, unknown>>> {
  const after = new Map<number, Record<string, unknown>>();
  const current = new Map<string, Promise<Record<string, unknown> | undefined>>();
  for (const entry of entries.filter((e) => e.replaced && Object.keys(e.replaced).length > 0)) {
    const later = (
      await services.call<EventPage>('persona-store', {
        path: urlPath`/v1/personas/${profile}/events`,
        query: { target: entry.target, target_kind: entry.target_kind, after: entry.id, order: 'oldest', limit: 100 },
      })
    ).body.events;
    const values: Record<string, unknown> = {};
    for (const member of Object.keys(entry.replaced!)) {
      const next = later.find((e) => e.replaced && member in e.replaced);
      if (next) {
        values[member] = next.replaced![member];
        continue;
      }
      const key = `${entry.target_kind}:${entry.target}`;
      if (!current.has(key)) current.set(key, currentValues(services, profile, entry));
      const now = await current.get(key)!;
      if (now && member in now) values[member] = now[member];
    }
    after.set(entry.id, values);
  }
  return after;
}

/** The store's page of the change log, with notes named and replaced values paired with what replaced them. */
export async function readableChangeLog(
  services: ServiceClient,
  profile: string,
  page: EventPage,
): Promise<ChangeLogPageView> {
  const noteIds = [...new Set(page.events.filter((e) => e.target_kind === 'note').map((e) => e.target))];
  const [labels, after] = await Promise.all([
    noteLabels(services, profile, noteIds),
    afterValues(services, profile, page.events),
  ]);
  const events: ChangeLogEntryView[] = page.events.map((e) => ({
    ...e,
    ...(e.target_kind === 'note' ? { label: labels.get(e.target) } : {}),
    ...(after.has(e.id) ? { after: after.get(e.id) } : {}),
  }));
  return { events, next_after: page.next_after };
}
