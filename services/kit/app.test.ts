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

describe('request logging and stopping', () => {
  it('writes exactly one log line per request: id, method, path without query, status, time; never headers, query or body', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('log-test', 'info', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const api = new Api({ title: 'log test', version: '1', description: 'log test' });
    api.route({
      method: 'post',
      path: '/v1/notes',
      operationId: 'add_note',
      summary: 'add a note',
      auth: false,
      body: z.object({ content: z.string() }),
      responses: { 200: { description: 'ok', schema: z.object({ ok: z.boolean() }) } },
      handler: () => ({ body: { ok: true } }),
    });
    const running = await listen({ app: createApp({ logger, api }), host: '127.0.0.1', port: 0, logger: createLogger('log-test', 'silent') });
    try {
      const secret = 'sekret-body-3f9a';
      const sent = [
        await fetch(`${running.url}/v1/notes?q=query-secret-77`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer header-secret-42', cookie: 'c=cookie-secret-9' },
          body: JSON.stringify({ content: secret }),
        }),
        await fetch(`${running.url}/v1/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"content": 5}' }),
        await fetch(`${running.url}/nowhere?token=query-secret-78`),
      ];
      const requests = lines.filter((l) => l.msg === 'request' || l.msg === 'request refused');
      expect(requests.map((l) => [l.method, l.path, l.status])).toEqual([
        ['POST', '/v1/notes', 200],
        ['POST', '/v1/notes', 422],
        ['GET', '/nowhere', 404],
      ]);
      expect(sent.map((r) => r.status)).toEqual([200, 422, 404]);
      for (const l of requests) {
        expect(typeof l.req_id).toBe('string');
        expect(typeof l.ms).toBe('number');
        expect(l.service).toBe('log-test');
      }
      expect(new Set(requests.map((l) => l.req_id)).size).toBe(3);
      const all = JSON.stringify(lines);
      for (const leak of [secret, 'header-secret-42', 'cookie-secret-9', 'query-secret-77', 'query-secret-78']) expect(all).not.toContain(leak);
    } finally {
      await running.close();
    }
  });

  it('on close, stops accepting, lets an in-flight request finish, then runs the service cleanup', async () => {
    const events: string[] = [];
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const logger = createLogger('drain-test', 'silent');
    const app = createApp({
      logger,
      extraRoutes: (a) =>
        a.get('/slow', async (_req, res) => {
          entered();
          await new Promise((r) => setTimeout(r, 400));
          events.push('answered');
          res.json({ done: true });
        }),
    });
    const running = await listen({ app, host: '127.0.0.1', port: 0, logger, onClose: () => void events.push('cleanup') });
    const slow = fetch(`${running.url}/slow`).then(async (r) => ({ status: r.status, body: await r.json() }));
    await inside;
    const closed = running.close().then(() => events.push('closed'));
    // While it drains, a new connection is refused.
    await expect(fetch(`${running.url}/slow`, { headers: { connection: 'close' } })).rejects.toThrow();
    expect(await slow).toEqual({ status: 200, body: { done: true } });
    await closed;
    expect(events).toEqual(['answered', 'cleanup', 'closed']);
  });
});
