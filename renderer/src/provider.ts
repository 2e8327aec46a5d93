/** The chat-model provider: CLI found, signed in or not, the lockdown lists (tools, MCP servers, hooks), the models, and how it streams. */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { ProviderStatus, ProviderStreamView } from '../../main/console/answers.ts';
import type { LockdownCheck, LoginCheck, StreamMode as Mode } from '../../services/model-provider/shapes.ts';
import { Empty, Loaded, formatTime, useCall } from './states.ts';
import { ActionAnswer, type Outcome } from './outcome.ts';
import { call } from './transport.ts';

const PROBE_RUNNING =
  'the startup probe is still running. It can take up to two minutes; this page refreshes by itself.';

function lockdownText(lockdown: LockdownCheck): string {
  if (lockdown.ok) return 'on: no tools, no MCP servers, no hooks';
  if (lockdown.state === 'pending') return `not confirmed yet: ${PROBE_RUNNING}`;
  return `not confirmed (${lockdown.state}). ${lockdown.detail}`;
}

function loginText(login: LoginCheck, lockdown: LockdownCheck): string {
  if (login.state === 'signed_in') return 'yes';
  if (login.state === 'not_signed_in') {
    return `no. ${login.detail ?? 'Run the CLI once in a terminal and sign in (/login).'} The provider notices within a minute once you have.`;
  }
  if (lockdown.state === 'pending') return `not known yet: ${PROBE_RUNNING}`;
  if (lockdown.state === 'no_cli') return 'not known: there is no CLI to ask (see above).';
  if (lockdown.state === 'not_ok')
    return 'not known: the probe stopped when the CLI loaded what it must not (see Lockdown).';
  return 'not known: the probe could not tell; see the provider\u2019s log in the Services panel.';
}

function List({ items, none }: { items: string[]; none: string }) {
  if (items.length === 0) return html`<span class="ok-text">${none}</span>`;
  return html`<ul class="loaded-list">
    ${items.map((t) => html`<li key=${t}><code>${t}</code></li>`)}
  </ul>`;
}

/** Each of the provider's stream modes in words, in the order offered (the compiler asks for every mode). */
const STREAM_TEXT: Record<Mode, string> = {
  whole: 'the whole reply at once, when the CLI has finished',
  deltas: 'the words as the CLI writes them',
};
const MODES = Object.keys(STREAM_TEXT) as Mode[];

/**
 * The stream mode as a choice of two, the one in force checked (never a button named after the mode it is
 * not in): the setting, what the running provider uses, and the restart that applies a new choice.
 */
export function StreamMode({ view, changed }: { view: ProviderStreamView; changed: () => void }) {
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState<Outcome>();
  // The choice just made shows at once, before the saved setting is read back.
  const [picked, setPicked] = useState<Mode | undefined>();
  const setting = picked ?? view.setting;
  const act = async (method: string, params: unknown, done: string) => {
    setBusy(true);
    setSaid(undefined);
    try {
      await call(method, params);
      setSaid({ kind: 'ok', text: done });
    } catch (err) {
      setSaid({ kind: 'error', text: (err as Error).message });
    } finally {
      setBusy(false);
      changed();
    }
  };
  const pending = view.running !== null && view.running !== setting && !view.fromEnvironment;
  return html`<div data-check="stream" class="stream-mode">
    <fieldset disabled=${busy || view.fromEnvironment}>
      <legend>Streamed replies send</legend>
      ${MODES.map(
        (mode) =>
          html`<label key=${mode} class="choice"
            ><input
              type="radio"
              name="provider-stream"
              value=${mode}
              checked=${setting === mode}
              onChange=${() => {
                setPicked(mode);
                void act(
                  'provider.setStream',
                  { mode },
                  `Chosen: ${STREAM_TEXT[mode]}. It applies when the provider restarts.`,
                );
              }}
            />
            ${STREAM_TEXT[mode]}</label
          >`,
      )}
    </fieldset>
    <p class="muted">
      ${
        view.fromEnvironment
          ? 'Fixed by the environment the app started from (its MODELPROV_STREAM); change it there.'
          : view.running === null
            ? 'The provider uses it once it runs.'
            : `The running provider sends ${STREAM_TEXT[view.running]}.`
      }
      ${
        pending
          ? html` <button
              type="button"
              disabled=${busy}
              onClick=${() =>
                act('services.restart', { name: 'model-provider' }, 'Restarted the provider with your choice.')}
            >
              Restart the provider now
            </button>`
          : null
      }
    </p>
    <${ActionAnswer} said=${said} />
  </div>`;
}

export function Provider() {
  const status = useCall<ProviderStatus>('provider.status', undefined, 'provider', 15_000);
  return html`<section aria-labelledby="provider-title">
    <h2 id="provider-title" tabindex="-1">Chat-model provider</h2>
    <${Loaded}
      call=${status}
      what="the provider's status"
      render=${({ ready, models, stream }: ProviderStatus) => {
        const { cli, lockdown, login } = ready.checks;
        const modelIds = models.data.map((m) => m.id);
        return html`<dl class="provider">
            <dt>Ready</dt>
            <dd data-check="ready">${ready.ready ? 'yes: completions work now' : 'no: see the checks below'}</dd>
            <dt>CLI</dt>
            <dd data-check="cli">
              ${cli.ok ? html`found at <code>${cli.path}</code>` : html`not found. ${cli.detail}`}
            </dd>
            <dt>Signed in</dt>
            <dd data-check="login">${loginText(login, lockdown)}</dd>
            <dt>Lockdown</dt>
            <dd data-check="lockdown">${lockdownText(lockdown)}</dd>
            <dt>Tools loaded</dt>
            <dd data-check="tools"><${List} items=${lockdown.tools} none="none" /></dd>
            <dt>MCP servers loaded</dt>
            <dd data-check="mcp"><${List} items=${lockdown.mcp_servers} none="none" /></dd>
            <dt>Hooks run</dt>
            <dd data-check="hooks"><${List} items=${lockdown.hooks} none="none" /></dd>
            <dt>Probed</dt>
            <dd>${lockdown.probed_at ? formatTime(lockdown.probed_at) : 'not yet'}</dd>
            <dt>Streamed replies</dt>
            <dd><${StreamMode} view=${stream} changed=${status.reload} /></dd>
          </dl>
          <h3>Models</h3>
          ${
            modelIds.length === 0
              ? html`<${Empty}
                  ><p>
                    The provider lists no models. Restart it in the Services panel; if the list stays empty, see its log
                    there.
                  </p><//
                >`
              : html`<ul class="models">
                  ${modelIds.map((id) => html`<li key=${id}><code>${id}</code></li>`)}
                </ul>`
          }`;
      }}
    />
  </section>`;
}
