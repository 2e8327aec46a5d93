/**
 * The history behind the overview's charts: the console reads every running service's `GET /metrics`
 * once a minute (and whenever the overview asks), turns counter totals into increases, and keeps one
 * point a minute and one an hour for the last day. Bounded: 1,440 + 24 points per service. A counter
 * that went down (the service restarted) counts from zero. With a file, the history is written after
 * every reading and read back at start, so the charts survive a restart of the app. A minute keeps the
 * hubs' requests apart from the app's own, by the `caller` label the service put on them.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import {
  APP_CALLER,
  METRIC_NAMES,
  PROBE_ROUTES,
  type ActivityView,
  type HourPoint,
  type MinutePoint,
  type ServiceActivity,
} from '../../common/activity.ts';
import { SERVICE_NAMES, type ServiceName } from '../../common/services.ts';
import { RUNNING_STATES, type ServiceState } from '../../common/states.ts';
import type { Supervisor } from '../supervisor/types.ts';
import type { ServiceClient } from './service-client.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Minute points kept per service: a day. */
export const MINUTES_KEPT = 24 * 60;
/** Minute points a view shows unless asked for more: the last hour. */
export const MINUTES_SHOWN = 60;
export const HOURS_KEPT = 24;

/**
 * The history file: a version, and per service its points and the totals of its current process.
 * Version 1 mixed the app's own requests into each minute: its minutes are not read back (its hours are).
 */
const MinuteStored = z.object({
  at: z.string(),
  requests: z.number(),
  refused: z.number(),
  errors: z.number(),
  appRequests: z.number(),
  appRefused: z.number(),
  appErrors: z.number(),
});
const Stored = z.object({
  version: z.union([z.literal(1), z.literal(2)]),
  services: z.record(
    z.string(),
    z.object({
      pid: z.number().int().optional(),
      totals: z.array(z.tuple([z.string().max(2_000), z.number()])).max(10_000),
      minutes: z.array(z.unknown()).max(MINUTES_KEPT),
      hours: z.array(z.tuple([z.number(), z.record(z.string(), z.number())])).max(HOURS_KEPT),
    }),
  ),
});
/** The service's own counters charted per hour (HTTP counters are charted per minute). */
const HOURLY = [
  METRIC_NAMES.cliRuns,
  METRIC_NAMES.tokens,
  METRIC_NAMES.personaWrites,
  METRIC_NAMES.personaRecalls,
  METRIC_NAMES.requests,
];

function emptyMinute(at: number): MinutePoint {
  return {
    at: new Date(at).toISOString(),
    requests: 0,
    refused: 0,
    errors: 0,
    appRequests: 0,
    appRefused: 0,
    appErrors: 0,
  };
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Samples of the Prometheus text format (version 0.0.4), as prom-client writes it: `# HELP`/`# TYPE`
 * lines and blank lines skipped, label values unescaped (\\, \", \n). A line that does not parse is skipped.
 */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/.exec(line);
    if (!m) continue;
    const value = Number(m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : m[3]);
    if (Number.isNaN(value)) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1]!, labels, value });
  }
  return samples;
}

interface Track {
  pid?: number;
  /** Last total seen per series. */
  totals: Map<string, number>;
  minutes: Map<number, MinutePoint>;
  hours: Map<number, Record<string, number>>;
  counters: string[];
  reading: ServiceActivity['reading'];
}

/** Why a service's activity is not read, where "it is <state>" would not read. */
const NOT_RUNNING_WORDS: Partial<Record<ServiceState, string>> = {
  'backing-off': 'it is restarting after a crash',
  'gave-up': 'it gave up',
};

