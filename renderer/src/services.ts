/**
 * The services panel: state, port, uptime, memory, last problem, actions, and a service's log, newest
 * line first, followed live unless paused, health probes hidden unless asked for.
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { LogLine, LogPage, ServiceView } from '../../common/contract.ts';
import { SERVICE_TITLES, type ServiceName } from '../../common/services.ts';
import { RUNNING_STATES as RUNNING, STATE_WORDS } from '../../common/states.ts';
import { CopyButton } from './copy.ts';
import { ActionAnswer, type Outcome } from './outcome.ts';
import { ServiceActions, useServiceControl } from './service-actions.ts';
import { ColumnHeads } from './table.ts';
import { call } from './transport.ts';
import { Empty, Failed, Loaded, formatBytes, formatDuration, formatTime, itemsOf, useCall } from './states.ts';

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
  const services = useCall<ServiceView[]>('services.list', undefined, 'services', 2_000);
  const control = useServiceControl(services.reload);
  const { busy, failure, act } = control;

  return html`<section aria-labelledby="services-title">
    <h2 id="services-title" tabindex="-1">Services</h2>
    <div class="toolbar">
      <button type="button" disabled=${busy !== undefined} onClick=${() => act('startAll')}>Start all</button>
      <button type="button" disabled=${busy !== undefined} onClick=${() => act('stopAll')}>Stop all</button>
    </div>
    ${failure ? html`<${Failed} message=${failure} />` : null}
    <${Loaded}
      call=${services}
      what="services"
      render=${(list: ServiceView[]) =>
        html`<table class="services">
          <${ColumnHeads}
            names=${['Service', 'State', 'Port', 'Uptime', 'Memory', 'Restarts', 'Last problem']}
            hidden="Actions"
          />
          <tbody>
            ${list.map(
              (s) =>
                html`<tr
                  key=${s.name}
                  data-service=${s.name}
                  class=${s.name === (logService ?? 'identity') ? 'selected' : undefined}
                >
                  <td>${SERVICE_TITLES[s.name] ?? s.name}</td>
                  <td>
                    <span class=${`badge state-${s.state}`} data-state=${s.state}
                      >${STATE_WORDS[s.state] ?? s.state}</span
                    >
                  </td>
                  <td>${s.port}</td>
                  <td>${RUNNING.has(s.state) ? formatDuration(s.uptimeMs) : '\u2014'}</td>
                  <td>${formatBytes(s.memoryBytes)}</td>
                  <td>${s.restarts}</td>
                  <td class=${s.state === 'ready' && s.lastCrash ? 'last-error past' : 'last-error'}>
                    ${problemText(s)}
                  </td>
                  <td class="actions"><${ServiceActions} service=${s} control=${control} showLog=${showLog} /></td>
                </tr>`,
            )}
          </tbody>
        </table>`}
    />
    <${LogTail} key=${logService ?? 'identity'} service=${logService ?? 'identity'} />
  </section>`;
}

/** How many lines a page of the log shows, newest first. */
const LOG_SIZES = [100, 200, 500] as const;

