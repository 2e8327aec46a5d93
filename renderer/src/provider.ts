/** The chat-model provider: CLI found, signed in or not, the lockdown lists, and the models. */
import { html } from 'htm/preact';
import { Empty, Loaded, formatTime, itemsOf, useCall } from './states.ts';

interface Readiness {
  ready?: boolean;
  checks?: {
    cli?: { ok?: boolean; path?: string | null; detail?: string };
    lockdown?: { ok?: boolean; state?: string; tools?: string[]; mcp_servers?: string[]; hooks?: string[]; probed_at?: string | null; detail?: string };
    login?: { ok?: boolean; state?: string; detail?: string };
  };
}

function List({ items, none }: { items: string[] | undefined; none: string }) {
  if (!items || items.length === 0) return html`<span class="ok-text">${none}</span>`;
  return html`<ul class="loaded-list">${items.map((t) => html`<li key=${t}><code>${t}</code></li>`)}</ul>`;
}

export function Provider() {
  const [load, reload] = useCall<{ ready: Readiness; models: unknown }>('provider.status', undefined, 'provider', 15_000);
  return html`<section aria-labelledby="provider-title">
    <h2 id="provider-title">Chat-model provider</h2>
    <${Loaded}
      load=${load}
      what="the provider's status"
      retry=${reload}
      render=${({ ready, models }: { ready: Readiness; models: unknown }) => {
        const cli = ready.checks?.cli;
        const lockdown = ready.checks?.lockdown;
        const login = ready.checks?.login;
        const modelIds = itemsOf<{ id: string }>(models, 'data').map((m) => m.id);
        return html`<dl class="provider">
            <dt>Ready</dt>
            <dd data-check="ready">${ready.ready ? 'yes: completions work now' : 'no: see the checks below'}</dd>
            <dt>CLI</dt>
            <dd data-check="cli">${cli?.ok ? html`found at <code>${cli.path ?? ''}</code>` : html`not found. ${cli?.detail ?? 'Install the CLI or set MODELPROV_CLI_BINARY.'}`}</dd>
            <dt>Signed in</dt>
            <dd data-check="login">${login?.state === 'signed_in' ? 'yes' : login?.state === 'not_signed_in' ? `no. ${login.detail ?? 'Run the CLI once in a terminal and sign in.'}` : lockdown?.state === 'pending' ? 'not known yet (the startup probe has not finished)' : 'not known: the probe could not tell; see the provider\u2019s log in the Services panel'}</dd>
            <dt>Lockdown</dt>
            <dd data-check="lockdown">${lockdown?.ok ? 'on: no tools, no MCP servers' : `not confirmed (${lockdown?.state ?? 'unknown'}). ${lockdown?.detail ?? ''}`}</dd>
            <dt>Tools loaded</dt>
            <dd data-check="tools"><${List} items=${lockdown?.tools} none="none" /></dd>
            <dt>MCP servers loaded</dt>
            <dd data-check="mcp"><${List} items=${lockdown?.mcp_servers} none="none" /></dd>
            <dt>Probed</dt>
            <dd>${formatTime(lockdown?.probed_at ?? undefined)}</dd>
          </dl>
          <h3>Models</h3>
          ${modelIds.length === 0
            ? html`<${Empty}><p>The provider lists no models.</p><//>`
            : html`<ul class="models">${modelIds.map((id) => html`<li key=${id}><code>${id}</code></li>`)}</ul>`}`;
      }}
    />
  </section>`;
}
