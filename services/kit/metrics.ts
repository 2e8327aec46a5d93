/**
 * Each service's counters, in the Prometheus text format through prom-client, at `GET /metrics`:
 * HTTP answers by method, route template, status class and caller (the app's own or a hub's, as the
 * service proved it: callers.ts), and whatever counters the service adds.
 * A label never carries a profile, a key, a prompt or any content: the HTTP labels are the route's
 * template (`/v1/personas/{profile}`), never the path sent, and a service's own counters take only
 * the label values it declared when it made them. `/metrics` answers only this machine (loopback
 * address, loopback Host, no forwarding proxy in between), so a user's own Prometheus can scrape it
 * and nothing on the network can.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { Counter, Registry } from 'prom-client';
import { provenCaller, type Caller } from './callers.ts';
import { isLoopbackHost } from './config.ts';
import { parseHostHeader } from './host-check.ts';
import { PROBE_PATHS } from './probes.ts';
import { problem } from './problem.ts';
import { RELAYED_PEER } from './supervised.ts';

/** Label values a counter accepts, per label name; anything else is a programming error. */
export type LabelValues<L extends string> = Readonly<Record<L, readonly string[]>>;

export interface CounterSpec<L extends string> {
  /** snake_case, ending in `_total` (Prometheus' convention for counters). */
  name: string;
  help: string;
  /** Every label and the values it may take: declared up front, so no caller's data can become a label. */
  labels?: LabelValues<L>;
}

/** A counter whose labels take only declared values. */
export interface BoundedCounter<L extends string> {
  inc(labels?: Partial<Record<L, string>>, by?: number): void;
}

export const METRICS_PATH = '/metrics';
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Route label of an answer no route took (unknown paths, refusals before routing): never the path sent. */
export const UNMATCHED_ROUTE = '(unmatched)';
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const NAME = /^[a-z][a-z0-9_]*_total$/;

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requestCounter: Counter<'method' | 'route' | 'status_class' | 'caller'>;
  private readonly errorCounter: Counter<'method' | 'route' | 'kind' | 'caller'>;
  private readonly handles = new Map<Counter<string>, Map<string, { inc(): void }>>();

  /** `service` becomes a default label of every series (`service="persona-store"`), as a scrape of several services needs. */
  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    this.requestCounter = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route template, status class (2xx, 3xx, 4xx, 5xx) and caller (app: the app itself or the person\u2019s own credential; hub: a hub\u2019s credential; unverified: nothing proven).',
      labelNames: ['method', 'route', 'status_class', 'caller'],
      registers: [this.registry],
    });
    this.errorCounter = new Counter({
      name: 'http_request_errors_total',
      help: 'HTTP requests that failed: answered 5xx (kind="failed"), or the connection closed before the answer (kind="aborted"); by caller, as http_requests_total.',
      labelNames: ['method', 'route', 'kind', 'caller'],
      registers: [this.registry],
    });
  }

  /** A service's own counter. Its labels accept only the values declared in `spec.labels`; every combination starts at 0. */
  counter<L extends string = never>(spec: CounterSpec<L>): BoundedCounter<L> {
    if (!NAME.test(spec.name)) throw new Error(`Counter name ${spec.name} must be snake_case and end in _total.`);
    const declared = (spec.labels ?? {}) as LabelValues<L>;
    const names = Object.keys(declared) as L[];
    const counter = new Counter<L>({ name: spec.name, help: spec.help, labelNames: names, registers: [this.registry] });
    // Series exist from the start, so a scrape (and the console's chart) sees 0 rather than nothing. Each
    // series' handle is made once: prom-client otherwise sorts and hashes the labels at every increment.
    const series = new Map<string, { inc(by: number): void }>();
    for (const combination of combinations(declared, names)) {
      const handle = counter.labels(combination);
      handle.inc(0);
      series.set(seriesKey(names.map((name) => combination[name])), handle);
    }
    return {
      inc(labels = {}, by = 1) {
        const handle = series.get(seriesKey(names.map((name) => labels[name])));
        if (!handle) {
          const wrong = names.find((name) => !declared[name].includes(labels[name] as string))!;
          throw new Error(`Counter ${spec.name}: label ${wrong} takes one of ${declared[wrong].join(', ')}.`);
        }
        handle.inc(by);
      },
    };
  }

  /**
   * The series of an HTTP counter, its handle made once (prom-client otherwise sorts and hashes the
   * labels at every increment). Bounded like the series themselves: methods, route templates, classes.
   */
  private handle<L extends string>(counter: Counter<L>, labels: Record<L, string>): { inc(): void } {
    let handles = this.handles.get(counter);
    if (!handles) this.handles.set(counter, (handles = new Map()));
    const key = seriesKey(Object.values(labels));
    let handle = handles.get(key);
    if (!handle) handles.set(key, (handle = counter.labels(labels)));
    return handle;
  }

  /** Middleware, mounted first: counts every answer when it is sent, or when the client left before it. */
  readonly countRequests: RequestHandler = (req, res, next) => {
    const labels = () => {
      const route = routeTemplate(req);
      return { method: METHODS.has(req.method) ? req.method : 'other', route, caller: callerOf(req, route) };
    };
    res.on('finish', () => {
      const { method, route, caller } = labels();
      // Scrapes are not the service's work: counting them would draw the scraper's own rhythm on every chart.
      if (route === METRICS_PATH) return;
      const status = res.statusCode;
      this.handle(this.requestCounter, { method, route, status_class: `${Math.floor(status / 100)}xx`, caller }).inc();
      if (status >= 500) this.handle(this.errorCounter, { method, route, kind: 'failed', caller }).inc();
    });
    res.on('close', () => {
      if (!res.writableFinished) this.handle(this.errorCounter, { ...labels(), kind: 'aborted' }).inc();
    });
    next();
  };

  /** The Prometheus text, as `GET /metrics` answers it. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * `GET /metrics`: the text for a caller on this machine; others go to `refuse` (the service's own
   * envelope), by default a 403 problem through the app's error handler.
   */
  handler(refuse?: (req: Request, res: Response, message: string) => void): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      if (!fromThisMachine(req)) {
        const message = `${METRICS_PATH} answers only on this machine: call it at http://127.0.0.1:${req.socket.localPort ?? ''}${METRICS_PATH}, not through a proxy or under another name.`;
        if (refuse) return refuse(req, res, message);
        return next(problem.forbidden(message));
      }
      this.text().then(
        (text) => res.status(200).type(METRICS_CONTENT_TYPE).set('Cache-Control', 'no-store').send(text),
        next,
      );
    };
  }
}

