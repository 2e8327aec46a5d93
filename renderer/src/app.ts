/**
 * The console's frame: the tray's icon and a tab per area, with the location kept in the URL's hash
 * (works from file:// too). The overview is the first page. Moving to another area moves the keyboard
 * focus to its heading, so a screen reader or a keyboard user starts there.
 */
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ServiceView } from '../../main/common/contract.ts';
import { AGGREGATE_WORDS, aggregateState } from '../../main/common/states.ts';
import { Hub } from './hub.ts';
import { TRAY_ICONS } from './icons.ts';
import { Overview } from './overview.ts';
import { Connections, Subscriptions } from './platform.ts';
import { PersonaDetail, PersonaList } from './personas.ts';
import { Provider } from './provider.ts';
import { Recall } from './recall.ts';
import { Services } from './services.ts';
import { useCall } from './states.ts';
import { transportName } from './transport.ts';

const TABS = [
  ['overview', 'Overview'],
  ['personas', 'Personas'],
  ['recall', 'Recall'],
  ['platform', 'Platform'],
  ['hub', 'Connect a hub'],
  ['provider', 'Provider'],
  ['services', 'Services'],
] as const;
type Tab = (typeof TABS)[number][0];

interface Place {
  tab: Tab;
  profile?: string;
}

function readHash(): Place {
  const [tab, profile] = decodeURIComponent(location.hash.replace(/^#\/?/, '')).split('/');
  const known = TABS.some(([id]) => id === tab) ? (tab as Tab) : 'overview';
  return known === 'personas' && profile ? { tab: known, profile } : { tab: known };
}

function go(place: Place): void {
  location.hash = place.profile ? `#${place.tab}/${encodeURIComponent(place.profile)}` : `#${place.tab}`;
}

/** The tray's icon for the services as they are now, as the desktop app's tray shows it. */
function TrayIcon() {
  const [load] = useCall<ServiceView[]>('services.list', undefined, 'tray', 5_000);
  if (load.state !== 'done') return html`<img class="tray-icon" src=${TRAY_ICONS.stopped} width="16" height="16" alt="Service states not known yet" />`;
  const state = aggregateState(load.data.map((s) => s.state));
  return html`<img class="tray-icon" src=${TRAY_ICONS[state]} width="16" height="16" alt=${AGGREGATE_WORDS[state]} title=${AGGREGATE_WORDS[state]} data-aggregate=${state} />`;
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
  }, [place.tab, place.profile]);
  const navigate = (next: Place, keepNotice?: string) => {
    setNotice(keepNotice);
    go(next);
  };

  return html`<header class="top">
      <${TrayIcon} />
      <h1>Hub services</h1>
      <nav aria-label="Console sections">
        ${TABS.map(
          ([id, label]) => html`<button type="button" key=${id} class=${place.tab === id ? 'tab active' : 'tab'} aria-current=${place.tab === id ? 'page' : undefined} onClick=${() => navigate({ tab: id })}>${label}</button>`,
        )}
      </nav>
      <span class="muted transport">via ${transportName() === 'ipc' ? 'the desktop app' : 'loopback HTTP'}</span>
    </header>
    <main tabindex="-1">
      ${notice ? html`<p class="state ok" role="status">${notice}</p>` : null}
      ${place.tab === 'overview' ? html`<${Overview} />` : null}
      ${place.tab === 'personas' && !place.profile ? html`<${PersonaList} open=${(profile: string) => navigate({ tab: 'personas', profile })} />` : null}
      ${place.tab === 'personas' && place.profile
        ? html`<${PersonaDetail} key=${place.profile} profile=${place.profile} back=${(said?: string) => navigate({ tab: 'personas' }, said)} />`
        : null}
      ${place.tab === 'recall' ? html`<${Recall} />` : null}
      ${place.tab === 'platform' ? html`<${Subscriptions} /><${Connections} />` : null}
      ${place.tab === 'hub' ? html`<${Hub} />` : null}
      ${place.tab === 'provider' ? html`<${Provider} />` : null}
      ${place.tab === 'services' ? html`<${Services} />` : null}
    </main>`;
}
