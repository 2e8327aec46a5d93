/**
 * GET /metrics of an app built by createApp, over real HTTP: answers counted by route template and
 * status class (never the path or a value sent), failures and abandoned requests as errors, a service's
 * own counters with declared label values only, and the endpoint refused to anything but this machine.
 */
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Api } from './api.ts';
import { createApp } from './app.ts';
import { createLogger } from './logger.ts';
import { METRICS_CONTENT_TYPE, ServiceMetrics, UNMATCHED_ROUTE } from './metrics.ts';
import { listen, type RunningService } from './server.ts';

interface Answer {
  status: number;
  type: string;
  body: string;
}

function send(
  port: number,
  init: {
    method?: string;
    path: string;
    headers?: Record<string, string>;
    body?: string;
    host?: string;
    address?: string;
  },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: init.address ?? '127.0.0.1',
        port,
        path: init.path,
        method: init.method ?? 'GET',
        setHost: false,
        headers: {
          host: init.host ?? `127.0.0.1:${port}`,
          ...(init.body ? { 'content-type': 'application/json' } : {}),
          ...init.headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
      },
    );
    req.on('error', reject);
    req.end(init.body);
  });
}

/** The value of one series in the text format, or undefined when it is not there. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

const PRIVATE_ID = '9081726354';
let service: RunningService;
let port: number;
let metrics: ServiceMetrics;
let runs: ReturnType<ServiceMetrics['counter']>;
let held: { arrived: () => void; closed: Promise<void> } | undefined;
let arrived: Promise<void>;

beforeAll(async () => {
  const api = new Api({ title: 'demo', version: '1', description: 'demo' });
  api.route({
    method: 'post',
    path: '/v1/things/{id}',
    operationId: 'put_thing',
    summary: 'store a thing',
    auth: false,
    params: z.object({ id: z.string().regex(/^\d+$/) }),
    body: z.object({ name: z.string().max(10) }),
    responses: { 201: { description: 'stored', schema: z.object({ id: z.string() }) } },
    handler: ({ params, body }) => {
      if (body.name === 'boom') throw new Error('internal');
      return { status: 201, body: { id: params.id } };
    },
  });
  metrics = new ServiceMetrics('demo');
  runs = metrics.counter({ name: 'demo_runs_total', help: 'Runs, by outcome.', labels: { outcome: ['ok', 'failed'] } });
  const logger = createLogger('demo', 'silent');
  const app = createApp({
    logger,
    api,
    metrics,
    allowedHosts: ['id.example.test'],
    extraRoutes: (a) =>
      a.get('/v1/slow', (_req, res) => {
        // Holds the answer until the client goes away; the test waits for that moment, not for a clock.
        const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
        held = { arrived: () => undefined, closed };
        release();
      }),
  });
  let release: () => void = () => undefined;
  arrived = new Promise<void>((resolve) => (release = resolve));
  service = await listen({ app, host: '0.0.0.0', port: 0, logger });
  port = Number(new URL(service.url).port);
});
afterAll(() => service?.close());

describe('GET /metrics', () => {
  it('counts answers by method, route template and status class, never by the path sent', async () => {
    expect((await send(port, { method: 'POST', path: `/v1/things/${PRIVATE_ID}`, body: '{"name":"a"}' })).status).toBe(
      201,
    );
    expect(
      (await send(port, { method: 'POST', path: `/v1/things/${PRIVATE_ID}`, body: '{"name":"way too long a name"}' }))
        .status,
    ).toBe(422);
    expect(
      (await send(port, { method: 'POST', path: `/v1/things/${PRIVATE_ID}`, body: '{"name":"boom"}' })).status,
    ).toBe(500);
    expect((await send(port, { path: `/v1/nowhere/${PRIVATE_ID}-secret-profile` })).status).toBe(404);

    const answer = await send(port, { path: '/metrics' });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe(METRICS_CONTENT_TYPE);
    const text = answer.body;
    const route = '/v1/things/{id}';
    expect(sample(text, 'http_requests_total', { service: 'demo', method: 'POST', route, status_class: '2xx' })).toBe(
      1,
    );
    expect(sample(text, 'http_requests_total', { method: 'POST', route, status_class: '4xx' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'POST', route, status_class: '5xx' })).toBe(1);
    expect(sample(text, 'http_request_errors_total', { method: 'POST', route, kind: 'failed' })).toBe(1);
    expect(sample(text, 'http_requests_total', { method: 'GET', route: UNMATCHED_ROUTE, status_class: '4xx' })).toBe(1);
    // Nothing the caller sent in a path becomes a label.
    expect(text).not.toContain(PRIVATE_ID);
    expect(text).not.toContain('secret-profile');
    // Scrapes are not counted as the service's work.
    expect(text).not.toMatch(/route="\/metrics"/);
  });

  it('a request the client abandoned is an error of kind aborted', async () => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/slow', headers: { host: `127.0.0.1:${port}` } });
    req.on('error', () => undefined);
    req.end();
    await arrived;
    req.destroy();
    // The counter's own close listener ran before the route's (it was registered first).
    await held!.closed;
    const text = (await send(port, { path: '/metrics' })).body;
    expect(sample(text, 'http_request_errors_total', { method: 'GET', route: '/v1/slow', kind: 'aborted' })).toBe(1);
  });

  it('a service\u2019s own counter takes only the label values it declared, and starts every series at 0', async () => {
    expect(sample((await send(port, { path: '/metrics' })).body, 'demo_runs_total', { outcome: 'failed' })).toBe(0);
    runs.inc({ outcome: 'ok' });
    runs.inc({ outcome: 'ok' }, 2);
    expect(() => runs.inc({ outcome: 'household' })).toThrow(/label outcome takes one of ok, failed/);
    expect(() => runs.inc({})).toThrow(/label outcome/);
    expect(() => metrics.counter({ name: 'DemoRuns', help: 'x' })).toThrow(/_total/);
    const text = (await send(port, { path: '/metrics' })).body;
    expect(sample(text, 'demo_runs_total', { outcome: 'ok' })).toBe(3);
    expect(text).not.toContain('household');
  });

  it('answers only this machine: not a public name, not through a proxy, not another Host', async () => {
    const publicName = await send(port, { path: '/metrics', host: 'id.example.test' });
    expect(publicName.status).toBe(403);
    expect(JSON.parse(publicName.body).detail).toMatch(
      /only on this machine: call it at http:\/\/127\.0\.0\.1:\d+\/metrics/,
    );
    expect((await send(port, { path: '/metrics', headers: { 'x-forwarded-for': '203.0.113.9' } })).status).toBe(403);
    expect((await send(port, { path: '/metrics', headers: { forwarded: 'for=203.0.113.9' } })).status).toBe(403);
    expect((await send(port, { path: '/metrics', host: 'evil.example' })).status).toBe(421);
    // The public name still reaches the service's other routes; only /metrics is this machine's.
    expect((await send(port, { path: '/openapi.json', host: 'id.example.test' })).status).toBe(200);
  });

  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  if (!external)
    console.warn(
      'metrics.test: this machine has no non-loopback IPv4 address, so a peer from the network cannot be tried here.',
    );
  it.skipIf(!external)('refuses a peer that is not loopback, even with a loopback Host', async () => {
    const answer = await send(port, { path: '/metrics', address: external! });
    expect(answer.status).toBe(403);
  });
});
