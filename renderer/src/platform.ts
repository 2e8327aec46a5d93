/** The gateway's subscriptions, and platform connections per profile (kept by the identity service). */
import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { SubscriptionListView, SubscriptionView as Subscription } from '../../main/console/answers.ts';
import type { ConnectionList } from '../../services/identity/shapes.ts';
import { Dialog } from './dialog.ts';
import { OutcomeLine, useOutcome } from './outcome.ts';
import { Empty, Failed, Loaded, formatTime, useCall } from './states.ts';
import { ColumnHeads } from './table.ts';
import { call } from './transport.ts';

const KIND_LABELS: Record<string, string> = {
  checks_settled: 'checks settling',
  pull_merged: 'pull request merging',
  review_landed: 'a review landing',
  run_completed: 'a run completing',
};

/** What ended a subscription (the gateway's `event`), as the detail says it. */
const EVENT_WORDS: Record<string, string> = {
  checks_settled: 'its checks settled',
  pull_merged: 'the pull request was merged',
  pull_closed_unmerged: 'the pull request was closed without a merge',
  review_landed: 'a review landed',
  run_completed: 'the run completed',
  cancelled: 'a cancel: it was cancelled before its event happened',
};

/** While a signal is being delivered, the detail reads the subscription again this often. */
const DELIVERY_REFRESH_MS = 5_000;

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

/** The subscription's state, and since when it is over. */
export function stateWords(s: Pick<Subscription, 'state' | 'ended_at'>): string {
  return s.state === 'active' || !s.ended_at ? s.state : `${s.state} at ${formatTime(s.ended_at)}`;
}

/** What ended it: its event, a cancel, or its expiry. */
export function endedBy(s: Pick<Subscription, 'state' | 'event'>): string {
  if (s.state === 'active') return '\u2014';
  if (s.event) return EVENT_WORDS[s.event] ?? s.event;
  return s.state === 'expired'
    ? 'its expiry: no one cancelled it and its event did not happen in time'
    : 'not reported by the gateway';
}

/** Its one signal: due, on its way, delivered or given up, and what it tells the hub. */
export function signalWords(s: Pick<Subscription, 'state' | 'signal'>): string {
  const news =
    s.state === 'cancelled' ? 'that it was cancelled' : s.state === 'expired' ? 'that it expired' : 'that it ended';
  switch (s.signal) {
    case 'none':
      return s.state === 'expired'
        ? 'none: it expired without a signal'
        : 'not due: a signal is sent when the subscription ends';
    case 'pending':
      return `being delivered: one signal telling the hub ${news}`;
    case 'sent':
      return `delivered: the hub was told ${news}`;
    case 'failed':
      return `given up after every attempt: the hub was not told ${news}`;
    default:
      return s.signal;
  }
}

/** The last delivery attempt: the receiver's status, why it did not deliver, when. */
export function lastDelivery(
  s: Pick<Subscription, 'signal_attempts' | 'signal_last_status' | 'signal_last_error' | 'signal_last_at'>,
): string {
  if (s.signal_attempts === 0 && !s.signal_last_at && !s.signal_last_error) return 'none yet';
  const status = typeof s.signal_last_status === 'number' ? `HTTP ${s.signal_last_status}` : '';
  const said = [status, s.signal_last_error ?? ''].filter(Boolean).join(': ') || 'no answer';
  return s.signal_last_at ? `${said} at ${formatTime(s.signal_last_at)}` : said;
}

/** When the next attempt is due: only a pending signal has one. */
export function nextAttempt(s: Pick<Subscription, 'signal' | 'signal_next_at'>): string {
  if (s.signal === 'pending') return s.signal_next_at ? formatTime(s.signal_next_at) : 'being sent now';
  if (s.signal === 'failed') return 'none: given up';
  return '\u2014';
}

/** What a cancel did, from the subscription the gateway answered with. */
export function cancelOutcome(s: Pick<Subscription, 'state' | 'event'>): string {
  switch (s.state) {
    case 'cancelled':
      return 'Cancelled: it is no longer watched, and the hub gets one signal saying it was cancelled.';
    case 'ended':
      return `It had already ended (${endedBy(s)}) before the cancel: the hub gets its one signal about that, and nothing more.`;
    case 'expired':
      return 'It had already expired before the cancel: it is no longer watched, and the hub gets its one signal about that, and nothing more.';
    default:
      return 'The gateway did not cancel it; read the list again.';
  }
}

