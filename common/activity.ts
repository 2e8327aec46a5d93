/**
 * The counters the console charts, by the names the services expose at `GET /metrics`, and the shape
 * of the history the console keeps of them. Imports nothing.
 */

/** Counter names (Prometheus text format) the console reads. */
export const METRIC_NAMES = {
  /** Every service (the kit): answers by method, route template and status class. */
  requests: 'http_requests_total',
  /** Every service (the kit): 5xx answers (kind="failed") and abandoned requests (kind="aborted"). */
  errors: 'http_request_errors_total',
  /** The provider: CLI runs, by outcome. */
  cliRuns: 'modelprov_cli_runs_total',
  /** The provider: tokens, by kind (prompt, completion). */
  tokens: 'modelprov_tokens_total',
  /** The persona store: writes (card, fields, notes, forgetting), by what they wrote. */
  personaWrites: 'persona_writes_total',
  /** The persona store: recalls, by scope (one persona, all). */
  personaRecalls: 'persona_recalls_total',
} as const;

/**
 * Routes the charts leave out, even from the app's own traffic: the supervisor's probes, every few
 * seconds, would draw its rhythm (and a 503 of /ready while a service starts is not a failed request).
 */
export const PROBE_ROUTES: readonly string[] = ['/healthy', '/ready'];

/**
 * The `caller` label of the HTTP counters (services/kit/callers.ts): the app's own traffic (this
 * console, the services' calls to each other, the supervisor's probes) as the service proved it. Every
 * other value (a hub's credential, nothing proven) is a hub's or another program's.
 */
export const APP_CALLER = 'app';

/**
 * One minute of a service's HTTP traffic, probes left out: the hubs' (every caller the service did not
 * prove to be the app: a hub's credential, or none) and, apart, the app's own.
 */
export interface MinutePoint {
  /** ISO time the minute starts. */
  at: string;
  requests: number;
  /** 4xx answers: refused requests (a bad token, bad input). */
  refused: number;
  /** 5xx answers and requests abandoned before the answer. */
  errors: number;
  /** The app's own requests (this console, the services' calls to each other), and of them refused and failed. */
  appRequests: number;
  appRefused: number;
  appErrors: number;
}

/** One hour of a service's own counters. */
export interface HourPoint {
  /** ISO time the hour starts. */
  at: string;
  /** By counter name: the increase within the hour. */
  counts: Record<string, number>;
}

export interface ServiceActivity {
  /** Whether the last look at its /metrics worked, and if not, why (a sentence). */
  reading: { ok: true; at: string } | { ok: false; at?: string; reason: string };
  /** The last hour, one point a minute, oldest first (minutes with no reading count 0). */
  minutes: MinutePoint[];
  /** The last day, one point an hour, oldest first. */
  hours: HourPoint[];
  /** Counters the service exposes (names), so the page can tell "none yet" from "not counted". */
  counters: string[];
}

/** What `overview.activity` answers. */
export interface ActivityView {
  /** ISO time of this answer. */
  at: string;
  /** How often the console reads every service's /metrics, in seconds. */
  intervalSeconds: number;
  services: Record<string, ServiceActivity>;
}

/** A span of minutes in words, as the charts' titles say it: "last hour", "last 6 hours", "last day". */
export function spanWords(minutes: number): string {
  if (minutes === 60) return 'last hour';
  if (minutes === 1440) return 'last day';
  if (minutes % 60 === 0) return `last ${minutes / 60} hours`;
  return minutes === 1 ? 'last minute' : `last ${minutes} minutes`;
}
