/**
 * Connect a hub: each service's base URL, the audience its tokens need and the lines for the hub's
 * environment, ready to copy; and the hub's session credential, made here (its secret shown this once,
 * then gone from the page) and revoked here.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { HubService } from '../../common/contract.ts';
import type { HubView, NewHubCredential, SessionCredentialView } from '../../main/console/answers.ts';
import { Dialog } from './dialog.ts';
import { OutcomeLine, useOutcome } from './outcome.ts';
import { CopyButton } from './copy.ts';
import { Empty, Failed, Loaded, formatTime, timeAgo, useCall, type Call } from './states.ts';
import { ColumnHeads } from './table.ts';
import { call } from './transport.ts';

/** The console's stand-in for the credential in the settings, until one is made on this page. */
const PLACEHOLDER = /^<[^<>]*hub credential[^<>]*>$/;

/**
 * A service's lines for the hub's environment: the new credential while it is shown; else, where a hub
 * credential exists, a reminder that its secret was shown once (never the placeholder that asks to make one).
 */
function envText(service: HubService, credential: string | undefined, existing: string | undefined): string {
  const stand = (value: string) =>
    credential ?? (existing ? `<the secret of \u201c${existing}\u201d, shown once when it was made>` : value);
  return service.env.map(([name, value]) => `${name}=${PLACEHOLDER.test(value) ? stand(value) : value}`).join('\n');
}

