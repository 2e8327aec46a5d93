/**
 * The services panel: state, port, uptime, memory, last problem, actions, and a service's log, newest
 * line first, followed live unless paused, health probes hidden unless asked for.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { LogLine, ServiceView } from '../../main/common/contract.ts';
import { SERVICE_TITLES, type ServiceName } from '../../main/common/services.ts';
import { RUNNING_STATES as RUNNING, STATE_WORDS } from '../../main/common/states.ts';
import { ServiceActions, useServiceControl } from './service-actions.ts';
import { Empty, Failed, Loaded, formatBytes, formatDuration, formatTime, useCall } from './states.ts';
import { plural } from './words.ts';

/**
 * What the "Last problem" cell says: while a crashed service waits to restart, the crash and when it
 * restarts; once it runs again, when it last crashed and why; otherwise the supervisor's own sentence.
 */
export function problemText(s: ServiceView, now = Date.now()): string {
  const crash = s.lastCrash;
  if (s.state === 'backing-off' && crash) {
    const seconds = crash.restartAt ? Math.ceil((Date.parse(crash.restartAt) - now) / 1000) : undefined;
    const when = seconds === undefined ? 'soon' : seconds > 0 ? `in ${seconds} s` : 'now';
    return `Crashed at ${formatTime(crash.at)}: ${crash.reason}. Restarting ${when} (restart ${s.restarts + 1}).`;
  }
  if (['backing-off', 'crashed', 'gave-up', 'live', 'degraded'].includes(s.state) || !crash) return s.lastError ?? '';
  return `Last crash at ${formatTime(crash.at)}: ${crash.reason}. Restarted ${s.restarts === 1 ? 'once' : `${s.restarts} times`} since the app started.`;
}

export function Services({ logService, showLog }: { logService?: ServiceName; showLog: (name: ServiceName) => void }) {
  const [load, reload] = useCall<ServiceView[]>('services.list', undefined, 'services', 2_000);
  const control = useServiceControl(reload);
  const { busy, failure, act } = control;

  return html`<section aria-labelledby="services-title">
    <h2 id="services-title" tabindex="-1">Services</h2>
    <div class="toolbar">
      <button type="button" disabled=${busy !== undefined} onClick=${() => act('startAll')}>Start all</button>
      <button type="button" disabled=${busy !== undefined} onClick=${() => act('stopAll')}>Stop all</button>
    </div>
    ${failure ? html`<${Failed} message=${failure} />` : null}
    <${Loaded}
      load=${load}
      what="services"
      retry=${reload}
      render=${(list: ServiceView[]) => html`<table class="services">
        <thead><tr><th>Service</th><th>State</th><th>Port</th><th>Uptime</th><th>Memory</th><th>Restarts</th><th>Last problem</th><th><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>
          ${list.map(
            (s) => html`<tr key=${s.name} data-service=${s.name} class=${s.name === (logService ?? 'identity') ? 'selected' : undefined}>
              <td>${SERVICE_TITLES[s.name] ?? s.name}</td>
              <td><span class=${`badge state-${s.state}`} data-state=${s.state}>${STATE_WORDS[s.state] ?? s.state}</span></td>
              <td>${s.port}</td>
              <td>${RUNNING.has(s.state) ? formatDuration(s.uptimeMs) : '\u2014'}</td>
              <td>${formatBytes(s.memoryBytes)}</td>
              <td>${s.restarts}</td>
              <td class=${s.state === 'ready' && s.lastCrash ? 'last-error past' : 'last-error'}>${problemText(s)}</td>
              <td class="actions"><${ServiceActions} service=${s} control=${control} showLog=${showLog} /></td>
            </tr>`,
          )}
        </tbody>
      </table>`}
    />
    <${LogTail} key=${logService ?? 'identity'} service=${logService ?? 'identity'} />
  </section>`;
}

