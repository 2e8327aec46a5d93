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
  state: 'active' | 'ended' | 'expired' | 'cancelled';
  created_at: string;
  expires_at: string;
  ended_at: string | null;
  signal: 'none' | 'pending' | 'sent' | 'failed';
  signal_attempts: number;
  /** Sent by gateways that report them: what ended it, the last delivery, the next attempt. */
  event?: string | null;
  signal_last_status?: number | null;
  signal_last_error?: string | null;
  signal_last_at?: string | null;
  signal_next_at?: string | null;
}

const KIND_LABELS: Record<string, string> = {
  checks_settled: 'checks settling',
  pull_merged: 'pull request merging',
  review_landed: 'a review landing',
  run_completed: 'a run completing',
};

/** What an active subscription waits for, in words: "the pull request #12 of octo/hello to merge". */
export function waitsFor(s: Pick<Subscription, 'kind' | 'repo' | 'target'>): string {
  const pull = /^pull\/(\d+)$/.exec(s.target)?.[1];
  const run = /^run\/(\d+)$/.exec(s.target)?.[1];
  switch (s.kind) {
    case 'pull_merged':
      return `pull request #${pull ?? s.target} of ${s.repo} to be merged`;
    case 'review_landed':
      return `a new review on pull request #${pull ?? s.target} of ${s.repo}`;
    case 'run_completed':
      return `workflow run ${run ?? s.target} of ${s.repo} to complete`;
    case 'checks_settled':
      return `the checks of ${pull ? `pull request #${pull}` : s.target} in ${s.repo} to settle (all finished)`;
    default:
      return `${s.kind} on ${s.target} in ${s.repo}`;
  }
}

const SIGNAL_WORDS: Record<string, string> = {
  none: 'not due: a signal is sent when the subscription ends',
  pending: 'being delivered',
  sent: 'delivered',
  failed: 'given up after every attempt',
};

function SubscriptionDetail({ id, onChanged }: { id: string; onChanged: () => void }) {
  const [load, reload] = useCall<Subscription>('subscriptions.get', { id }, `subscription:${id}`);
  const [confirming, setConfirming] = useState(false);
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | undefined>();
  const cancel = async () => {
    setConfirming(false);
    try {
      await call('subscriptions.cancel', { id });
      setMessage({ kind: 'ok', text: 'Cancelled: it is no longer watched, and no signal will be sent.' });
      reload();
      onChanged();
    } catch (err) {
      setMessage({ kind: 'error', text: (err as Error).message });
    }
  };
  const unknown = 'not reported by this gateway';
  return html`<div class="subscription-detail" data-detail=${id}>
    <${Loaded}
      load=${load}
      what="the subscription"
      retry=${reload}
      render=${(s: Subscription) => html`<dl class="card-members">
          <dt>State</dt><dd data-member="state">${s.state}${s.ended_at ? ` since ${formatTime(s.ended_at)}` : ''}</dd>
          <dt>Waits for</dt><dd data-member="waits">${s.state === 'active' ? waitsFor(s) : `nothing more (it waited for ${waitsFor(s)})`}</dd>
          <dt>Ended by</dt><dd data-member="event">${s.state === 'active' ? '—' : s.event ? (KIND_LABELS[s.event] ?? s.event) : s.state === 'expired' ? 'its expiry' : unknown}</dd>
          <dt>Signal</dt><dd data-member="signal">${SIGNAL_WORDS[s.signal] ?? s.signal}</dd>
          <dt>Delivery attempts</dt><dd data-member="attempts">${s.signal_attempts}</dd>
          <dt>Last delivery</dt><dd data-member="last">${s.signal_attempts === 0 ? 'none yet' : s.signal_last_status !== undefined ? `${s.signal_last_status ?? 'no answer'}${s.signal_last_error ? `: ${s.signal_last_error}` : ''}${s.signal_last_at ? ` at ${formatTime(s.signal_last_at)}` : ''}` : unknown}</dd>
          <dt>Next attempt</dt><dd data-member="next">${s.signal === 'pending' || s.signal === 'none' ? (s.signal_next_at ? formatTime(s.signal_next_at) : s.signal === 'none' ? '—' : unknown) : '—'}</dd>
          <dt>Expires</dt><dd>${formatTime(s.expires_at)}</dd>
        </dl>
        ${s.state === 'active'
          ? confirming
            ? html`<p>Stop watching for ${waitsFor(s)}? The hub gets no signal for it.</p>
                <button type="button" class="danger" onClick=${cancel}>Cancel the subscription</button>
                <button type="button" onClick=${() => setConfirming(false)}>Keep watching</button>`
            : html`<button type="button" onClick=${() => setConfirming(true)}>Cancel…</button>`
          : null}`}
    />
    ${message?.kind === 'ok' ? html`<p class="state ok" role="status">${message.text}</p>` : null}
    ${message?.kind === 'error' ? html`<${Failed} message=${message.text} />` : null}
  </div>`;
}

export function Subscriptions() {
  const [load, reload] = useCall<{ total: number; items: Subscription[] }>('subscriptions.list', undefined, 'subscriptions', 10_000);
  const [open, setOpen] = useState<string | undefined>();
  return html`<section aria-labelledby="subscriptions-title">
    <h2 id="subscriptions-title" tabindex="-1">Gateway subscriptions</h2>
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
          <thead><tr><th>Watching for</th><th>Repository</th><th>Target</th><th>State</th><th>Signal</th><th>Opened</th><th>Expires</th><th><span class="visually-hidden">Details</span></th></tr></thead>
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
                  <td><button type="button" aria-expanded=${open === s.id} aria-label=${`${open === s.id ? 'Hide details' : 'Details'} of the subscription to ${KIND_LABELS[s.kind] ?? s.kind} in ${s.repo}`} onClick=${() => setOpen(open === s.id ? undefined : s.id)}>${open === s.id ? 'Hide details' : 'Details'}</button></td>
                </tr>
                ${open === s.id ? html`<tr key=${`${s.id}-detail`} class="detail-row"><td colspan="8"><${SubscriptionDetail} id=${s.id} onChanged=${reload} /></td></tr>` : null}`,
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
    <h2 id="connections-title" tabindex="-1">Platform connections</h2>
    <${Loaded}
      load=${load}
      what="connections"
      retry=${reload}
      render=${(data: unknown) => {
        const list = itemsOf<Connection>(data, 'connections');
        if (list.length === 0) return html`<${Empty}><p>No connections. Add a GitHub fine-grained personal access token below so the gateway can act for you.</p><//>`;
        return html`<table class="connections">
          <thead><tr><th>Profile</th><th>Kind</th><th>Updated</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
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
