/**
 * Settings: what forgetting does (the person's own choice, read by the persona store), the default lifetime
 * of hub credentials, the provider's streaming, and in the desktop app launch at login, notifications and
 * the log folder. Each choice is saved as it is made, and says so beside it.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import {
  HUB_CREDENTIAL_DAYS,
  type DesktopSettingsView,
  type ForgettingView,
  type SettingsView,
} from '../../common/contract.ts';
import type { ProviderStatus } from '../../main/console/answers.ts';
import { ActionAnswer, type Outcome } from './outcome.ts';
import { StreamMode } from './provider.ts';
import { Loaded, useCall } from './states.ts';
import { call } from './transport.ts';

type Mode = ForgettingView['defaults']['mode'];
const MODE_WORDS: Record<Mode, string> = {
  keep: 'Keep it: a forgotten entry leaves every answer but stays in the file',
  destroy_after_grace: 'Destroy it after a grace period',
  destroy_now: 'Destroy it at once',
};
const GRACE_DAYS = [1, 7, 30] as const;
const days = (seconds: number) => Math.max(1, Math.round(seconds / 86_400));
const dayWords = (n: number) => `${n} day${n === 1 ? '' : 's'}`;

/** Runs a change and keeps what to say beside it. */
function useSave() {
  const [said, setSaid] = useState<Outcome>();
  const [busy, setBusy] = useState(false);
  const save = async (action: () => Promise<string>) => {
    setBusy(true);
    try {
      setSaid({ kind: 'ok', text: await action() });
    } catch (err) {
      setSaid({ kind: 'error', text: (err as Error).message });
    } finally {
      setBusy(false);
    }
  };
  return { said, busy, save };
}

function Forgetting({ view, changed }: { view: ForgettingView; changed: () => void }) {
  const { said, busy, save } = useSave();
  // What was just picked shows at once, before the saved choice is read back.
  const [picked, setPicked] = useState<{ mode?: Mode; gracePeriodDays?: number; keepReplacedValues?: boolean }>({});
  const mode = picked.mode ?? view.chosen.mode ?? view.defaults.mode;
  const grace = picked.gracePeriodDays ?? days(view.chosen.gracePeriodSeconds ?? view.defaults.gracePeriodSeconds);
  const keepReplaced = picked.keepReplacedValues ?? view.chosen.keepReplacedValues ?? view.defaults.keepReplacedValues;
  const choose = (next: { mode?: Mode; gracePeriodDays?: number; keepReplacedValues?: boolean }) => {
    setPicked({ ...picked, ...next });
    return save(async () => {
      const chosen = {
        mode: next.mode ?? view.chosen.mode ?? null,
        gracePeriodDays:
          next.gracePeriodDays ?? (view.chosen.gracePeriodSeconds ? days(view.chosen.gracePeriodSeconds) : null),
        keepReplacedValues: next.keepReplacedValues ?? view.chosen.keepReplacedValues ?? null,
      };
      await call('settings.setForgetting', chosen);
      changed();
      if (next.keepReplacedValues !== undefined)
        return next.keepReplacedValues
          ? 'Saved: the change log keeps what each change replaces from now on.'
          : 'Saved: the change log keeps no replaced values from now on.';
      const m = chosen.mode ?? view.defaults.mode;
      return `Saved: forgetting now ${m === 'keep' ? 'keeps entries' : m === 'destroy_now' ? 'destroys entries at once' : `destroys entries after ${dayWords(chosen.gracePeriodDays ?? grace)}`}. The persona store applies it to the next forget.`;
    });
  };
  if (!view.available)
    return html`<section class="settings-group" aria-labelledby="forgetting-title">
      <h3 id="forgetting-title">Forgetting</h3>
      <p>${view.why}</p>
      <p class="muted">
        This installation’s own:
        ${MODE_WORDS[view.defaults.mode].toLowerCase()}${view.defaults.mode === 'destroy_after_grace' ? ` (${dayWords(days(view.defaults.gracePeriodSeconds))})` : ''}.
      </p>
    </section>`;
  return html`<section class="settings-group" aria-labelledby="forgetting-title">
    <h3 id="forgetting-title">Forgetting</h3>
    <p>What happens when you or the assistant forget a field or a note. Every Forget dialog says which applies.</p>
    <fieldset disabled=${busy}>
      <legend>When an entry is forgotten</legend>
      ${(Object.keys(MODE_WORDS) as Mode[]).map(
        (m) =>
          html`<label key=${m} class="choice"
            ><input
              type="radio"
              name="forget-mode"
              value=${m}
              checked=${mode === m}
              onChange=${() => choose({ mode: m })}
            />
            ${MODE_WORDS[m]}${m === view.defaults.mode ? ' (this installation\u2019s default)' : ''}</label
          >`,
      )}
      <label class=${mode === 'destroy_after_grace' ? 'indent' : 'indent muted'}
        >Grace period
        <select
          name="grace-days"
          value=${String(grace)}
          disabled=${mode !== 'destroy_after_grace'}
          onChange=${(e: Event) => choose({ gracePeriodDays: Number((e.target as HTMLSelectElement).value) })}
        >
          ${[...new Set([...GRACE_DAYS, grace])].sort((a, b) => a - b).map((d) => html`<option key=${d} value=${String(d)}>${dayWords(d)}</option>`)}
        </select>
      </label>
    </fieldset>
    <label class="choice"
      ><input
        type="checkbox"
        name="keep-replaced"
        checked=${keepReplaced}
        disabled=${busy}
        onChange=${(e: Event) => choose({ keepReplacedValues: (e.target as HTMLInputElement).checked })}
      />
      Keep what each change replaces, so the change log shows before → after</label
    >
    <p class="muted">
      Kept entries are listed on each persona’s page, where you can destroy them. A destroyed entry leaves no trace on
      disk.
    </p>
    <${ActionAnswer} said=${said} />
  </section>`;
}