function SubscriptionDetail({ id, profile, onChanged }: { id: string; profile?: string; onChanged: () => void }) {
  const [delivering, setDelivering] = useState(false);
  const subscription = useCall<Subscription>(
    'subscriptions.get',
    profile ? { id, profile } : { id },
    `subscription:${id}`,
    delivering ? DELIVERY_REFRESH_MS : undefined,
  );
  const [confirming, setConfirming] = useState(false);
  const { outcome: message, attempt } = useOutcome();
  const outcome = useRef<HTMLParagraphElement>(null);
  // The button that asked is gone once it is cancelled: the focus goes to what happened.
  useEffect(() => outcome.current?.focus(), [message]);
  const pending = subscription.load.state === 'done' && subscription.load.data.signal === 'pending';
  useEffect(() => {
    if (pending === delivering) return;
    setDelivering(pending);
    // The delivery settled (sent or given up): the list's signal column follows.
    if (!pending) onChanged();
  }, [pending]);
  const cancel = (s: Subscription) => {
    setConfirming(false);
    return attempt(async () => {
      // The gateway cancels only under the profile the subscription was opened with.
      const after = await call<Subscription>('subscriptions.cancel', { id, profile: s.profile });
      subscription.reload();
      onChanged();
      return cancelOutcome(after);
    });
  };
  return html`<div class="subscription-detail" data-detail=${id}>
    <${Loaded}
      call=${subscription}
      what="the subscription"
      render=${(s: Subscription) =>
        html`<dl class="card-members">
            <dt>State</dt>
            <dd data-member="state">${stateWords(s)}</dd>
            <dt>Waits for</dt>
            <dd data-member="waits">
              ${s.state === 'active' ? waitsFor(s) : `nothing more (it waited for ${waitsFor(s)})`}
            </dd>
            <dt>Ended by</dt>
            <dd data-member="event">${endedBy(s)}</dd>
            <dt>Signal</dt>
            <dd data-member="signal">${signalWords(s)}</dd>
            <dt>Delivery attempts</dt>
            <dd data-member="attempts">${s.signal_attempts}</dd>
            <dt>Last delivery</dt>
            <dd data-member="last">${lastDelivery(s)}</dd>
            <dt>Next attempt</dt>
            <dd data-member="next">${nextAttempt(s)}</dd>
            <dt>Profile</dt>
            <dd data-member="profile">${s.profile}</dd>
            <dt>Opened</dt>
            <dd>${formatTime(s.created_at)}</dd>
            <dt>Expires</dt>
            <dd>${formatTime(s.expires_at)}</dd>
          </dl>
          ${s.state === 'active' ? html`<button type="button" onClick=${() => setConfirming(true)}>Cancel…</button>` : null}
          ${
            s.state === 'active' && confirming
              ? html`<${Dialog}
                  id="cancel-subscription"
                  title="Cancel this subscription?"
                  onClose=${() => setConfirming(false)}
                >
                  <p>
                    It stops watching for ${waitsFor(s)}. The hub gets one signal saying it was cancelled, and nothing
                    more for it.
                  </p>
                  ${s.profile ? html`<p class="muted">Cancelled under the profile “${s.profile}”, the connection it was opened with.</p>` : null}
                  <div class="toolbar">
                    <button type="button" class="danger" onClick=${() => cancel(s)}>Cancel the subscription</button>
                    <button type="button" data-safe onClick=${() => setConfirming(false)}>Keep watching</button>
                  </div>
                <//>`
              : null
          }`}
    />
    ${message?.kind === 'ok' ? html`<p class="state ok" role="status" tabindex="-1" ref=${outcome}>${message.text}</p>` : null}
    ${message?.kind === 'error' ? html`<${Failed} message=${message.text} />` : null}
  </div>`;
}

export function Subscriptions() {
  const subscriptions = useCall<SubscriptionListView>('subscriptions.list', undefined, 'subscriptions', 10_000);
  const [open, setOpen] = useState<string | undefined>();
  return html`<section aria-labelledby="subscriptions-title">
    <h2 id="subscriptions-title" tabindex="-1">Gateway subscriptions</h2>
    <${Loaded}
      call=${subscriptions}
      what="subscriptions"
      render=${(data: SubscriptionListView) => {
        const list = data.items;
        if (list.length === 0) {
          return html`<${Empty}
            ><p>
              No subscriptions. The hub opens one when it waits for checks, a merge, a review or a run; each ends with
              one signal (when its event happens or it is cancelled) or expires within a week.
            </p><//
          >`;
        }
        return html`<table class="subscriptions">
            <${ColumnHeads}
              names=${['Watching for', 'Repository', 'Target', 'State', 'Signal', 'Opened', 'Expires']}
              hidden="Details"
            />
            <tbody>
              ${list.map(
                (s) =>
                  html`<tr key=${s.id} data-subscription=${s.id}>
                      <td>${KIND_LABELS[s.kind] ?? s.kind}</td>
                      <td>${s.repo}</td>
                      <td><code>${s.target}</code></td>
                      <td>
                        <span class=${`badge state-${s.state}`}>${s.state}</span
                        >${s.ended_at ? html` <span class="muted">${formatTime(s.ended_at)}</span>` : null}
                      </td>
                      <td>${s.signal}${s.signal_attempts > 1 ? ` (${s.signal_attempts} attempts)` : ''}</td>
                      <td>${formatTime(s.created_at)}</td>
                      <td>${formatTime(s.expires_at)}</td>
                      <td>
                        <button
                          type="button"
                          aria-expanded=${open === s.id}
                          aria-label=${`${open === s.id ? 'Hide details' : 'Details'} of the subscription to ${KIND_LABELS[s.kind] ?? s.kind} in ${s.repo}`}
                          onClick=${() => setOpen(open === s.id ? undefined : s.id)}
                        >
                          ${open === s.id ? 'Hide details' : 'Details'}
                        </button>
                      </td>
                    </tr>
                    ${
                      open === s.id
                        ? html`<tr key=${`${s.id}-detail`} class="detail-row">
                            <td colspan="8">
                              <${SubscriptionDetail}
                                id=${s.id}
                                profile=${s.profile}
                                onChanged=${subscriptions.reload}
                              />
                            </td>
                          </tr>`
                        : null
                    }`,
              )}
            </tbody>
          </table>
          ${data.total > list.length ? html`<p class="muted">Showing the newest ${list.length} of ${data.total}.</p>` : null}`;
      }}
    />
  </section>`;
}

