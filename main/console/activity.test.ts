/**
 * The activity history from real prom-client text (the kit's ServiceMetrics): increases per minute and
 * per hour, the hubs' requests apart from the app's own, a restarted process counted from zero, and never more than an hour of minutes and a day
 * of hours kept, whatever time passes. The clock is a parameter, so no test waits for it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServiceMetrics } from '../../services/kit/metrics.ts';
import type { ServiceStatus } from '../supervisor/types.ts';
import { ActivityHistory, HOURS_KEPT, MINUTES_KEPT, MINUTES_SHOWN, parsePrometheusText } from './activity.ts';

const MINUTE = 60_000;

describe('parsePrometheusText', () => {
  it('reads prom-client\u2019s own output, escaped label values included', async () => {
    const metrics = new ServiceMetrics('persona-store');
    const runs = metrics.counter({
      name: 'demo_runs_total',
      help: 'Runs "quoted" \\ and\nnew line.',
      labels: { outcome: ['ok', 'a"b\\c'] },
    });
    runs.inc({ outcome: 'a"b\\c' }, 2);
    const samples = parsePrometheusText(await metrics.text());
    expect(samples).toContainEqual({
      name: 'demo_runs_total',
      labels: { outcome: 'a"b\\c', service: 'persona-store' },
      value: 2,
    });
    expect(samples).toContainEqual({
      name: 'demo_runs_total',
      labels: { outcome: 'ok', service: 'persona-store' },
      value: 0,
    });
    expect(parsePrometheusText('# HELP x\nnot a sample line\nup 1\n')).toEqual([{ name: 'up', labels: {}, value: 1 }]);
  });
});

describe('ActivityHistory', () => {
  function setup(file?: string) {
    let now = Date.parse('2026-03-01T10:00:30Z');
    let metrics = new ServiceMetrics('model-provider');
    let runs = metrics.counter({
      name: 'modelprov_cli_runs_total',
      help: 'runs',
      labels: { outcome: ['ok', 'failed'] },
    });
    const status: ServiceStatus = {
      name: 'model-provider',
      state: 'ready',
      port: 1,
      url: 'http://127.0.0.1:1',
      restarts: 0,
      pid: 100,
    };
    const open = () =>
      new ActivityHistory(
        { status: () => [status] },
        { metricsText: async () => metrics.text() },
        { now: () => now, ...(file ? { file } : {}) },
      );
    const history = open();
    return {
      history,
      open,
      status,
      runs: () => runs,
      advance: (ms: number) => (now += ms),
      restart: () => {
        metrics = new ServiceMetrics('model-provider');
        runs = metrics.counter({
          name: 'modelprov_cli_runs_total',
          help: 'runs',
          labels: { outcome: ['ok', 'failed'] },
        });
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
    expect(hour).toMatchObject({
      modelprov_cli_runs_total: 6,
      'modelprov_cli_runs_total:ok': 5,
      'modelprov_cli_runs_total:failed': 1,
    });
    t.restart();
    t.runs().inc({ outcome: 'ok' });
    await t.history.sample();
    hour = t.view().hours.at(-1)!.counts;
    expect(hour.modelprov_cli_runs_total).toBe(7);
    expect(t.view().reading.ok).toBe(true);
  });

  it('keeps a day of minutes and a day of hours, however long it runs; shows the last hour unless asked', async () => {
    const t = setup();
    for (let i = 0; i < 30 * 60; i += 7) {
      t.runs().inc({ outcome: 'ok' });
      await t.history.sample();
      t.advance(7 * MINUTE);
    }
    expect(t.view().minutes).toHaveLength(MINUTES_SHOWN);
    const view = t.history.view(MINUTES_KEPT).services['model-provider']!;
    expect(view.minutes).toHaveLength(MINUTES_KEPT);
    expect(view.minutes.reduce((n, m) => n + m.requests, 0)).toBe(0);
    expect(view.hours).toHaveLength(HOURS_KEPT);
    const tracks = (
      t.history as unknown as { tracks: Map<string, { minutes: Map<number, unknown>; hours: Map<number, unknown> }> }
    ).tracks.get('model-provider')!;
    expect(tracks.minutes.size).toBeLessThanOrEqual(MINUTES_KEPT);
    expect(tracks.hours.size).toBeLessThanOrEqual(HOURS_KEPT);
    // One run every seven minutes: eight or nine in each full hour.
    for (const h of view.hours.slice(0, -1)) expect([8, 9]).toContain(h.counts.modelprov_cli_runs_total);
  });

  it('keeps the app\u2019s own requests apart from the hubs\u2019, by the caller the service put on them', async () => {
    const line = (status: string, caller: string, n: number) =>
      `http_requests_total{method="GET",route="/v1/models",status_class="${status}",caller="${caller}",service="model-provider"} ${n}\n`;
    const errors = (caller: string, n: number) =>
      `http_request_errors_total{method="GET",route="/v1/models",kind="failed",caller="${caller}",service="model-provider"} ${n}\n`;
    const text =
      line('2xx', 'hub', 3) +
      line('4xx', 'unverified', 2) +
      line('5xx', 'hub', 1) +
      errors('hub', 1) +
      line('2xx', 'app', 40) +
      line('4xx', 'app', 5) +
      line('5xx', 'app', 2) +
      errors('app', 2) +
      // Probes are left out, the app's or not.
      `http_requests_total{method="GET",route="/ready",status_class="5xx",caller="app",service="model-provider"} 9\n`;
    const split = new ActivityHistory(
      { status: () => [{ name: 'model-provider', state: 'ready', port: 1, url: '', restarts: 0, pid: 7 }] },
      { metricsText: async () => text },
      { now: () => Date.parse('2026-03-01T10:00:30Z') },
    );
    await split.sample();
    const { at, ...minute } = split.view().services['model-provider']!.minutes.at(-1)!;
    expect(at).toBe('2026-03-01T10:00:00.000Z');
    expect(minute).toEqual({ requests: 6, refused: 2, errors: 1, appRequests: 47, appRefused: 5, appErrors: 2 });
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

describe('the history on disk', () => {
  const dir = mkdtempSync(join(tmpdir(), 'activity-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function world(file: string) {
    let now = Date.parse('2026-03-01T10:00:30Z');
    const metrics = new ServiceMetrics('persona-store');
    const writes = metrics.counter({
      name: 'persona_writes_total',
      help: 'writes',
      labels: { target_kind: ['field'] },
    });
    const status: ServiceStatus = {
      name: 'persona-store',
      state: 'ready',
      port: 1,
      url: 'http://127.0.0.1:1',
      restarts: 0,
      pid: 200,
    };
    // The hub's requests, as the kit's counter writes them (its middleware counts real HTTP answers).
    const served = { requests: 0 };
    const text = async () =>
      `${await metrics.text()}http_requests_total{method="GET",route="/v1/personas",status_class="2xx",service="persona-store"} ${served.requests}\n`;
    const open = () => new ActivityHistory({ status: () => [status] }, { metricsText: text }, { now: () => now, file });
    return { open, writes, served, status, advance: (ms: number) => (now += ms) };
  }
  const hourOf = (h: ActivityHistory) => h.view().services['persona-store']!.hours.at(-1)!.counts.persona_writes_total;

  it('survives a restart: the charts read as before, and a process still running is not counted twice', async () => {
    const w = world(join(dir, 'same-process.json'));
    const before = w.open();
    w.writes.inc({ target_kind: 'field' }, 4);
    w.served.requests = 7;
    await before.sample();
    expect(hourOf(before)).toBe(4);
    expect(before.view().services['persona-store']!.minutes.at(-1)!.requests).toBe(7);
    // The app restarts; the service (same pid) did not.
    const after = w.open();
    const charts = (h: ActivityHistory) =>
      Object.values(h.view().services).map((v) => ({ minutes: v.minutes, hours: v.hours }));
    expect(charts(after)).toEqual(charts(before));
    w.writes.inc({ target_kind: 'field' }, 1);
    w.served.requests = 9;
    w.advance(MINUTE);
    await after.sample();
    expect(hourOf(after)).toBe(5);
    expect(
      after
        .view()
        .services['persona-store']!.minutes.slice(-2)
        .map((m) => m.requests),
    ).toEqual([7, 2]);
  });

  it('a new process after the restart counts from zero; a day later nothing of it is left', async () => {
    const w = world(join(dir, 'new-process.json'));
    const first = w.open();
    w.writes.inc({ target_kind: 'field' }, 3);
    await first.sample();
    w.status.pid = 201; // the service restarted too: its counters (here the same totals) are all new
    const second = w.open();
    await second.sample();
    expect(hourOf(second)).toBe(6);
    w.advance(25 * 60 * MINUTE);
    const later = w.open();
    const view = later.view(MINUTES_KEPT).services['persona-store']!;
    expect(view.minutes.every((m) => m.requests === 0)).toBe(true);
    expect(view.hours.every((h) => Object.keys(h.counts).length === 0)).toBe(true);
  });

  it('a history written before the app\u2019s own calls were counted apart keeps its hours, not its minutes', async () => {
    const file = join(dir, 'version-1.json');
    const at = Date.parse('2026-03-01T09:50:00Z');
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        services: {
          'persona-store': {
            totals: [],
            minutes: [{ at: new Date(at).toISOString(), requests: 240, refused: 15, errors: 0 }],
            hours: [[Date.parse('2026-03-01T09:00:00Z'), { persona_writes_total: 3 }]],
          },
        },
      }),
    );
    const view = world(file).open().view().services['persona-store']!;
    expect(view.minutes.every((m) => m.requests === 0 && m.appRequests === 0)).toBe(true);
    expect(view.hours.at(-2)!.counts).toEqual({ persona_writes_total: 3 });
  });

  it('a file that is not a history starts empty instead of failing', async () => {
    const file = join(dir, 'broken.json');
    writeFileSync(file, '{"version": 1, "services": {"persona-store": {"totals": "nope"}}');
    const w = world(file);
    const h = w.open();
    expect(h.view().services['persona-store']!.minutes.every((m) => m.requests === 0)).toBe(true);
    w.writes.inc({ target_kind: 'field' }, 2);
    await h.sample();
    expect(hourOf(w.open())).toBe(2);
  });
});
