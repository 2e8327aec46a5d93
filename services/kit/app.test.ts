import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Api } from './api.ts';
import { createApp } from './app.ts';
import { createLogger } from './logger.ts';
import { mountProbes } from './probes.ts';
import { problem } from './problem.ts';
import { listen, type RunningService } from './server.ts';

let service: RunningService;
let ready = true;

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
    responses: { 201: { description: 'stored', schema: z.object({ id: z.string(), name: z.string() }) } },
    handler: ({ params, body }) => {
      if (body.name === 'boom') throw new Error('internal detail that must not leak');
      if (body.name === 'gone') throw problem.notFound('No such thing; create it first.');
      return { status: 201, body: { ...params, ...body } };
    },
  });
  const logger = createLogger('demo', 'silent');
  const app = createApp({ logger, api, bodyLimit: '1kb', extraRoutes: (a) => mountProbes(a, { flag: () => ready }, { flag: 'the flag is down' }) });
  service = await listen({ app, host: '127.0.0.1', port: 0, logger });
});
afterAll(() => service?.close());

const post = (path: string, body: string, type = 'application/json') =>
  fetch(service.url + path, { method: 'POST', headers: { 'content-type': type }, body });

describe('the app factory', () => {
  it('validates the request and answers through the response schema', async () => {
    const r = await post('/v1/things/7', JSON.stringify({ name: 'x' }));
    expect(r.status).toBe(201);
    expect(await r.json()).toEqual({ id: '7', name: 'x' });
  });

  it('answers problems whose detail names the fix: 400, 413, 415, 422, 404, 500 without a stack', async () => {
    const cases: [Response, number, RegExp][] = [
      [await post('/v1/things/7', '{'), 400, /valid JSON/],
      [await post('/v1/things/7', JSON.stringify({ name: 'x'.repeat(2000) })), 413, /larger than/],
      [await post('/v1/things/7', 'name=x', 'text/plain'), 415, /application\/json/],
      [await post('/v1/things/7', JSON.stringify({ name: 'x'.repeat(11) })), 422, /body member name/],
      [await post('/v1/things/x', JSON.stringify({ name: 'x' })), 422, /path member id/],
      [await post('/v1/things/7', JSON.stringify({ name: 'gone' })), 404, /create it first/],
      [await fetch(`${service.url}/v1/nowhere`), 404, /openapi\.json/],
      [await post('/v1/things/7', JSON.stringify({ name: 'boom' })), 500, /try again/],
    ];
    for (const [res, status, detail] of cases) {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const body = (await res.json()) as { detail: string; status: number };
      expect(body.status).toBe(status);
      expect(body.detail).toMatch(detail);
      expect(JSON.stringify(body)).not.toMatch(/internal detail|\.ts:\d+|at \w+ \(/);
    }
  });

  it('publishes an OpenAPI document with operation ids and serves /docs from local files only', async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string }>> };
    expect(doc.paths['/v1/things/{id}']!.post!.operationId).toBe('put_thing');
    const page = await (await fetch(`${service.url}/docs`)).text();
    const sources = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      expect(s.startsWith('/')).toBe(true);
      expect((await fetch(service.url + s)).status).toBe(200);
    }
  });

  it('answers /healthy always and /ready 503 naming what fails', async () => {
    expect((await fetch(`${service.url}/ready`)).status).toBe(200);
    ready = false;
    const r = await fetch(`${service.url}/ready`);
    expect(r.status).toBe(503);
    expect(((await r.json()) as { detail: string }).detail).toMatch(/flag is down/);
    expect((await fetch(`${service.url}/healthy`)).status).toBe(200);
    ready = true;
  });
});
