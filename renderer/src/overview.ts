/**
 * The first page: how the services are, what they hold, what needs a person, and recent activity
 * (requests and errors per minute over the last hour; the provider's CLI runs and tokens per hour).
 */
import { html } from 'htm/preact';
import { METRIC_NAMES, type ActivityView, type ServiceActivity } from '../../main/common/activity.ts';
import type { Count, OverviewView } from '../../main/common/contract.ts';
import { SERVICE_CATALOGUE } from '../../main/common/services.ts';
import { AGGREGATE_WORDS, aggregateState, STATE_WORDS } from '../../main/common/states.ts';
import { BarChart, sum } from './charts.ts';
import { TRAY_ICONS } from './icons.ts';
import { Loaded, formatTime, useCall } from './states.ts';

function CountCell({ label, count, href }: { label: string; count: Count; href: string }) {
  const text = 'error' in count ? 'unknown' : `${count.more ? 'at least ' : ''}${count.value}`;
  return html`<div class="count">
    <dt><a href=${href}>${label}</a></dt>
    <dd data-count=${label}>${text}</dd>
    ${'error' in count ? html`<dd class="muted count-why">${count.error}</dd>` : null}
  </div>`;
}

export function Overview() {
  const [load, reload] = useCall<OverviewView>('overview.get', undefined, 'overview', 10_000);
  return html`<section aria-labelledby="overview-title">
    <h2 id="overview-title" tabindex="-1">Overview</h2>
    <${Loaded}
      load=${load}
      what="the overview"
      retry=${reload}
      render=${(view: OverviewView) => {
        const aggregate = aggregateState(view.services.map((s) => s.state));
        return html`<p class="headline" data-aggregate=${aggregate}>
            <img src=${TRAY_ICONS[aggregate]} width="16" height="16" alt="" />
            ${AGGREGATE_WORDS[aggregate]}.
          </p>
          <h3>Needs attention</h3>
          ${view.attention.length === 0
            ? html`<p class="state ok" role="status">Nothing needs you: no service failed, no signal was lost, the provider is signed in and locked down.</p>`
            : html`<ul class="attention">
                ${view.attention.map((a, i) => html`<li key=${i} class=${a.severity}>${a.text} <a href=${`#${a.place}`}>Open ${a.place}</a></li>`)}
              </ul>`}
          <h3>Services</h3>
          <ul class="service-cards">
            ${view.services.map(
              (s) => html`<li key=${s.name} class="service-card" data-service=${s.name}>
                <span class="service-title">${SERVICE_CATALOGUE[s.name].title}</span>
                <span class=${`badge state-${s.state}`} data-state=${s.state}>${STATE_WORDS[s.state]}</span>
                <span class="muted">port ${s.port}</span>
                ${s.advice ? html`<span class="advice">${s.advice}</span>` : null}
              </li>`,
            )}
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
    <${Activity} />
  </section>`;
}

function reason(a: ServiceActivity | undefined): string | undefined {
  if (!a || a.reading.ok) return undefined;
  return a.reading.reason.replace(/\.$/, '');
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function MinuteChart({ id, name, activity }: { id: string; name: 'persona-store' | 'model-provider'; activity: ServiceActivity | undefined }) {
  const title = `${SERVICE_CATALOGUE[name].title}: requests and errors per minute, last hour`;
  const why = reason(activity);
  if (!activity || (why && activity.minutes.every((m) => m.requests === 0))) {
    return html`<figure class="chart" data-chart=${id}><figcaption>${title}</figcaption><p class="muted chart-summary">Not counted: ${why ?? 'no reading yet'}.</p></figure>`;
  }
  const requests = activity.minutes.map((m) => m.requests);
  const errors = activity.minutes.map((m) => m.errors);
  const refused = sum(activity.minutes.map((m) => m.refused));
  const summary = `${plural(sum(requests), 'request')} in the last hour (${refused} refused), ${plural(sum(errors), 'error')}; busiest minute ${Math.max(...requests)}.`;
  return html`<${BarChart}
    id=${id}
    title=${title}
    slotLabel="minute"
    summary=${summary}
    series=${[
      { kind: 'requests', label: 'requests', values: requests },
      { kind: 'errors', label: 'errors (5xx, abandoned)', values: errors },
    ]}
  />`;
}

function HourChart({ id, title, activity, counter, unit, who }: { id: string; title: string; activity: ServiceActivity | undefined; counter: string; unit: string; who: string }) {
  const why = reason(activity);
  if (!activity || !activity.counters.includes(counter)) {
    const missing = why ?? `the ${who} does not count this yet (no ${counter} at its /metrics)`;
    return html`<figure class="chart" data-chart=${id}><figcaption>${title}</figcaption><p class="muted chart-summary">Not counted: ${missing}.</p></figure>`;
  }
  const values = activity.hours.map((h) => h.counts[counter] ?? 0);
  return html`<${BarChart}
    id=${id}
    title=${title}
    slotLabel="hour"
    summary=${`${sum(values)} ${unit} in the last 24 hours; busiest hour ${Math.max(...values)}.`}
    series=${[{ kind: unit === 'tokens' ? 'tokens' : 'runs', label: unit, values }]}
  />`;
}

function Activity() {
  const [load, reload] = useCall<ActivityView>('overview.activity', undefined, 'activity', 30_000);
  return html`<section class="activity" aria-labelledby="activity-title">
    <h3 id="activity-title">Recent activity</h3>
    <${Loaded}
      load=${load}
      what="the activity charts"
      retry=${reload}
      render=${(view: ActivityView) => html`<div class="charts">
          <${MinuteChart} id="persona-minutes" name="persona-store" activity=${view.services['persona-store']} />
          <${MinuteChart} id="provider-minutes" name="model-provider" activity=${view.services['model-provider']} />
          <${HourChart} id="provider-runs" title="Chat-model provider: CLI runs per hour, last day" activity=${view.services['model-provider']} counter=${METRIC_NAMES.cliRuns} unit="CLI runs" who="chat-model provider" />
          <${HourChart} id="provider-tokens" title="Chat-model provider: tokens per hour, last day" activity=${view.services['model-provider']} counter=${METRIC_NAMES.tokens} unit="tokens" who="chat-model provider" />
          <${HourChart} id="persona-writes" title="Persona store: writes per hour, last day" activity=${view.services['persona-store']} counter=${METRIC_NAMES.personaWrites} unit="writes" who="persona store" />
          <${HourChart} id="persona-recalls" title="Persona store: recalls per hour, last day" activity=${view.services['persona-store']} counter=${METRIC_NAMES.personaRecalls} unit="recalls" who="persona store" />
        </div>
        <p class="muted">Counted by each service at its /metrics (Prometheus format; your own Prometheus can read it too), read every ${view.intervalSeconds} s while the app runs; last read ${formatTime(view.at)}.</p>`}
    />
  </section>`;
}