export class ActivityHistory {
  private readonly tracks = new Map<ServiceName, Track>();
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly supervisor: Pick<Supervisor, 'status'>,
    private readonly services: Pick<ServiceClient, 'metricsText'>,
    private readonly options: { intervalMs?: number; now?: () => number; file?: string } = {},
  ) {
    if (options.file) this.load(options.file);
  }

  get intervalMs(): number {
    return this.options.intervalMs ?? MINUTE;
  }

  /** Reads every minute from now on; the timer never keeps the process alive. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads every running service's counters once; concurrent callers share one reading. */
  sample(): Promise<void> {
    this.inFlight ??= this.readAll().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /** The last `minutes` minute points (default the last hour, at most a day) and the last day of hours. */
  view(minutes = MINUTES_SHOWN): ActivityView {
    const shown = Math.max(1, Math.min(MINUTES_KEPT, Math.floor(minutes)));
    const now = this.now();
    const thisMinute = Math.floor(now / MINUTE) * MINUTE;
    const thisHour = Math.floor(now / HOUR) * HOUR;
    const services: Record<string, ServiceActivity> = {};
    for (const name of SERVICE_NAMES) {
      const track = this.track(name);
      const minutes: MinutePoint[] = [];
      for (let i = shown - 1; i >= 0; i--) {
        const at = thisMinute - i * MINUTE;
        const point = track.minutes.get(at);
        minutes.push(point ? { ...point } : emptyMinute(at));
      }
      const hours: HourPoint[] = [];
      for (let i = HOURS_KEPT - 1; i >= 0; i--) {
        const at = thisHour - i * HOUR;
        hours.push({ at: new Date(at).toISOString(), counts: { ...(track.hours.get(at) ?? {}) } });
      }
      services[name] = { reading: track.reading, minutes, hours, counters: track.counters };
    }
    return { at: new Date(now).toISOString(), intervalSeconds: Math.round(this.intervalMs / 1000), services };
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private track(name: ServiceName): Track {
    let track = this.tracks.get(name);
    if (!track) {
      track = {
        totals: new Map(),
        minutes: new Map(),
        hours: new Map(),
        counters: [],
        reading: { ok: false, reason: 'not read yet' },
      };
      this.tracks.set(name, track);
    }
    return track;
  }

  private async readAll(): Promise<void> {
    const statuses = this.supervisor.status();
    await Promise.all(
      statuses.map(async (status) => {
        const track = this.track(status.name);
        if (!RUNNING_STATES.has(status.state) || status.state === 'backing-off') {
          track.reading = {
            ok: false,
            at: new Date(this.now()).toISOString(),
            reason: NOT_RUNNING_WORDS[status.state] ?? `it is ${status.state}`,
          };
          return;
        }
        let text: string;
        try {
          text = await this.services.metricsText(status.name);
        } catch (err) {
          track.reading = { ok: false, at: new Date(this.now()).toISOString(), reason: (err as Error).message };
          return;
        }
        // A new process counts from zero: everything it counted so far is new.
        if (status.pid !== track.pid) {
          track.pid = status.pid;
          track.totals.clear();
        }
        this.add(track, parsePrometheusText(text));
      }),
    );
    if (this.options.file) this.save(this.options.file);
  }

  /** Writes the whole history through a temporary file and a rename: a crash never leaves half of it. */
  private save(file: string): void {
    const services: z.infer<typeof Stored>['services'] = {};
    for (const [name, track] of this.tracks) {
      services[name] = {
        ...(track.pid !== undefined ? { pid: track.pid } : {}),
        totals: [...track.totals],
        // Quiet minutes are not written: the view fills them with zeros.
        minutes: [...track.minutes.values()].filter((m) => m.requests > 0 || m.errors > 0 || m.appRequests > 0),
        hours: [...track.hours].filter(([, counts]) => Object.keys(counts).length > 0),
      };
    }
    try {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      const temporary = `${file}.${process.pid}.tmp`;
      writeFileSync(temporary, JSON.stringify({ version: 2, services }), { mode: 0o600 });
      renameSync(temporary, file);
    } catch {
      // A full or read-only disk costs the history after a restart, never the charts now.
    }
  }

  /** Reads the history back; a missing or unreadable file starts empty, and points past the window are dropped. */
  private load(file: string): void {
    let stored: z.infer<typeof Stored>;
    try {
      stored = Stored.parse(JSON.parse(readFileSync(file, 'utf8')));
    } catch {
      return;
    }
    const now = this.now();
    const firstMinute = Math.floor(now / MINUTE) * MINUTE - (MINUTES_KEPT - 1) * MINUTE;
    const firstHour = Math.floor(now / HOUR) * HOUR - (HOURS_KEPT - 1) * HOUR;
    for (const name of SERVICE_NAMES) {
      const saved = stored.services[name];
      if (!saved) continue;
      const track = this.track(name);
      // The totals of a process still running carry on: its next reading adds only what is new.
      track.pid = saved.pid;
      track.totals = new Map(saved.totals);
      // A version 1 minute counted the app's own requests as the hubs': it would draw them again.
      for (const raw of stored.version === 2 ? saved.minutes : []) {
        const m = MinuteStored.safeParse(raw);
        if (!m.success) continue;
        const at = Date.parse(m.data.at);
        if (Number.isFinite(at) && at >= firstMinute && at <= now)
          track.minutes.set(at, { ...m.data, at: new Date(at).toISOString() });
      }
      for (const [at, counts] of saved.hours) if (at >= firstHour && at <= now) track.hours.set(at, counts);
    }
  }

  private add(track: Track, samples: Sample[]): void {
    const now = this.now();
    const minuteAt = Math.floor(now / MINUTE) * MINUTE;
    const hourAt = Math.floor(now / HOUR) * HOUR;
    const minute = track.minutes.get(minuteAt) ?? emptyMinute(minuteAt);
    const hour = track.hours.get(hourAt) ?? {};
    for (const s of samples) {
      const key = `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
      const before = track.totals.get(key) ?? 0;
      track.totals.set(key, s.value);
      // A total that went down belongs to a restarted process: all of it is new.
      const delta = s.value >= before ? s.value - before : s.value;
      if (delta <= 0 || !Number.isFinite(delta)) continue;
      if (s.labels.route !== undefined && PROBE_ROUTES.includes(s.labels.route)) continue;
      // The app's own only where the service proved it (services/kit/callers.ts); anything else is the hubs'.
      const app = s.labels.caller === APP_CALLER;
      if (s.name === METRIC_NAMES.requests) {
        if (app) minute.appRequests += delta;
        else minute.requests += delta;
        if (s.labels.status_class === '4xx') {
          if (app) minute.appRefused += delta;
          else minute.refused += delta;
        }
      } else if (s.name === METRIC_NAMES.errors) {
        if (app) minute.appErrors += delta;
        else minute.errors += delta;
      }
      if (HOURLY.includes(s.name as (typeof HOURLY)[number])) {
        const part = s.labels.kind ?? s.labels.outcome ?? s.labels.scope ?? s.labels.target_kind;
        hour[s.name] = (hour[s.name] ?? 0) + delta;
        if (part) hour[`${s.name}:${part}`] = (hour[`${s.name}:${part}`] ?? 0) + delta;
      }
    }
    track.minutes.set(minuteAt, minute);
    track.hours.set(hourAt, hour);
    track.counters = [...new Set(samples.map((s) => s.name))];
    track.reading = { ok: true, at: new Date(now).toISOString() };
    // Bounded: only what the charts show is kept.
    for (const at of track.minutes.keys()) if (at <= minuteAt - MINUTES_KEPT * MINUTE) track.minutes.delete(at);
    for (const at of track.hours.keys()) if (at <= hourAt - HOURS_KEPT * HOUR) track.hours.delete(at);
  }
}