/** How many lines the log shows at most, newest first. */
const LOG_SIZES = [100, 200, 500] as const;
/** Requests the supervisor makes to see whether a service is up: every few seconds, so hidden unless asked for. */
const PROBE = /"(?:url|route|path)":"\/(?:healthy|ready)(?:\?[^"]*)?"/;

export function isProbe(text: string): boolean {
  return PROBE.test(text);
}

function LogTail({ service }: { service: ServiceName }) {
  const [draft, setDraft] = useState('');
  const [filter, setFilter] = useState('');
  const [size, setSize] = useState<number>(200);
  const [follow, setFollow] = useState(true);
  const [probes, setProbes] = useState(false);
  const [load, reload] = useCall<LogLine[]>(
    'services.logs',
    { name: service, filter: filter || undefined, limit: size },
    `logs:${service}:${filter}:${size}`,
    follow ? 2_000 : undefined,
  );
  const title = SERVICE_TITLES[service];
  return html`<section class="log-tail" aria-labelledby="log-title">
    <h3 id="log-title">Log of ${title}</h3>
    <form class="filters" onSubmit=${(e: Event) => (e.preventDefault(), setFilter(draft.trim()))}>
      <label>Only lines containing <input name="filter" value=${draft} onInput=${(e: Event) => setDraft((e.target as HTMLInputElement).value)} /></label>
      <button type="submit">Filter</button>
      <label>Lines
        <select name="log-size" value=${String(size)} onChange=${(e: Event) => setSize(Number((e.target as HTMLSelectElement).value))}>
          ${LOG_SIZES.map((n) => html`<option key=${n} value=${String(n)}>${n}</option>`)}
        </select>
      </label>
      <label class="check"><input type="checkbox" name="follow" checked=${follow} onChange=${(e: Event) => setFollow((e.target as HTMLInputElement).checked)} /> Follow new lines</label>
      <label class="check"><input type="checkbox" name="probes" checked=${probes} onChange=${(e: Event) => setProbes((e.target as HTMLInputElement).checked)} /> Show health probes</label>
      ${follow ? null : html`<button type="button" onClick=${reload}>Read again</button>`}
    </form>
    <${Loaded}
      load=${load}
      what="the log"
      retry=${reload}
      render=${(all: LogLine[]) => {
        const shown = (probes ? all : all.filter((l) => !isProbe(l.text))).slice().reverse();
        const hidden = all.length - (probes ? all.length : all.filter((l) => !isProbe(l.text)).length);
        const note = hidden > 0 ? html`<p class="muted log-note">${plural(hidden, 'health probe')} hidden; tick \u201cShow health probes\u201d to see them.</p>` : null;
        if (shown.length === 0) {
          return html`${note}<${Empty}><p>${filter ? `No lines contain \u201c${filter}\u201d. Clear the filter to see every line.` : 'No log lines yet. Start the service to see its output.'}</p><//>`;
        }
        return html`${note}<pre class="log" tabindex="0" aria-label=${`Log of ${title}, newest line first`}>${shown.map((l) => `${l.time} ${l.stream === 'stderr' ? '!' : ' '} ${readable(l.text)}\n`).join('')}</pre>`;
      }}
    />
  </section>`;
}

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
const QUIET = new Set(['level', 'time', 'service', 'name', 'pid', 'hostname', 'msg', 'req_id']);

/** A service's JSON log line as a person reads it: level, message, then the other members as name=value. */
export function readable(text: string): string {
  let line: Record<string, unknown>;
  try {
    line = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return text;
  }
  if (!line || typeof line !== 'object' || Array.isArray(line)) return text;
  const level = typeof line.level === 'number' ? (LEVELS[line.level] ?? String(line.level)) : '';
  const rest = Object.entries(line)
    .filter(([k]) => !QUIET.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return [level.padEnd(5), typeof line.msg === 'string' ? line.msg : '', ...rest].filter(Boolean).join(' ');
}
