/**
 * The first page: how the services are, what they hold, what needs a person, and recent activity
 * (requests and errors per minute over the last hour; the provider's CLI runs and tokens per hour).
 */
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { METRIC_NAMES, spanWords, type ActivityView, type ServiceActivity } from '../../common/activity.ts';
import type { Count, Need, OverviewView } from '../../common/contract.ts';
import { SERVICE_CATALOGUE, type ServiceName } from '../../common/services.ts';
import { AGGREGATE_WORDS, aggregateState, RUNNING_STATES, STATE_WORDS } from '../../common/states.ts';
import { BarChart, sum } from './charts.ts';
import { TRAY_ICONS } from './icons.ts';
import { ServiceActions, useServiceControl, type ServiceControl } from './service-actions.ts';
import { problemText } from './services.ts';
import { Failed, Loaded, formatBytes, formatDuration, formatTime, useCall } from './states.ts';
import { plural } from './words.ts';

function CountCell({ label, count, href }: { label: string; count: Count; href: string }) {
  const text = 'error' in count ? 'unknown' : `${count.more ? 'at least ' : ''}${count.value}`;
  return html`<div class="count">
    <dt><a href=${href}>${label}</a></dt>
    <dd data-count=${label}>${text}</dd>
    ${'error' in count ? html`<dd class="muted count-why">${count.error}</dd>` : null}
  </div>`;
}

export function Overview({ showLog }: { showLog: (name: ServiceName) => void }) {
  // The charts' span: "Needs attention" names every error they draw over the same span.
  const [minutes, setMinutes] = useState(60);
  const overview = useCall<OverviewView>('overview.get', { minutes }, 'overview', 5_000, minutes);
  const control = useServiceControl(overview.reload);
  return html`<section aria-labelledby="overview-title">
    <h2 id="overview-title" tabindex="-1">Overview</h2>
    <${Loaded}
      call=${overview}
      what="the overview"
      render=${(view: OverviewView) => {
        const headline = view.headline ?? {
          state: aggregateState(view.services.map((s) => s.state)),
          text: `${AGGREGATE_WORDS[aggregateState(view.services.map((s) => s.state))]}.`,
        };
        const needs = view.needs ?? [];
        return html`<p class="headline" data-aggregate=${headline.state}>
            <img src=${TRAY_ICONS[headline.state]} width="16" height="16" alt="" />
            <span>${headline.text}</span>
          </p>
          ${
            needs.length > 0
              ? html`<h3>Waiting for you</h3>
                  <ul class="needs">
                    ${needs.map((n) => html`<li key=${`${n.service}:${n.kind}`} data-need=${n.kind}><span>${n.text}</span> <a class="button primary" href=${needHref(n)}>${n.action}</a></li>`)}
                  </ul>`
              : null
          }
          <h3>Needs attention</h3>
          ${
            view.attention.length === 0
              ? html`<p class="state ok" role="status">
                  ${needs.length === 0 ? 'Nothing needs you: no service failed, no signal was lost, the provider is signed in and locked down.' : 'Nothing failed: no service crashed, no signal was lost.'}
                </p>`
              : html`<ul class="attention">
                  ${view.attention.map((a, i) => html`<li key=${i} class=${a.severity}>${a.text} <a href=${`#${a.place}`}>Open ${PLACE_WORDS[a.place] ?? a.place}</a></li>`)}
                </ul>`
          }
          <h3>Services</h3>
          ${control.failure ? html`<${Failed} message=${control.failure} />` : null}
          <ul class="service-cards">
            ${view.services.map((s) => html`<${ServiceCard} key=${s.name} service=${s} control=${control} showLog=${showLog} />`)}
          </ul>
          <h3>What the services hold</h3>
          <dl class="counts">
            <${CountCell} label="Personas" count=${view.counts.personas} href="#personas" />
            <${CountCell} label="Fields" count=${view.counts.fields} href="#personas" />
            <${CountCell} label="Notes" count=${view.counts.notes} href="#personas" />
            <${CountCell} label="Open subscriptions" count=${view.counts.openSubscriptions} href="#platform" />
            <${CountCell} label="Platform connections" count=${view.counts.connections} href="#platform" />
            <${CountCell} label="Hub credentials" count=${view.counts.hubCredentials} href="#hub" />
          </dl>`;
      }}
    />
    ${
      // No charts under an overview that cannot be read (the app quit, the console is gone): they would be stale.
      overview.load.state === 'done' ? html`<${Activity} minutes=${minutes} setMinutes=${setMinutes} />` : null
    }
  </section>`;
}