/** Moves the focus to the safe choice of an inline question when it appears (a stable ref: only on mount). */
const focusOnMount = (el: HTMLElement | null) => el?.focus();

/** A connection being typed: its profile and its token, which `takeToken` hands over and clears at once. */
export function useTokenDraft(firstProfile: string) {
  const [profile, setProfile] = useState(firstProfile);
  const [token, setToken] = useState('');
  const takeToken = () => {
    setToken(''); // the secret leaves the page's state at once, whatever happens next
    return token.trim();
  };
  return { profile, setProfile, token, setToken, takeToken };
}

/** A connection's profile and token inputs (the token never echoed, never spell-checked); the Connections page and Get started share them. */
export function TokenFields({
  names,
  draft,
}: {
  names: [profile: string, token: string];
  draft: ReturnType<typeof useTokenDraft>;
}) {
  return html`
    <label
      >Profile
      <input
        name=${names[0]}
        required
        value=${draft.profile}
        onInput=${(e: Event) => draft.setProfile((e.target as HTMLInputElement).value)}
    /></label>
    <label
      >Token
      <input
        name=${names[1]}
        type="password"
        autocomplete="off"
        spellcheck=${false}
        required
        value=${draft.token}
        onInput=${(e: Event) => draft.setToken((e.target as HTMLInputElement).value)}
      />
    </label>
  `;
}

export function Connections() {
  const connections = useCall<ConnectionList>('connections.list', undefined, 'connections');
  const draft = useTokenDraft('');
  const { profile } = draft;
  const { outcome, attempt } = useOutcome();
  const [confirming, setConfirming] = useState<string | undefined>();

  const add = (e: Event) => {
    e.preventDefault();
    const secret = draft.takeToken();
    return attempt(async () => {
      await call('connections.put', { profile: profile.trim(), token: secret });
      draft.setProfile('');
      connections.reload();
      return `Saved the token for profile “${profile.trim()}”. The identity service keeps it encrypted; it is never shown again.`;
    });
  };
  const remove = (name: string) => {
    setConfirming(undefined);
    return attempt(async () => {
      await call('connections.remove', { profile: name });
      connections.reload();
      return `Removed the connection of profile “${name}”.`;
    });
  };

  return html`<section aria-labelledby="connections-title">
    <h2 id="connections-title" tabindex="-1">Platform connections</h2>
    <${Loaded}
      call=${connections}
      what="connections"
      render=${(data: ConnectionList) => {
        const list = data.connections;
        if (list.length === 0)
          return html`<${Empty}
            ><p>
              No connections. Add a GitHub fine-grained personal access token below so the gateway can act for you.
            </p><//
          >`;
        return html`<table class="connections">
          <${ColumnHeads} names=${['Profile', 'Kind', 'Updated']} hidden="Actions" />
          <tbody>
            ${list.map(
              (c) =>
                html`<tr key=${c.profile}>
                  <td>${c.profile}</td>
                  <td>${c.kind === 'token' ? 'personal access token' : 'app installation'}</td>
                  <td>${formatTime(c.updated_at)}</td>
                  <td class="actions">
                    ${
                      confirming === c.profile
                        ? html`<span>The token cannot be recovered. </span>
                            <button
                              type="button"
                              onClick=${() => remove(c.profile)}
                              aria-label=${`Confirm removing the connection of ${c.profile}`}
                            >
                              Remove for good
                            </button>
                            <button
                              type="button"
                              data-safe
                              ref=${focusOnMount}
                              onClick=${() => setConfirming(undefined)}
                            >
                              Keep it
                            </button>`
                        : html`<button
                            type="button"
                            onClick=${() => setConfirming(c.profile)}
                            aria-label=${`Remove the connection of ${c.profile}`}
                          >
                            Remove
                          </button>`
                    }
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>`;
      }}
    />
    <form class="add-connection" onSubmit=${add}>
      <h3>Add or replace a token</h3>
      <${TokenFields} names=${['profile', 'token']} draft=${draft} />
      <button type="submit">Save token</button>
      <p class="muted">The token goes to the identity service, which stores it encrypted. It is never shown again.</p>
    </form>
    <${OutcomeLine} said=${outcome} />
  </section>`;
}
