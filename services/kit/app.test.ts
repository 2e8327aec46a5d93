import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Api } from './api.ts';
import { createApp } from './app.ts';
import { createLogger } from './logger.ts';
import { mountProbes } from './probes.ts';
import { problem } from './problem.ts';
import { listen, type RunningService } from './server.ts';

/** One request with the Host header as given (fetch sets its own); resolves with status, content type and body. */
function withHost(url: string, host: string, init: { method?: string; path?: string; body?: string } = {}) {
  return new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
    const target = new URL(init.path ?? '/', url);
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: init.method ?? 'GET',
        // An empty host means none at all (as an HTTP/1.0 client may send).
        setHost: false,
        headers: { ...(host ? { host } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
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
  const app = createApp({
    logger,
    api,
    bodyLimit: '1kb',
    extraRoutes: (a) => mountProbes(a, { flag: () => ready }, { flag: 'the flag is down' }),
  });
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
      // Path segments that are not percent-encoded UTF-8: a lone surrogate, a byte that starts no character, a cut-off escape.
      [await post('/v1/things/%ED%A0%80', JSON.stringify({ name: 'x' })), 400, /not valid percent-encoded UTF-8/],
      [await post('/v1/things/%ff', JSON.stringify({ name: 'x' })), 400, /not valid percent-encoded UTF-8/],
      [await post('/v1/things/%E0%A4%A', JSON.stringify({ name: 'x' })), 400, /not valid percent-encoded UTF-8/],
      // Nesting past the safety net is refused before any route walks it; up to it, the route decides.
      [
        await post('/v1/things/7', `{"name":"x","extra":${'['.repeat(400)}${']'.repeat(400)}}`),
        400,
        /more than 128 levels deep/,
      ],
      [await post('/v1/things/7', `{"name":${'['.repeat(127)}${']'.repeat(127)}}`), 422, /body member name/],
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
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
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

describe('the Host check (DNS rebinding)', () => {
  it('answers a loopback Host with or without a port: 127.x.x.x, localhost, [::1]', async () => {
    for (const host of [
      '127.0.0.1',
      `127.0.0.1:${service.port}`,
      '127.1.2.3:80',
      'localhost',
      'LocalHost:9',
      '[::1]',
      `[::1]:${service.port}`,
    ]) {
      expect((await withHost(service.url, host, { path: '/healthy' })).status, host).toBe(200);
    }
  });

  it('refuses every other Host with 421 before anything runs: probes, the document, the docs, unknown paths and writes alike', async () => {
    const hosts = [
      'evil.example',
      `evil.example:${service.port}`,
      '127.0.0.1.evil.example',
      'localhost.evil.example',
      'localhost.',
      '0.0.0.0',
      '[::2]',
      '127.0.0.1@evil.example',
      '',
      ' ',
    ];
    const targets = [
      { path: '/healthy' },
      { path: '/ready' },
      { path: '/openapi.json' },
      { path: '/docs' },
      { path: '/docs/assets/swagger-ui.css' },
      { path: '/nowhere?x=1' },
      // A write that would succeed from loopback, and a body that would not even parse: the Host is judged first.
      { method: 'POST', path: '/v1/things/7', body: JSON.stringify({ name: 'x' }) },
      { method: 'POST', path: '/v1/things/7', body: '{' },
    ];
    for (const host of hosts) {
      for (const target of targets) {
        const res = await withHost(service.url, host, target);
        expect(res.status, `${host} ${target.path}`).toBe(421);
        expect(res.type).toMatch(/^application\/problem\+json/);
        const body = JSON.parse(res.body) as { status: number; title: string; detail: string };
        expect(body).toMatchObject({ status: 421, title: 'Misdirected Request' });
        expect(body.detail).toContain(`call it at http://127.0.0.1:${service.port}/`);
        if (host.trim()) expect(body.detail).not.toContain(host.trim());
      }
    }
  });

  it('answers the host of a configured public URL and of the allowed hosts, and still no other', async () => {
    const logger = createLogger('public-test', 'silent');
    const app = createApp({
      logger,
      publicUrl: 'https://id.example.com',
      allowedHosts: ['proxy.example.net:8443'],
      extraRoutes: (a) => mountProbes(a, {}),
    });
    const running = await listen({ app, host: '127.0.0.1', port: 0, logger });
    try {
      for (const host of ['id.example.com', 'ID.example.com:443', 'proxy.example.net:8443', '127.0.0.1']) {
        expect((await withHost(running.url, host, { path: '/healthy' })).status, host).toBe(200);
      }
      for (const host of ['proxy.example.net', 'proxy.example.net:80', 'example.com', 'evil.example']) {
        const res = await withHost(running.url, host, { path: '/healthy' });
        expect(res.status, host).toBe(421);
        expect((JSON.parse(res.body) as { detail: string }).detail).toMatch(
          /127\.0\.0\.1, \[::1\], localhost, id\.example\.com, proxy\.example\.net/,
        );
      }
    } finally {
      await running.close();
    }
  });
});

describe('the OpenAPI document\u2019s server', () => {
  const documentServers = async (url: string) =>
    ((await (await fetch(`${url}/openapi.json`)).json()) as { servers: { url: string }[] }).servers;
  const api = () => {
    const a = new Api({ title: 'servers', version: '1', description: 'servers' });
    a.route({
      method: 'get',
      path: '/v1/x',
      operationId: 'x',
      summary: 'x',
      auth: false,
      responses: { 200: { description: 'ok' } },
      handler: () => ({}),
    });
    return a;
  };

  it('is where the service listens, never the Host of a request, even of the first one', async () => {
    const logger = createLogger('servers-test', 'silent');
    const running = await listen({ app: createApp({ logger, api: api() }), host: '127.0.0.1', port: 0, logger });
    try {
      // A hostile Host is refused; a loopback one that is not the listen address must not end up in the document either.
      expect((await withHost(running.url, 'evil.example', { path: '/openapi.json' })).status).toBe(421);
      const first = JSON.parse((await withHost(running.url, 'localhost:1', { path: '/openapi.json' })).body) as {
        servers: { url: string }[];
      };
      expect(first.servers).toEqual([{ url: running.url }]);
      expect(await documentServers(running.url)).toEqual([{ url: running.url }]);
    } finally {
      await running.close();
    }
  });

  it('is the public URL when the service has one', async () => {
    const logger = createLogger('servers-test', 'silent');
    const running = await listen({
      app: createApp({ logger, api: api(), publicUrl: 'https://id.example.com' }),
      host: '127.0.0.1',
      port: 0,
      logger,
    });
    try {
      expect(await documentServers(running.url)).toEqual([{ url: 'https://id.example.com' }]);
    } finally {
      await running.close();
    }
  });
});

describe('request logging and stopping', () => {
  it('writes exactly one log line per request: id, method, path without query, status, time; never headers, query or body', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('log-test', 'info', {
      write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
    });
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
    const running = await listen({
      app: createApp({ logger, api }),
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('log-test', 'silent'),
    });
    try {
      const secret = 'sekret-body-3f9a';
      const sent = [
        await fetch(`${running.url}/v1/notes?q=query-secret-77`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer header-secret-42',
            cookie: 'c=cookie-secret-9',
          },
          body: JSON.stringify({ content: secret }),
        }),
        await fetch(`${running.url}/v1/notes`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"content": 5}',
        }),
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
      for (const leak of [secret, 'header-secret-42', 'cookie-secret-9', 'query-secret-77', 'query-secret-78'])
        expect(all).not.toContain(leak);
    } finally {
      await running.close();
    }
  });

  it('names the declared route, never the path sent: a key in the path (a field, a profile) stays out of the log', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger('log-test', 'info', {
      write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>),
    });
    const api = new Api({ title: 'log test', version: '1', description: 'log test' });
    api.route({
      method: 'put',
      path: '/v1/personas/{profile}/fields/{key}',
      operationId: 'put_field',
      summary: 'set a field',
      auth: false,
      body: z.object({ value: z.string() }),
      responses: { 200: { description: 'ok', schema: z.object({ ok: z.boolean() }) } },
      handler: () => ({ body: { ok: true } }),
    });
    const running = await listen({
      app: createApp({
        logger,
        api,
        bodyLimit: '1kb',
        extraRoutes: (a) => mountProbes(a, { ok: () => true }, { ok: 'never' }),
      }),
      host: '127.0.0.1',
      port: 0,
      logger: createLogger('log-test', 'silent'),
    });
    try {
      const put = (path: string, body: string) =>
        fetch(running.url + path, { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
      const statuses = [
        (await put('/v1/personas/ada-profile-key/fields/diagnosis_secretive_key', '{"value":"x"}')).status,
        (await put('/v1/personas/ada-profile-key/fields/diagnosis_secretive_key', '{"value":1}')).status,
        (await put('/v1/personas/ada-profile-key/fields/diagnosis_secretive_key', `{"value":"${'x'.repeat(2000)}"}`))
          .status,
        (await fetch(`${running.url}/v1/personas/ada-profile-key/fieldz/diagnosis_secretive_key`)).status,
        (await fetch(`${running.url}/healthy`)).status,
      ];
      expect(statuses).toEqual([200, 422, 413, 404, 200]);
      const requests = lines.filter((l) => l.msg === 'request' || l.msg === 'request refused');
      expect(requests.map((l) => l.path)).toEqual([
        '/v1/personas/{profile}/fields/{key}',
        '/v1/personas/{profile}/fields/{key}',
        '/v1/personas/{profile}/fields/{key}',
        '/v1/\u2026',
        '/healthy',
      ]);
      const all = JSON.stringify(lines);
      for (const leak of ['diagnosis_secretive_key', 'ada-profile-key']) expect(all).not.toContain(leak);
    } finally {
      await running.close();
    }
  });

  it('on close, stops accepting, lets an in-flight request finish, then runs the service cleanup', async () => {
    const events: string[] = [];
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    // The handler answers when the test says so: after a new connection has been refused.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const logger = createLogger('drain-test', 'silent');
    const app = createApp({
      logger,
      extraRoutes: (a) =>
        a.get('/slow', async (_req, res) => {
          entered();
          await released;
          events.push('answered');
          res.json({ done: true });
        }),
    });
    const running = await listen({
      app,
      host: '127.0.0.1',
      port: 0,
      logger,
      onClose: () => void events.push('cleanup'),
    });
    const slow = fetch(`${running.url}/slow`).then(async (r) => ({ status: r.status, body: await r.json() }));
    await inside;
    const closed = running.close().then(() => events.push('closed'));
    // While it drains, a new connection is refused, and nothing is cleaned up under the request.
    await expect(fetch(`${running.url}/slow`, { headers: { connection: 'close' } })).rejects.toThrow();
    expect(events).toEqual([]);
    release();
    expect(await slow).toEqual({ status: 200, body: { done: true } });
    await closed;
    expect(events).toEqual(['answered', 'cleanup', 'closed']);
  });
});