/** Where a need's action is: its first-run step when it is one, else its page. */
function needHref(need: Need): string {
  return need.step ? `#first-run/${need.step}` : `#${need.place}`;
}

/** The words of a console page an attention item links to. */
const PLACE_WORDS: Record<string, string> = {
  'first-run': 'Get started',
  services: 'Services',
  platform: 'Platform',
  provider: 'Provider',
  hub: 'Connect a hub',
  personas: 'Personas',
};

/** One service at a glance: its state in words, what it needs from the person if anything, its figures and actions. */
function ServiceCard({
  service: s,
  control,
  showLog,
}: {
  service: OverviewView['services'][number];
  control: ServiceControl;
  showLog: (name: ServiceName) => void;
}) {
  const running = RUNNING_STATES.has(s.state);
  const problem = problemText(s);
  return html`<li class="service-card" data-service=${s.name}>
    <div class="service-head">
      <span class="service-title">${SERVICE_CATALOGUE[s.name].title}</span>
      <span class=${`badge state-${s.state}`} data-state=${s.state}>${STATE_WORDS[s.state] ?? s.state}</span>
    </div>
    <dl class="service-facts">
      <dt>Port</dt>
      <dd>${s.port}</dd>
      <dt>Up</dt>
      <dd>${running ? formatDuration(s.uptimeMs) : '\u2014'}</dd>
      <dt>Memory</dt>
      <dd>${formatBytes(s.memoryBytes)}</dd>
    </dl>
    ${
      s.need
        ? html`<p class="service-need">${s.need.text}</p>
            <p><a class="button primary" href=${needHref(s.need)}>${s.need.action}</a></p>`
        : html`${problem && s.state !== 'ready' ? html`<p class="service-problem">${problem}</p>` : null}
          ${s.advice ? html`<p class="advice">${s.advice}</p>` : null}`
    }
    <${ServiceActions} service=${s} control=${control} showLog=${showLog} />
  </li>`;
}

function reason(a: ServiceActivity | undefined): string | undefined {
  if (!a || a.reading.ok) return undefined;
  return a.reading.reason.replace(/\.$/, '');
}

/**
 * A service's requests per minute: the hubs' (every caller the service did not prove to be the app) as
 * bars, their 5xx and abandoned in red; the app's own (this console, the services' calls to each other)
 * counted in the sentence, never drawn, so the chart shows what the hubs did.
 */
