/** The services panel: state, port, uptime, memory, last error, controls, and a log tail with a filter. */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { LogLine, ServiceView } from '../../main/common/contract.ts';
import { SERVICE_TITLES, type ServiceName } from '../../main/common/services.ts';
import { RUNNING_STATES as RUNNING, STATE_WORDS } from '../../main/common/states.ts';
import { Empty, Failed, Loaded, formatBytes, formatDuration, formatTime, useCall } from './states.ts';
import { call } from './transport.ts';

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

export function Services() {
  const [load, reload] = useCall<ServiceView[]>('services.list', undefined, 'services', 2_000);
  const [busy, setBusy] = useState<string | undefined>();
  const [failure, setFailure] = useState<string | undefined>();
  const [logService, setLogService] = useState<ServiceName>('identity');

  const act = async (verb: 'start' | 'stop' | 'restart' | 'startAll' | 'stopAll', name?: ServiceName) => {
    setBusy(name ? `${verb}:${name}` : verb);
    setFailure(undefined);
    try {
      await call(`services.${verb}`, name ? { name } : undefined);
    } catch (err) {
      setFailure((err as Error).message);
    } finally {
      setBusy(undefined);
      reload();
    }
  };

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
        <thead><tr><th>Service</th><th>State</th><th>Port</th><th>Uptime</th><th>Memory</th><th>Restarts</th><th>Last problem</th><th>Actions</th></tr></thead>
        <tbody>
          ${list.map(
            (s) => html`<tr key=${s.name} data-service=${s.name}>
              <td>${SERVICE_TITLES[s.name] ?? s.name}</td>
              <td><span class=${`badge state-${s.state}`} data-state=${s.state}>${STATE_WORDS[s.state] ?? s.state}</span></td>
              <td>${s.port}</td>
              <td>${RUNNING.has(s.state) ? formatDuration(s.uptimeMs) : '—'}</td>
              <td>${formatBytes(s.memoryBytes)}</td>
              <td>${s.restarts}</td>
              <td class=${s.state === 'ready' && s.lastCrash ? 'last-error past' : 'last-error'}>${problemText(s)}</td>
              <td class="actions">
                <button type="button" disabled=${busy !== undefined || RUNNING.has(s.state)} onClick=${() => act('start', s.name)} aria-label=${`Start ${s.name}`}>Start</button>
                <button type="button" disabled=${busy !== undefined || !RUNNING.has(s.state)} onClick=${() => act('stop', s.name)} aria-label=${`Stop ${s.name}`}>Stop</button>
                <button type="button" disabled=${busy !== undefined} onClick=${() => act('restart', s.name)} aria-label=${`Restart ${s.name}`}>Restart</button>
                <button type="button" class="link" onClick=${() => setLogService(s.name)} aria-label=${`Show the log of ${s.name}`}>Log</button>
              </td>
            </tr>`,
          )}
        </tbody>
      </table>`}
    />
    <${LogTail} service=${logService} />
  </section>`;
}

function LogTail({ service }: { service: ServiceName }) {
  const [draft, setDraft] = useState('');
  const [filter, setFilter] = useState('');
  const [load, reload] = useCall<LogLine[]>('services.logs', { name: service, filter: filter || undefined, limit: 200 }, `logs:${service}:${filter}`, 3_000);
  return html`<section class="log-tail" aria-labelledby="log-title">
    <h3 id="log-title">Log of ${SERVICE_TITLES[service]}</h3>
    <form class="filters" onSubmit=${(e: Event) => (e.preventDefault(), setFilter(draft.trim()))}>
      <label>Only lines containing <input name="filter" value=${draft} onInput=${(e: Event) => setDraft((e.target as HTMLInputElement).value)} /></label>
      <button type="submit">Filter</button>
    </form>
    <${Loaded}
      load=${load}
      what="the log"
      retry=${reload}
      render=${(lines: LogLine[]) =>
        lines.length === 0
          ? html`<${Empty}><p>${filter ? `No lines contain “${filter}”. Clear the filter to see every line.` : 'No log lines yet. Start the service to see its output.'}</p><//>`
          : html`<pre class="log">${lines.map((l) => `${l.time} ${l.stream === 'stderr' ? '!' : ' '} ${readable(l.text)}\n`).join('')}</pre>`}
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
