/** The console's frame: a tab per area, with the location kept in the URL's hash (works from file:// too). */
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { Connections, Subscriptions } from './platform.ts';
import { PersonaDetail, PersonaList } from './personas.ts';
import { Provider } from './provider.ts';
import { Recall } from './recall.ts';
import { Services } from './services.ts';
import { transportName } from './transport.ts';

const TABS = [
  ['personas', 'Personas'],
  ['recall', 'Recall'],
  ['platform', 'Platform'],
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
  const known = TABS.some(([id]) => id === tab) ? (tab as Tab) : 'personas';
  return known === 'personas' && profile ? { tab: known, profile } : { tab: known };
}

function go(place: Place): void {
  location.hash = place.profile ? `#${place.tab}/${encodeURIComponent(place.profile)}` : `#${place.tab}`;
}

export function App() {
  const [place, setPlace] = useState<Place>(readHash);
  useEffect(() => {
    const onHash = () => setPlace(readHash());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  return html`<header class="top">
      <h1>Hub services</h1>
      <nav aria-label="Console sections">
        ${TABS.map(
          ([id, label]) => html`<button type="button" key=${id} class=${place.tab === id ? 'tab active' : 'tab'} aria-current=${place.tab === id ? 'page' : undefined} onClick=${() => go({ tab: id })}>${label}</button>`,
        )}
      </nav>
      <span class="muted transport">via ${transportName() === 'ipc' ? 'the desktop app' : 'loopback HTTP'}</span>
    </header>
    <main>
      ${place.tab === 'personas' && !place.profile ? html`<${PersonaList} open=${(profile: string) => go({ tab: 'personas', profile })} />` : null}
      ${place.tab === 'personas' && place.profile ? html`<${PersonaDetail} key=${place.profile} profile=${place.profile} back=${() => go({ tab: 'personas' })} />` : null}
      ${place.tab === 'recall' ? html`<${Recall} />` : null}
      ${place.tab === 'platform' ? html`<${Subscriptions} /><${Connections} />` : null}
      ${place.tab === 'provider' ? html`<${Provider} />` : null}
      ${place.tab === 'services' ? html`<${Services} />` : null}
    </main>`;
}