/**
 * Who made the request, as the service proved it (callers.ts); a probe is the app's whoever asks, as it
 * does no work (the supervisor asks every few seconds).
 */
function callerOf(req: Request, route: string): Caller {
  if ((PROBE_PATHS as readonly string[]).includes(route)) return 'app';
  return provenCaller(req) ?? 'unverified';
}

/** The route's template in OpenAPI style (`/v1/personas/{profile}`), or UNMATCHED_ROUTE: never the path sent. */
export function routeTemplate(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path !== 'string') return UNMATCHED_ROUTE;
  return `${req.baseUrl ?? ''}${path}`.replace(/:(\w+)/g, '{$1}') || '/';
}

/**
 * A request from this machine and addressed to it: a loopback peer, a loopback Host, and no proxy's
 * forwarding headers (a reverse proxy on this machine serving a public name connects from loopback).
 */
export function fromThisMachine(req: Request): boolean {
  // A request the supervisor relays arrives over a socket file, with no address: the relayed port's (server.ts).
  const relayed = req.app.locals[RELAYED_PEER] as string | undefined;
  const peer = (req.socket.remoteAddress ?? relayed ?? '').replace(/^::ffff:/, '');
  if (!(peer === '::1' || /^127(\.\d{1,3}){3}$/.test(peer))) return false;
  const host = parseHostHeader(req.headers.host);
  if (!host || !isLoopbackHost(host.name)) return false;
  return (
    req.headers.forwarded === undefined &&
    req.headers['x-forwarded-for'] === undefined &&
    req.headers['x-forwarded-host'] === undefined
  );
}

/** One string per combination of label values (a value never holds U+0000). */
function seriesKey(values: (string | undefined)[]): string {
  return values.join('\u0000');
}

function combinations<L extends string>(declared: LabelValues<L>, names: L[]): Record<L, string>[] {
  let out: Record<string, string>[] = [{}];
  for (const name of names)
    out = out.flatMap((partial) => declared[name].map((value) => ({ ...partial, [name]: value })));
  return out as Record<L, string>[];
}
