/**
 * Get started: the guided path from a new install to a connected hub, shown at the first launch and
 * reachable from the sidebar later. Three steps (sign in to the CLI, connect GitHub, make a hub
 * credential), each ticked only when the service confirms it, each with the one thing to do next.
 */
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type {
  ConnectionSaved,
  CliSignInStep,
  ConnectionTest,
  FirstRunView,
  GithubConnectionStep,
  HubCredentialStep,
  TerminalOpened,
} from '../../common/contract.ts';
import { OutcomeLine, useOutcome, type Outcome } from './outcome.ts';
import { TokenFields, useTokenDraft } from './platform.ts';
import { CopyButton } from './copy.ts';
import { Loaded, formatTime, useCall } from './states.ts';
import { ColumnHeads } from './table.ts';
import { call } from './transport.ts';
import { plural } from './words.ts';

function Tick({ done }: { done: boolean }) {
  return html`<span class=${done ? 'tick done' : 'tick'} aria-hidden="true">${done ? '✓' : ''}</span>`;
}

function StepHead({ n, title, done, text }: { n: number; title: string; done: boolean; text: string }) {
  return html`<div class="step-head">
      <${Tick} done=${done} />
      <h3>${n}. ${title} <span class="visually-hidden">${done ? '(done)' : '(to do)'}</span></h3>
    </div>
    <p class="step-state" data-done=${String(done)}>${text}</p>`;
}

export function FirstRun({ open }: { open: (hash: string) => void }) {
  const [version, setVersion] = useState(0);
  const steps = useCall<FirstRunView>('firstRun.get', undefined, 'first-run', 5_000, version);
  const { outcome: said, attempt } = useOutcome();
  const setDone = async (done: boolean) => {
    await attempt(async () => {
      await call<FirstRunView>('firstRun.setDone', { done });
      return done
        ? 'The guide will not open by itself again; it stays here under Get started.'
        : 'The guide opens by itself at the next launch.';
    });
    setVersion((v) => v + 1);
  };
  return html`<section class="first-run" aria-labelledby="first-run-title">
    <h2 id="first-run-title" tabindex="-1">Get started</h2>
    <p>Three steps connect your hub to these services. Each is ticked when the service itself confirms it.</p>
    <${Loaded}
      call=${steps}
      what="the first-run steps"
      render=${(view: FirstRunView) => {
        const [signIn, github, credential] = view.steps;
        const left = view.steps.filter((s) => !s.done).length;
        return html`<p class="first-run-summary" role="status">
            ${left === 0 ? 'All three steps are done: your hub can connect.' : `${plural(left, 'step')} to go.`}
          </p>
          <ol class="first-run-steps">
            <li data-step="cli-sign-in" class=${signIn.done ? 'done' : undefined}>
              <${SignInStep} step=${signIn} changed=${() => setVersion((v) => v + 1)} />
            </li>
            <li data-step="github-connection" class=${github.done ? 'done' : undefined}>
              <${GithubConnectionStep} step=${github} changed=${() => setVersion((v) => v + 1)} />
            </li>
            <li data-step="hub-credential" class=${credential.done ? 'done' : undefined}>
              <${CredentialStep} step=${credential} open=${open} />
            </li>
          </ol>
          <div class="toolbar">
            ${
              view.done
                ? html`<button type="button" onClick=${() => setDone(false)}>Show this guide at launch again</button>`
                : html`<button type="button" class=${left === 0 ? 'primary' : undefined} onClick=${() => setDone(true)}>
                    ${left === 0 ? 'Finish' : 'Skip for now'}
                  </button>`
            }
          </div>`;
      }}
    />
    <${OutcomeLine} said=${said} />
  </section>`;
}

function SignInStep({ step, changed }: { step: CliSignInStep; changed: () => void }) {
  const [said, setSaid] = useState<Outcome>();
  const [busy, setBusy] = useState(false);
  const recheck = async () => {
    setBusy(true);
    try {
      const now = await call<CliSignInStep>('firstRun.recheckSignIn');
      setSaid(
        now.done
          ? { kind: 'ok', text: 'Signed in: the provider confirmed it.' }
          : { kind: 'error', text: now.error ?? now.text },
      );
    } catch (err) {
      setSaid({ kind: 'error', text: (err as Error).message });
    }
    setBusy(false);
    changed();
  };
  const openTerminal = async () => {
    try {
      const r = await call<TerminalOpened>('firstRun.openTerminal');
      setSaid({ kind: r.opened ? 'ok' : 'error', text: r.message });
    } catch (err) {
      setSaid({ kind: 'error', text: (err as Error).message });
    }
  };
  return html`<${StepHead} n=${1} title="Sign in to the CLI" done=${step.done} text=${step.error ?? step.text} />
    ${
      step.done
        ? null
        : html`<p>The chat-model provider answers through the CLI, which signs in on its own. In a terminal, run</p>
            <pre class="command" tabindex="0" id="cli-command" aria-label="The command to run">${step.command}</pre>
            <${CopyButton} text=${step.command} target="cli-command" label="Copy the command" />
            <p>then type <code>${step.then}</code> inside it and follow what it asks. Come back and check again.</p>
            <div class="toolbar">
              ${step.canOpenTerminal ? html`<button type="button" onClick=${openTerminal}>Open a terminal</button>` : null}
              <button type="button" class="primary" disabled=${busy} onClick=${recheck}>Check again</button>
            </div>`
    }
    <${OutcomeLine} said=${said} />`;
}

