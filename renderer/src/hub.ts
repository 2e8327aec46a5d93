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
import { Empty, Failed, Loaded, formatTime, useCall, type Call } from './states.ts';
import { ColumnHeads } from './table.ts';
import { call } from './transport.ts';

/** The console's stand-in for the credential in the settings, until one is made on this page. */
const PLACEHOLDER = /^<[^<>]*hub credential[^<>]*>$/;

function envText(service: HubService, credential: string | undefined): string {
  return service.env
    .map(([name, value]) => `${name}=${credential && PLACEHOLDER.test(value) ? credential : value}`)
    .join('\n');
}

/** Copies with the Clipboard API where the page may (loopback is a secure context), else selects the text for Ctrl-C. */
function CopyButton({ text, target, label }: { text: string; target: string; label: string }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied.');
    } catch {
      const pre = document.getElementById(target);
      if (pre) window.getSelection()?.selectAllChildren(pre);
      setSaid('Selected: press Ctrl-C (⌘-C) to copy.');
    }
  };
  return html`<button type="button" onClick=${copy} aria-label=${label}>Copy</button
    ><span class="muted copy-said" role="status">${said}</span>`;
}

export function Hub() {
  const hub = useCall<HubView>('hub.get', undefined, 'hub');
  const [fresh, setFresh] = useState<NewHubCredential | undefined>();
  const [label, setLabel] = useState('hub');
  const [days, setDays] = useState('never');
  const { outcome, setOutcome, attempt } = useOutcome();
  const [revoking, setRevoking] = useState<SessionCredentialView | undefined>();

  const create = (e: Event) => {
    e.preventDefault();
    setOutcome(undefined);
    // The new credential shows in its own box, so the outcome stays empty unless the call fails.
    return attempt(async () => {
      const made = { label: label.trim(), expiresInDays: days === 'never' ? null : Number(days) };
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
              value=${days}
              onChange=${(e: Event) => setDays((e.target as HTMLSelectElement).value)}
            >
              <option value="never">never</option>
              <option value="30">in 30 days</option>
              <option value="90">in 90 days</option>
              <option value="365">in a year</option>
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

/** Step 2: each service's address, token audience and settings, the new credential filled in while it is shown. */
function HubSettings({ hub, credential }: { hub: Call<HubView>; credential: string | undefined }) {
  return html`<${Loaded}
    call=${hub}
    what="the services’ addresses"
    render=${(view: HubView) =>
      html`<div class="hub-services">
        ${view.services.map(
          (s) =>
            html`<article
              key=${s.name}
              class="hub-service card"
              data-service=${s.name}
              aria-labelledby=${`hub-${s.name}`}
            >
              <h4 id=${`hub-${s.name}`}>${s.title}</h4>
              <dl class="card-members">
                <dt>Base URL</dt>
                <dd><code>${s.baseUrl}</code></dd>
                <dt>Token audience</dt>
                <dd>${s.audience ? html`<code>${s.audience}</code>` : 'none (it takes no token)'}</dd>
              </dl>
              <pre class="env" id=${`env-${s.name}`}>${envText(s, credential)}</pre>
              <${CopyButton}
                text=${envText(s, credential)}
                target=${`env-${s.name}`}
                label=${`Copy the settings for ${s.title}`}
              />
              <p class="muted">${s.note}</p>
            </article>`,
        )}
      </div>`}
  />`;
}

/** Step 3's list: the account's session credentials, the hub's with a Revoke each. */
function SessionCredentials({ hub, askRevoke }: { hub: Call<HubView>; askRevoke: (c: SessionCredentialView) => void }) {
  return html`<${Loaded}
    call=${hub}
    what="the session credentials"
    render=${(view: HubView) => {
      if (view.credentialsError) return html`<${Failed} message=${view.credentialsError} retry=${hub.reload} />`;
      const others = view.credentials.filter((c) => c.purpose === 'hub');
      return html`${others.length === 0 ? html`<${Empty}><p>No hub credentials yet. Make one above; it appears here, where you can revoke it.</p><//>` : null}
        <table class="credentials">
          <${ColumnHeads} names=${['Name', 'May', 'Made', 'Last used', 'Expires']} hidden="Actions" />
          <tbody>
            ${view.credentials.map(
              (c) =>
                html`<tr key=${c.id} data-credential=${c.id}>
                  <td>${c.current ? 'this app (the console and the tray use it)' : (c.label ?? c.id)}</td>
                  <td class="may" data-purpose=${c.purpose}>${c.may}</td>
                  <td>${formatTime(c.created_at)}</td>
                  <td>${c.last_used_at ? formatTime(c.last_used_at) : 'never'}</td>
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
