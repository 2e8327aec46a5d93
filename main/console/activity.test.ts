/**
 * The activity history from real prom-client text (the kit's ServiceMetrics): increases per minute and
 * per hour, a restarted process counted from zero, and never more than an hour of minutes and a day
 * of hours kept, whatever time passes. The clock is a parameter, so no test waits for it.
 */
import { describe, expect, it } from 'vitest';
import { ServiceMetrics } from '../../services/kit/metrics.ts';
import type { ServiceStatus } from '../supervisor/types.ts';
import { ActivityHistory, HOURS_KEPT, MINUTES_KEPT, parsePrometheusText } from './activity.ts';

const MINUTE = 60_000;

describe('parsePrometheusText', () => {
  it('reads prom-client\u2019s own output, escaped label values included', async () => {
    const metrics = new ServiceMetrics('persona-store');
    const runs = metrics.counter({ name: 'demo_runs_total', help: 'Runs "quoted" \\ and\nnew line.', labels: { outcome: ['ok', 'a"b\\c'] } });
    runs.inc({ outcome: 'a"b\\c' }, 2);
    const samples = parsePrometheusText(await metrics.text());
    expect(samples).toContainEqual({ name: 'demo_runs_total', labels: { outcome: 'a"b\\c', service: 'persona-store' }, value: 2 });
    expect(samples).toContainEqual({ name: 'demo_runs_total', labels: { outcome: 'ok', service: 'persona-store' }, value: 0 });
    expect(parsePrometheusText('# HELP x\nnot a sample line\nup 1\n')).toEqual([{ name: 'up', labels: {}, value: 1 }]);
  });
});

describe('ActivityHistory', () => {
  function setup() {
    let now = Date.parse('2026-03-01T10:00:30Z');
    let metrics = new ServiceMetrics('model-provider');
    let runs = metrics.counter({ name: 'modelprov_cli_runs_total', help: 'runs', labels: { outcome: ['ok', 'failed'] } });
    const status: ServiceStatus = { name: 'model-provider', state: 'ready', port: 1, url: 'http://127.0.0.1:1', restarts: 0, pid: 100 };
    const history = new ActivityHistory({ status: () => [status] }, { metricsText: async () => metrics.text() }, { now: () => now });
    return {
      history,
      runs: () => runs,
      advance: (ms: number) => (now += ms),
      restart: () => {
        metrics = new ServiceMetrics('model-provider');
        runs = metrics.counter({ name: 'modelprov_cli_runs_total', help: 'runs', labels: { outcome: ['ok', 'failed'] } });
        status.pid = (status.pid ?? 0) + 1;
      },
      view: () => history.view().services['model-provider']!,
    };
  }

  it('turns totals into increases per hour, and counts a restarted process from zero', async () => {
    const t = setup();
    t.runs().inc({ outcome: 'ok' }, 3);
    await t.history.sample();
    t.runs().inc({ outcome: 'ok' }, 2);
    t.runs().inc({ outcome: 'failed' });
    await t.history.sample();
    let hour = t.view().hours.at(-1)!.counts;
    expect(hour).toMatchObject({ modelprov_cli_runs_total: 6, 'modelprov_cli_runs_total:ok': 5, 'modelprov_cli_runs_total:failed': 1 });
    t.restart();
    t.runs().inc({ outcome: 'ok' });
    await t.history.sample();
    hour = t.view().hours.at(-1)!.counts;
    expect(hour.modelprov_cli_runs_total).toBe(7);
    expect(t.view().reading.ok).toBe(true);
  });

  it('keeps an hour of minutes and a day of hours, however long it runs', async () => {
    const t = setup();
    for (let i = 0; i < 30 * 60; i += 7) {
      t.runs().inc({ outcome: 'ok' });
      await t.history.sample();
      t.advance(7 * MINUTE);
    }
    const view = t.view();
    expect(view.minutes).toHaveLength(MINUTES_KEPT);
    expect(view.hours).toHaveLength(HOURS_KEPT);
    const tracks = (t.history as unknown as { tracks: Map<string, { minutes: Map<number, unknown>; hours: Map<number, unknown> }> }).tracks.get('model-provider')!;
    expect(tracks.minutes.size).toBeLessThanOrEqual(MINUTES_KEPT);
    expect(tracks.hours.size).toBeLessThanOrEqual(HOURS_KEPT);
    // One run every seven minutes: eight or nine in each full hour.
    for (const h of view.hours.slice(0, -1)) expect([8, 9]).toContain(h.counts.modelprov_cli_runs_total);
  });

  it('says why a service could not be read', async () => {
    const history = new ActivityHistory(
      { status: () => [{ name: 'identity', state: 'stopped', port: 1, url: 'http://127.0.0.1:1', restarts: 0 }] },
      { metricsText: async () => '' },
    );
    await history.sample();
    expect(history.view().services.identity!.reading).toMatchObject({ ok: false, reason: 'it is stopped' });
  });
});
