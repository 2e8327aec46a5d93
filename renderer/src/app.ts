/**
 * The console's frame: a sidebar with the tray's icon and a section per area, as desktop apps have it,
 * with the location kept in the URL's hash (works from file:// too). The overview is the first page.
 * Moving to another area moves the keyboard focus to its heading, so a screen reader or a keyboard user
 * starts there.
 */
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { FirstRunView, ServiceView } from '../../common/contract.ts';
import { SERVICE_CATALOGUE, type ServiceName } from '../../common/services.ts';
import { AGGREGATE_WORDS, aggregateState } from '../../common/states.ts';
import { FirstRun } from './first-run.ts';
import { Hub } from './hub.ts';
import { TRAY_ICONS } from './icons.ts';
import { Overview } from './overview.ts';
import { Connections, Subscriptions } from './platform.ts';
import { PersonaDetail, PersonaList } from './personas.ts';
import { Provider } from './provider.ts';
import { Recall } from './recall.ts';
import { Services } from './services.ts';
import { Settings } from './settings.ts';
import { useCall } from './states.ts';
import { call } from './transport.ts';
import { transportName } from './transport.ts';

const TABS = [
  ['first-run', 'Get started'],
  ['overview', 'Overview'],
  ['personas', 'Personas'],
  ['recall', 'Recall'],
  ['platform', 'Platform'],
  ['hub', 'Connect a hub'],
  ['provider', 'Provider'],
  ['services', 'Services'],
  ['settings', 'Settings'],
] as const;
type Tab = (typeof TABS)[number][0];

interface Place {
  tab: Tab;
  /** A persona's profile (`#personas/<profile>`). */
  profile?: string;
  /** The service whose log the Services page shows (`#services/<name>`). */
  service?: ServiceName;
}

function readHash(): Place {
  let hash: string;
  try {
    hash = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  } catch {
    // A stray `%` (a hand-typed address): the overview, not a blank page.
    hash = '';
  }
  const [tab, sub] = hash.split('/');
  const known = TABS.some(([id]) => id === tab) ? (tab as Tab) : 'overview';
  if (known === 'personas' && sub) return { tab: known, profile: sub };
  if (known === 'services' && sub && sub in SERVICE_CATALOGUE) return { tab: known, service: sub as ServiceName };
  return { tab: known };
}

function go(place: Place): void {
  const sub = place.profile ?? place.service;
  location.hash = sub ? `#${place.tab}/${encodeURIComponent(sub)}` : `#${place.tab}`;
}

/** The tray's icon for the services as they are now, as the desktop app's tray shows it. */
function TrayIcon() {
  const { load } = useCall<ServiceView[]>('services.list', undefined, 'tray', 5_000);
  if (load.state !== 'done')
    return html`<img
      class="tray-icon"
      src=${TRAY_ICONS.stopped}
      width="16"
      height="16"
      alt="Service states not known yet"
    />`;
  const state = aggregateState(load.data.map((s) => s.state));
  return html`<img
    class="tray-icon"
    src=${TRAY_ICONS[state]}
    width="16"
    height="16"
    alt=${AGGREGATE_WORDS[state]}
    title=${AGGREGATE_WORDS[state]}
    data-aggregate=${state}
  />`;
}

export function App() {
  const [place, setPlace] = useState<Place>(readHash);
  const [notice, setNotice] = useState<string | undefined>();
  const moved = useRef(false);
  useEffect(() => {
    const onHash = () => {
      moved.current = true;
      setPlace(readHash());
    };
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    // Not on first load (the page starts at its top); after each move, at the new area's heading.
    if (!moved.current) return;
    (document.querySelector<HTMLElement>('main h2') ?? document.querySelector<HTMLElement>('main'))?.focus();
  }, [place.tab, place.profile, place.service]);
  useEffect(() => {
    // The first launch opens the guide, until the person finishes or skips it; a link to a page wins.
    if (location.hash) return;
    call<FirstRunView>('firstRun.get').then(
      (view) => !view.done && !location.hash && go({ tab: 'first-run' }),
      () => undefined, // the overview says what is wrong with the services
    );
  }, []);
  const navigate = (next: Place, keepNotice?: string) => {
    setNotice(keepNotice);
    go(next);
  };

  return html`<div class="shell">
    <aside class="sidebar">
      <div class="brand">
        <${TrayIcon} />
        <h1>Hub services</h1>
      </div>
      <nav aria-label="Console sections">
        <ul>
          ${TABS.map(
            ([id, label]) =>
              html`<li key=${id}>
                <button
                  type="button"
                  class=${place.tab === id ? 'section active' : 'section'}
                  aria-current=${place.tab === id ? 'page' : undefined}
                  onClick=${() => navigate({ tab: id })}
                >
                  ${label}
                </button>
              </li>`,
          )}
        </ul>
      </nav>
      <p class="muted transport">via ${transportName() === 'ipc' ? 'the desktop app' : 'loopback HTTP'}</p>
    </aside>
    <main tabindex="-1">
      ${notice ? html`<p class="state ok" role="status">${notice}</p>` : null}
      ${place.tab === 'first-run' ? html`<${FirstRun} open=${(tab: string) => navigate({ tab: tab as Tab })} />` : null}
      ${place.tab === 'overview' ? html`<${Overview} showLog=${(service: ServiceName) => navigate({ tab: 'services', service })} />` : null}
      ${place.tab === 'personas' && !place.profile ? html`<${PersonaList} open=${(profile: string) => navigate({ tab: 'personas', profile })} />` : null}
      ${
        place.tab === 'personas' && place.profile
          ? html`<${PersonaDetail}
              key=${place.profile}
              profile=${place.profile}
              back=${(said?: string) => navigate({ tab: 'personas' }, said)}
            />`
          : null
      }
      ${place.tab === 'recall' ? html`<${Recall} />` : null}
      ${place.tab === 'platform' ? html`<${Subscriptions} /><${Connections} />` : null}
      ${place.tab === 'hub' ? html`<${Hub} />` : null} ${place.tab === 'provider' ? html`<${Provider} />` : null}
      ${place.tab === 'settings' ? html`<${Settings} />` : null}
      ${place.tab === 'services' ? html`<${Services} logService=${place.service} showLog=${(service: ServiceName) => navigate({ tab: 'services', service })} />` : null}
    </main>
  </div>`;
}