function HubCredentials({ chosen, changed }: { chosen: number | null; changed: () => void }) {
  const { said, busy, save } = useSave();
  return html`<section class="settings-group" aria-labelledby="credentials-title">
    <h3 id="credentials-title">Hub credentials</h3>
    <label
      >A new hub credential expires after
      <select
        name="hub-credential-days"
        disabled=${busy}
        value=${chosen === null ? 'never' : String(chosen)}
        onChange=${(e: Event) => {
          const value = (e.target as HTMLSelectElement).value;
          const next = value === 'never' ? null : Number(value);
          void save(async () => {
            await call('settings.setHubCredentialDays', { days: next });
            changed();
            return next === null
              ? 'Saved: new hub credentials never expire unless you pick a date when you make one.'
              : `Saved: new hub credentials expire after ${dayWords(next)}; the app tells you a week before.`;
          });
        }}
      >
        ${HUB_CREDENTIAL_DAYS.map((d) => html`<option key=${d} value=${String(d)}>${dayWords(d)}</option>`)}
        <option value="never">never</option>
      </select>
    </label>
    <p class="muted">You can still choose another lifetime each time you make one, on Connect a hub.</p>
    <${ActionAnswer} said=${said} />
  </section>`;
}

const NOTICES: [keyof DesktopSettingsView['notifications'], string][] = [
  ['serviceGaveUp', 'When a service gives up'],
  ['signalFailed', 'When a signal fails for good'],
  ['cliSignedOut', 'When the CLI signs out'],
  ['credentialExpiring', 'A week before a hub credential expires'],
];

function Desktop({ view, changed }: { view: DesktopSettingsView | null; changed: () => void }) {
  const { said, busy, save } = useSave();
  const set = (patch: object, text: string) =>
    save(async () => {
      await call('settings.setDesktop', patch);
      changed();
      return text;
    });
  const openFolder = () => save(async () => (await call<{ message: string }>('services.openLogFolder')).message);
  if (!view)
    return html`<section class="settings-group" aria-labelledby="desktop-title">
      <h3 id="desktop-title">Desktop app</h3>
      <p>
        Launch at login and notifications belong to the desktop app; this console runs in a browser. The tray’s menu has
        them too.
      </p>
      <button type="button" onClick=${openFolder}>Where are the log files?</button>
      <${ActionAnswer} said=${said} />
    </section>`;
  return html`<section class="settings-group" aria-labelledby="desktop-title">
    <h3 id="desktop-title">Desktop app</h3>
    <label class="choice"
      ><input
        type="checkbox"
        name="launch-at-login"
        checked=${view.launchAtLogin}
        disabled=${busy || Boolean(view.launchAtLoginRefused)}
        onChange=${(e: Event) => {
          const on = (e.target as HTMLInputElement).checked;
          void set(
            { launchAtLogin: on },
            on ? 'Saved: the app starts when you sign in.' : 'Saved: the app no longer starts when you sign in.',
          );
        }}
      />
      Start the app when I sign in</label
    >
    ${view.launchAtLoginRefused ? html`<p class="muted">${view.launchAtLoginRefused}</p>` : null}
    <fieldset disabled=${busy}>
      <legend>Notifications</legend>
      ${NOTICES.map(
        ([kind, label]) =>
          html`<label key=${kind} class="choice"
            ><input
              type="checkbox"
              name=${`notify-${kind}`}
              checked=${view.notifications[kind]}
              onChange=${(e: Event) => {
                const on = (e.target as HTMLInputElement).checked;
                void set(
                  { notifications: { [kind]: on } },
                  `Saved: ${label.toLowerCase()}, ${on ? 'a notification' : 'no notification'}.`,
                );
              }}
            />
            ${label}</label
          >`,
      )}
    </fieldset>
    <p>The tray’s menu keeps shortcuts to these.</p>
    <button type="button" onClick=${openFolder}>Open the log folder</button>
    <${ActionAnswer} said=${said} />
  </section>`;
}

export function Settings() {
  const settings = useCall<SettingsView>('settings.get', undefined, 'settings');
  const provider = useCall<ProviderStatus>('provider.status', undefined, 'settings-provider');
  return html`<section class="settings" aria-labelledby="settings-title">
    <h2 id="settings-title" tabindex="-1">Settings</h2>
    <${Loaded}
      call=${settings}
      what="the settings"
      render=${(view: SettingsView) =>
        html`<${Forgetting} view=${view.forgetting} changed=${settings.reload} />
          <${HubCredentials} chosen=${view.hubCredentialDays} changed=${settings.reload} />
          <section class="settings-group" aria-labelledby="stream-title">
            <h3 id="stream-title">The provider’s streaming</h3>
            <${Loaded}
              call=${provider}
              what="the provider’s streaming"
              render=${(p: ProviderStatus) => html`<${StreamMode} view=${p.stream} changed=${provider.reload} />`}
            />
          </section>
          <${Desktop} view=${view.desktop} changed=${settings.reload} />`}
    />
  </section>`;
}
