/** The gateway's subscriptions, and platform connections per profile (kept by the identity service). */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Empty, Failed, Loaded, formatTime, itemsOf, useCall } from './states.ts';
import { call } from './transport.ts';

interface Subscription {
  id: string;
  kind: string;
  repo: string;
  target: string;
  state: 'active' | 'ended' | 'expired';
  created_at: string;
  expires_at: string;
  ended_at: string | null;
  signal: 'none' | 'pending' | 'sent' | 'failed';
  signal_attempts: number;
}

const KIND_LABELS: Record<string, string> = {
  checks_settled: 'checks settling',
  pull_merged: 'pull request merging',
  review_landed: 'a review landing',
  run_completed: 'a run completing',
};

export function Subscriptions() {
  const [load, reload] = useCall<{ total: number; items: Subscription[] }>('subscriptions.list', undefined, 'subscriptions', 10_000);
  return html`<section aria-labelledby="subscriptions-title">
    <h2 id="subscriptions-title">Gateway subscriptions</h2>
    <${Loaded}
      load=${load}
      what="subscriptions"
      retry=${reload}
      render=${(data: { total: number; items: Subscription[] }) => {
        const list = itemsOf<Subscription>(data, 'items');
        if (list.length === 0) {
          return html`<${Empty}><p>No subscriptions. The hub opens one when it waits for checks, a merge, a review or a run; each ends with one signal or expires within a week.</p><//>`;
        }
        return html`<table class="subscriptions">
          <thead><tr><th>Watching for</th><th>Repository</th><th>Target</th><th>State</th><th>Signal</th><th>Opened</th><th>Expires</th></tr></thead>
          <tbody>
            ${list.map(
              (s) => html`<tr key=${s.id} data-subscription=${s.id}>
                <td>${KIND_LABELS[s.kind] ?? s.kind}</td>
                <td>${s.repo}</td>
                <td><code>${s.target}</code></td>
                <td><span class=${`badge state-${s.state}`}>${s.state}</span>${s.ended_at ? html` <span class="muted">${formatTime(s.ended_at)}</span>` : null}</td>
                <td>${s.signal}${s.signal_attempts > 1 ? ` (${s.signal_attempts} attempts)` : ''}</td>
                <td>${formatTime(s.created_at)}</td>
                <td>${formatTime(s.expires_at)}</td>
              </tr>`,
            )}
          </tbody>
        </table>
        ${data.total > list.length ? html`<p class="muted">Showing the newest ${list.length} of ${data.total}.</p>` : null}`;
      }}
    />
  </section>`;
}

interface Connection {
  profile: string;
  kind: string;
  created_at?: string;
  updated_at?: string;
}

export function Connections() {
  const [load, reload] = useCall<unknown>('connections.list', undefined, 'connections');
  const [profile, setProfile] = useState('');
  const [token, setToken] = useState('');
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | undefined>();
  const [confirming, setConfirming] = useState<string | undefined>();

  const add = async (e: Event) => {
    e.preventDefault();
    const secret = token;
    setToken(''); // the secret leaves the page's state at once, whatever happens next
    try {
      await call('connections.put', { profile: profile.trim(), token: secret.trim() });
      setMessage({ kind: 'ok', text: `Saved the token for profile “${profile.trim()}”. The identity service keeps it encrypted; it is never shown again.` });
      setProfile('');
      reload();
    } catch (err) {
      setMessage({ kind: 'error', text: (err as Error).message });
    }
  };
  const remove = async (name: string) => {
    setConfirming(undefined);
    try {
      await call('connections.remove', { profile: name });
      setMessage({ kind: 'ok', text: `Removed the connection of profile “${name}”.` });
      reload();
    } catch (err) {
      setMessage({ kind: 'error', text: (err as Error).message });
    }
  };

  return html`<section aria-labelledby="connections-title">
    <h2 id="connections-title">Platform connections</h2>
    <${Loaded}
      load=${load}
      what="connections"
      retry=${reload}
      render=${(data: unknown) => {
        const list = itemsOf<Connection>(data, 'connections');
        if (list.length === 0) return html`<${Empty}><p>No connections. Add a GitHub fine-grained personal access token below so the gateway can act for you.</p><//>`;
        return html`<table class="connections">
          <thead><tr><th>Profile</th><th>Kind</th><th>Updated</th><th></th></tr></thead>
          <tbody>
            ${list.map(
              (c) => html`<tr key=${c.profile}>
                <td>${c.profile}</td>
                <td>${c.kind === 'token' ? 'personal access token' : 'app installation'}</td>
                <td>${formatTime(c.updated_at)}</td>
                <td class="actions">
                  ${confirming === c.profile
                    ? html`<span>The token cannot be recovered. </span>
                        <button type="button" onClick=${() => remove(c.profile)} aria-label=${`Confirm removing the connection of ${c.profile}`}>Remove for good</button>
                        <button type="button" onClick=${() => setConfirming(undefined)}>Keep it</button>`
                    : html`<button type="button" onClick=${() => setConfirming(c.profile)} aria-label=${`Remove the connection of ${c.profile}`}>Remove</button>`}
                </td>
              </tr>`,
            )}
          </tbody>
        </table>`;
      }}
    />
    <form class="add-connection" onSubmit=${add}>
      <h3>Add or replace a token</h3>
      <label>Profile <input name="profile" required value=${profile} onInput=${(e: Event) => setProfile((e.target as HTMLInputElement).value)} /></label>
      <label>Token
        <input name="token" type="password" autocomplete="off" spellcheck=${false} required value=${token} onInput=${(e: Event) => setToken((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit">Save token</button>
      <p class="muted">The token goes to the identity service, which stores it encrypted. It is never shown again.</p>
    </form>
    ${message?.kind === 'ok' ? html`<p class="state ok" role="status">${message.text}</p>` : null}
    ${message?.kind === 'error' ? html`<${Failed} message=${message.text} />` : null}
  </section>`;
}