export function Hub() {
  const hub = useCall<HubView>('hub.get', undefined, 'hub');
  const [fresh, setFresh] = useState<NewHubCredential | undefined>();
  const [label, setLabel] = useState('hub');
  // Unset: the default of Settings (the answer's defaultDays).
  const [days, setDays] = useState<string | undefined>();
  const { outcome, setOutcome, attempt } = useOutcome();
  const [revoking, setRevoking] = useState<SessionCredentialView | undefined>();

  const create = (e: Event) => {
    e.preventDefault();
    setOutcome(undefined);
    // The new credential shows in its own box, so the outcome stays empty unless the call fails.
    return attempt(async () => {
      const made = {
        label: label.trim(),
        ...(days === undefined ? {} : { expiresInDays: days === 'never' ? null : Number(days) }),
      };
      setFresh(await call<NewHubCredential>('hub.createCredential', made));
      hub.reload();
      return undefined;
    });
  };
  const revoke = (c: SessionCredentialView) => {
    setRevoking(undefined);
    return attempt(async () => {
      await call('hub.revokeCredential', { id: c.id });
      if (fresh?.id === c.id) setFresh(undefined);
      hub.reload();
      return `Revoked “${c.label ?? c.id}”: identity refuses it from now on, and tokens made with it stop working within seconds.`;
    });
  };

  return html`<section aria-labelledby="hub-title">
    <h2 id="hub-title" tabindex="-1">Connect a hub</h2>
    <p>
      Your hub needs, for each service, its address and (for the persona store and the gateway) short-lived tokens it
      gets from the identity service with a session credential of its own. Make that credential below, then copy each
      block into the hub’s environment.
    </p>
    <ol class="steps">
      <li>
        <h3>Make a hub credential</h3>
        <p class="muted">
          It mints tokens for the persona store and the gateway, and nothing else: it cannot make or revoke credentials
          or change platform connections, and tokens made with it stop working within seconds of a revoke.
        </p>
        <form class="hub-credential" onSubmit=${create}>
          <label
            >Name
            <input
              name="label"
              required
              maxlength="100"
              value=${label}
              onInput=${(e: Event) => setLabel((e.target as HTMLInputElement).value)}
          /></label>
          <label
            >Expires
            <select
              name="expires"
              value=${days ?? defaultChoice(hub)}
              onChange=${(e: Event) => setDays((e.target as HTMLSelectElement).value)}
            >
              <option value="30">in 30 days</option>
              <option value="90">in 90 days</option>
              <option value="365">in a year</option>
              <option value="never">never</option>
            </select>
          </label>
          <button type="submit">Create hub credential</button>
        </form>
        ${
          fresh
            ? html`<div class="state ok fresh-credential" role="status">
                <p>
                  <strong>Copy it now: it is shown this once.</strong> The identity service keeps only its hash; if it
                  is lost, revoke it and make another.
                </p>
                <pre class="secret" id="fresh-credential">${fresh.credential}</pre>
                <${CopyButton} text=${fresh.credential} target="fresh-credential" label="Copy the hub credential" />
                <button type="button" onClick=${() => setFresh(undefined)}>I have saved it: hide it</button>
              </div>`
            : null
        }
      </li>
      <li>
        <h3>Give the hub these settings</h3>
        <${HubSettings} hub=${hub} credential=${fresh?.credential} />
      </li>
      <li>
        <h3>Session credentials of your account</h3>
        <${SessionCredentials} hub=${hub} askRevoke=${setRevoking} />
      </li>
    </ol>
    <${OutcomeLine} said=${outcome} />
    ${
      revoking
        ? html`<${Dialog} id="revoke" title="Revoke this credential?" onClose=${() => setRevoking(undefined)}>
            <p>
              A hub using “${revoking.label ?? revoking.id}” can no longer get tokens; the tokens it holds stop working
              within seconds.
            </p>
            <div class="toolbar">
              <button type="button" class="danger" onClick=${() => revoke(revoking)}>Revoke</button>
              <button type="button" data-safe onClick=${() => setRevoking(undefined)}>Keep it</button>
            </div>
          <//>`
        : null
    }
  </section>`;
}

/** Step 2: every service's settings in one block with one Copy, the new credential filled in while it is shown. */
function HubSettings({ hub, credential }: { hub: Call<HubView>; credential: string | undefined }) {
  return html`<${Loaded}
    call=${hub}
    what="the services’ addresses"
    render=${(view: HubView) => {
      const existing = view.credentials.find(
        (c) => c.purpose === 'hub' && (!c.expires_at || Date.parse(c.expires_at) > Date.now()),
      );
      const text = view.services
        .map((s) => `# ${s.title}\n${envText(s, credential, existing ? (existing.label ?? existing.id) : undefined)}`)
        .join('\n\n');
      return html`<pre class="env" id="hub-env">${text}</pre>
        <${CopyButton} text=${text} target="hub-env" label="Copy the hub’s settings" />
        <ul class="hub-notes">
          ${view.services.map(
            (s) =>
              html`<li key=${s.name} data-service=${s.name}>
                <strong>${s.title}</strong> (<code>${s.baseUrl}</code>): ${s.note}
              </li>`,
          )}
        </ul>`;
    }}
  />`;
}

/** What the default lifetime reads as in the form's choice. */
function defaultChoice(hub: Call<HubView>): string {
  if (hub.load.state !== 'done') return '90';
  const d = hub.load.data.defaultDays;
  return d === null ? 'never' : String(d);
}

/** Whether a hub has connected: the latest use of a hub credential, in words. */
function HubConnected({ view }: { view: HubView }) {
  const used = view.credentials
    .filter((c) => c.purpose === 'hub' && c.last_used_at)
    .sort((a, b) => Date.parse(b.last_used_at!) - Date.parse(a.last_used_at!))[0];
  return used
    ? html`<p class="state ok hub-connected">
        A hub has connected with “${used.label ?? used.id}”: last call ${timeAgo(used.last_used_at)}.
      </p>`
    : html`<p class="muted hub-connected">No hub has used a hub credential yet.</p>`;
}

/** Step 3's list: the account's session credentials, the hub's with a Revoke each. */
function SessionCredentials({ hub, askRevoke }: { hub: Call<HubView>; askRevoke: (c: SessionCredentialView) => void }) {
  return html`<${Loaded}
    call=${hub}
    what="the session credentials"
    render=${(view: HubView) => {
      if (view.credentialsError) return html`<${Failed} message=${view.credentialsError} retry=${hub.reload} />`;
      const others = view.credentials.filter((c) => c.purpose === 'hub');
      return html`<${HubConnected}
          view=${view}
        />${others.length === 0 ? html`<${Empty}><p>No hub credentials yet. Make one above; it appears here, where you can revoke it.</p><//>` : null}
        <table class="credentials">
          <${ColumnHeads} names=${['Name', 'May', 'Made', 'Last call', 'Expires']} hidden="Actions" />
          <tbody>
            ${view.credentials.map(
              (c) =>
                html`<tr key=${c.id} data-credential=${c.id}>
                  <td>${c.current ? 'this app (the console and the tray use it)' : (c.label ?? c.id)}</td>
                  <td class="may" data-purpose=${c.purpose}>${c.may}</td>
                  <td>${formatTime(c.created_at)}</td>
                  <td>${c.last_used_at ? `${timeAgo(c.last_used_at)} (${formatTime(c.last_used_at)})` : 'never'}</td>
                  <td>${c.expires_at ? formatTime(c.expires_at) : 'never'}</td>
                  <td class="actions">
                    ${c.purpose === 'owner' ? (c.current ? null : html`<span class="muted">revoked at the command line</span>`) : html`<button type="button" onClick=${() => askRevoke(c)} aria-label=${`Revoke ${c.label ?? c.id}`}>Revoke…</button>`}
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>`;
    }}
  />`;
}