function MinuteChart({ id, name, activity }: { id: string; name: ServiceName; activity: ServiceActivity | undefined }) {
  const span = spanWords(activity?.minutes.length || 60);
  const title = `${SERVICE_CATALOGUE[name].title}: requests from hubs and errors per minute, ${span}`;
  const why = reason(activity);
  if (!activity || (why && activity.minutes.every((m) => m.requests === 0 && m.appRequests === 0))) {
    return html`<figure class="chart" data-chart=${id}>
      <figcaption>${title}</figcaption>
      <p class="muted chart-summary">Not counted: ${why ?? 'no reading yet'}.</p>
    </figure>`;
  }
  const requests = activity.minutes.map((m) => m.requests);
  const errors = activity.minutes.map((m) => m.errors);
  const refused = sum(activity.minutes.map((m) => m.refused));
  const own = sum(activity.minutes.map((m) => m.appRequests));
  const ownFailed = sum(activity.minutes.map((m) => m.appErrors));
  const summary = [
    `${plural(sum(requests), 'request')} from hubs in the ${span} (${refused} refused), ${plural(sum(errors), 'error')}; busiest minute ${Math.max(...requests)}.`,
    own > 0
      ? `Not drawn: ${plural(own, 'call')} of the app\u2019s own (this console, the services\u2019 calls to each other)${ownFailed > 0 ? `, ${ownFailed} failed` : ''}.`
      : '',
    why ? `Not read now: ${why}.` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return html`<${BarChart}
    id=${id}
    title=${title}
    slotLabel="minute"
    summary=${summary}
    times=${activity.minutes.map((m) => m.at)}
    series=${[
      { kind: 'requests', label: 'requests from hubs', values: requests },
      { kind: 'errors', label: 'errors (5xx, abandoned)', values: errors },
    ]}
  />`;
}

/** An hour chart: a counter of one service's /metrics, named in words for one (many add an s). */
interface HourChartSpec {
  id: string;
  service: ServiceName;
  counter: string;
  one: string;
  kind: string;
}

function HourChart(props: HourChartSpec & { activity: ServiceActivity | undefined }) {
  const { id, activity, counter } = props;
  const many = `${props.one}s`;
  const { title: what, label: who } = SERVICE_CATALOGUE[props.service];
  const title = `${what}: ${many} per hour, ${spanWords((activity?.hours.length || 24) * 60)}`;
  const why = reason(activity);
  if (!activity || !activity.counters.includes(counter)) {
    const missing = why ?? `the ${who} does not count this yet (no ${counter} at its /metrics)`;
    return html`<figure class="chart" data-chart=${id}>
      <figcaption>${title}</figcaption>
      <p class="muted chart-summary">Not counted: ${missing}.</p>
    </figure>`;
  }
  const values = activity.hours.map((h) => h.counts[counter] ?? 0);
  return html`<${BarChart}
    id=${id}
    title=${title}
    slotLabel="hour"
    summary=${`${plural(sum(values), props.one)} in the ${spanWords(values.length * 60)}; busiest hour ${Math.max(...values)}.`}
    times=${activity.hours.map((h) => h.at)}
    series=${[{ kind: props.kind, label: many, values }]}
  />`;
}

/** The minute charts, in the catalogue's order: every service whose traffic the console keeps. */
const MINUTE_CHARTS: [ServiceName, string][] = [
  ['persona-store', 'persona-minutes'],
  ['model-provider', 'provider-minutes'],
  ['identity', 'identity-minutes'],
  ['repohost-gateway', 'gateway-minutes'],
];

/** The hour charts, after the minute charts: the provider's work, then the persona store's. */
const HOUR_CHARTS: HourChartSpec[] = [
  { id: 'provider-runs', service: 'model-provider', counter: METRIC_NAMES.cliRuns, one: 'CLI run', kind: 'runs' },
  { id: 'provider-tokens', service: 'model-provider', counter: METRIC_NAMES.tokens, one: 'token', kind: 'tokens' },
  { id: 'persona-writes', service: 'persona-store', counter: METRIC_NAMES.personaWrites, one: 'write', kind: 'runs' },
  {
    id: 'persona-recalls',
    service: 'persona-store',
    counter: METRIC_NAMES.personaRecalls,
    one: 'recall',
    kind: 'runs',
  },
];

function Activity({ minutes, setMinutes }: { minutes: number; setMinutes: (minutes: number) => void }) {
  const activity = useCall<ActivityView>('overview.activity', { minutes }, `activity:${minutes}`, 30_000);
  return html`<section class="activity" aria-labelledby="activity-title">
    <div class="section-head">
      <h3 id="activity-title">Recent activity</h3>
      <label
        >Requests over the last
        <select
          name="activity-span"
          value=${String(minutes)}
          onChange=${(e: Event) => setMinutes(Number((e.target as HTMLSelectElement).value))}
        >
          <option value="60">hour</option>
          <option value="360">6 hours</option>
          <option value="1440">24 hours</option>
        </select>
      </label>
    </div>
    <${Loaded}
      call=${activity}
      what="the activity charts"
      render=${(view: ActivityView) =>
        html`<div class="charts">
            ${MINUTE_CHARTS.filter(
              ([name]) => name === 'persona-store' || name === 'model-provider' || view.services[name],
            ).map(
              ([name, id]) => html`<${MinuteChart} key=${id} id=${id} name=${name} activity=${view.services[name]} />`,
            )}
            ${HOUR_CHARTS.map((c) => html`<${HourChart} key=${c.id} ...${c} activity=${view.services[c.service]} />`)}
          </div>
          <p class="muted">
            ${
              // One string: htm drops the space where a line break meets a value ("every60 s").
              `Counted by each service at its /metrics (Prometheus format; your own Prometheus can read it too), read every ${view.intervalSeconds} s and kept for a day on disk, so a restart keeps the history; last read ${formatTime(view.at)}. Requests from hubs are every caller a service did not prove to be this app (a hub credential, or none); the app\u2019s own calls are counted apart, and probes not at all.`
            }
          </p>`}
    />
  </section>`;
}