/** How a test's result reads, with when it was made. */
function testWords(r: ConnectionTest): Outcome {
  const when = `(tested ${formatTime(r.at)})`;
  return r.ok
    ? {
        kind: 'ok',
        text: `Connected as ${r.login}${r.repositories === null ? '' : `, with access to ${plural(r.repositories, 'repository', 'repositories')}`}: the gateway reached GitHub with it ${when}.`,
      }
    : { kind: 'error', text: `${r.message} ${when}` };
}

function GithubConnectionStep({ step, changed }: { step: GithubConnectionStep; changed: () => void }) {
  const draft = useTokenDraft(step.connections[0] ?? 'default');
  const { profile } = draft;
  const [said, setSaid] = useState<Outcome>(step.lastTest ? testWords(step.lastTest) : undefined);
  // What is being done now, said while it runs (a test through the gateway can take seconds offline).
  const [working, setWorking] = useState<string | undefined>();
  const [keepIfFails, setKeepIfFails] = useState(false);
  const run = async (doing: string, action: () => Promise<Outcome>) => {
    setWorking(doing);
    setSaid(undefined);
    try {
      setSaid(await action());
    } catch (err) {
      setSaid({ kind: 'error', text: (err as Error).message });
    }
    setWorking(undefined);
    changed();
  };
  const test = (name: string) =>
    run(`Testing \u201c${name}\u201d with GitHub through the gateway\u2026`, async () =>
      testWords(await call<ConnectionTest>('firstRun.testConnection', { profile: name })),
    );
  // Opened without a test of the first connection since the app started: test it now, saying so.
  useEffect(() => {
    if (step.untested && step.connections[0] && !working) void test(step.connections[0]);
  }, [step.untested]);
  const save = (e: Event) => {
    e.preventDefault();
    const secret = draft.takeToken();
    const name = profile.trim();
    return run('Testing the token with GitHub through the gateway before keeping it\u2026', async () => {
      const r = await call<ConnectionSaved>('firstRun.saveConnection', { profile: name, token: secret, keepIfFails });
      const words = testWords(r)!;
      if (r.ok) return { kind: 'ok', text: `Saved \u201c${name}\u201d. ${words.text}` };
      return {
        kind: 'error',
        text: r.kept
          ? `Saved \u201c${name}\u201d as you asked, although its test failed: ${words.text}`
          : `Not saved, because its test failed: ${words.text} Check the token and paste it again, or tick \u201cKeep it even if the test fails\u201d.`,
      };
    });
  };
  const tokenHelp = html` <p>
      The repository gateway acts on GitHub with a fine-grained personal access token of yours. Make one on GitHub with
      these repository permissions, for the repositories the hub may use:
    </p>
    <table class="permissions">
      <${ColumnHeads} names=${['Permission', 'Access', 'Why the gateway needs it']} />
      <tbody>
        ${step.permissions.map(
          (p) =>
            html`<tr key=${p.name}>
              <td>${p.name}</td>
              <td>${p.access}</td>
              <td>${p.why}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    <p>
      <a class="button" href=${step.tokenUrl} target="_blank" rel="noopener noreferrer">Open GitHub’s token page</a>
    </p>
    <form class="add-connection" onSubmit=${save} aria-busy=${working ? 'true' : 'false'}>
      <${TokenFields} names=${['first-run-profile', 'first-run-token']} draft=${draft} />
      <label class="choice"
        ><input
          type="checkbox"
          name="keep-if-fails"
          checked=${keepIfFails}
          onChange=${(e: Event) => setKeepIfFails((e.target as HTMLInputElement).checked)}
        />
        Keep it even if the test fails (GitHub cannot be reached from here now)</label
      >
      <button type="submit" class=${step.done ? undefined : 'primary'} disabled=${working !== undefined}>
        Test and save
      </button>
    </form>`;
  return html`<${StepHead} n=${2} title="Connect GitHub" done=${step.done} text=${step.error ?? step.text} />
    ${
      step.done
        ? html`<details class="step-more">
            <summary>Add or replace a token</summary>
            ${tokenHelp}
          </details>`
        : tokenHelp
    }
    ${
      step.connections.length > 0
        ? html`<p class="muted">
            Saved connections: ${step.connections.join(', ')}.
            ${step.connections.map((c) => html`<button key=${c} type="button" disabled=${working !== undefined} onClick=${() => test(c)}>Test ${c}</button> `)}
          </p>`
        : null
    }
    <p class="working" role="status" aria-live="polite">
      ${working ? html`<span class="spinner" aria-hidden="true"></span> ${working}` : null}
    </p>
    <${OutcomeLine} said=${said} />`;
}

function CredentialStep({ step, open }: { step: HubCredentialStep; open: (hash: string) => void }) {
  return html`<${StepHead} n=${3} title="Make a hub credential" done=${step.done} text=${step.error ?? step.text} />
    <p>
      The hub signs in to these services with a session credential of its own, made and revoked on the Connect a hub
      page, which also lists the settings to give the hub.
    </p>
    <div class="toolbar">
      <button type="button" class=${step.done ? undefined : 'primary'} onClick=${() => open('hub')}>
        ${step.done ? 'Open Connect a hub' : 'Make a hub credential'}
      </button>
    </div>`;
}