function LogTail({ service }: { service: ServiceName }) {
  const [draft, setDraft] = useState('');
  const [filter, setFilter] = useState('');
  const [size, setSize] = useState<number>(200);
  const [follow, setFollow] = useState(true);
  const [probes, setProbes] = useState(false);
  const [level, setLevel] = useState<'' | 'warn' | 'error'>('');
  const [folder, setFolder] = useState<Outcome>();
  // Older pages: a stack of `before` cursors; following applies to the newest page only.
  const [befores, setBefores] = useState<number[]>([]);
  const before = befores[befores.length - 1];
  const params = {
    name: service,
    limit: size,
    probes,
    ...(filter ? { filter } : {}),
    ...(level ? { level } : {}),
    ...(before === undefined ? {} : { before }),
  };
  const log = useCall<LogPage>(
    'services.logPage',
    params,
    `logs:${JSON.stringify(params)}`,
    follow && before === undefined ? 2_000 : undefined,
  );
  const title = SERVICE_TITLES[service];
  const restart = () => setBefores([]);
  return html`<section class="log-tail" aria-labelledby="log-title">
    <h3 id="log-title">Log of ${title}</h3>
    <form class="filters" onSubmit=${(e: Event) => (e.preventDefault(), setFilter(draft.trim()), restart())}>
      <label
        >Only lines containing
        <input name="filter" value=${draft} onInput=${(e: Event) => setDraft((e.target as HTMLInputElement).value)}
      /></label>
      <button type="submit">Filter</button>
      <label
        >Lines
        <select
          name="log-size"
          value=${String(size)}
          onChange=${(e: Event) => (setSize(Number((e.target as HTMLSelectElement).value)), restart())}
        >
          ${LOG_SIZES.map((n) => html`<option key=${n} value=${String(n)}>${n}</option>`)}
        </select>
      </label>
      <label
        >Level
        <select
          name="log-level"
          value=${level}
          onChange=${(e: Event) => (setLevel((e.target as HTMLSelectElement).value as '' | 'warn' | 'error'), restart())}
        >
          <option value="">every line</option>
          <option value="warn">warnings and errors</option>
          <option value="error">errors only</option>
        </select>
      </label>
      <label class="check"
        ><input
          type="checkbox"
          name="follow"
          checked=${follow}
          onChange=${(e: Event) => setFollow((e.target as HTMLInputElement).checked)}
        />
        Follow new lines</label
      >
      <label class="check"
        ><input
          type="checkbox"
          name="probes"
          checked=${probes}
          onChange=${(e: Event) => (setProbes((e.target as HTMLInputElement).checked), restart())}
        />
        Show probes (/healthy, /ready, /metrics)</label
      >
      ${follow && before === undefined ? null : html`<button type="button" onClick=${before === undefined ? log.reload : restart}>${before === undefined ? 'Read again' : 'Newest lines'}</button>`}
    </form>
    <${Loaded}
      call=${log}
      what="the log"
      render=${(page: LogPage) => {
        const shown = itemsOf<LogLine>(page, 'lines');
        if (shown.length === 0) {
          return html`<${Empty}
            ><p>
              ${filter ? `No lines contain \u201c${filter}\u201d. Clear the filter to see every line.` : 'No log lines yet. Start the service to see its output.'}
            </p><//
          >`;
        }
        const text = shown
          .map((l) => `${formatTime(l.time, true)} ${l.stream === 'stderr' ? '!' : ' '} ${readable(l.text)}\n`)
          .join('');
        return html`<pre class="log" id="log-lines" tabindex="0" aria-label=${`Log of ${title}, newest line first`}>
${text}</pre>
          <div class="toolbar">
            <${CopyButton} text=${text} target="log-lines" label="Copy these log lines" />
            <button
              type="button"
              onClick=${async () => {
                try {
                  const r = await call<{ opened: boolean; message: string }>('services.openLogFolder');
                  setFolder({ kind: r.opened ? 'ok' : 'error', text: r.message });
                } catch (err) {
                  setFolder({ kind: 'error', text: (err as Error).message });
                }
              }}
            >
              Open the log folder
            </button>
            <${ActionAnswer} said=${folder} />
          </div>
          <nav class="paging" aria-label="Log pages">
            <button type="button" disabled=${before === undefined} onClick=${() => setBefores(befores.slice(0, -1))}>
              Newer
            </button>
            <span class="muted"
              >${before === undefined ? (follow ? 'newest lines, following' : 'newest lines') : `page ${befores.length + 1}`}${probes ? '' : ' \u00b7 probes hidden'}</span
            >
            <button
              type="button"
              disabled=${page.next_before === null}
              onClick=${() => page.next_before !== null && setBefores([...befores, page.next_before])}
            >
              Older
            </button>
          </nav>`;
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
