/**
 * A route's screen (the hook a service's own refusals hang on, the persona store's credential refusal
 * above all), over real HTTP with the real verifier and the real identity service: what it is given,
 * when it runs (after the caller is verified, before the nesting check and the schemas), and when it
 * does not (no valid token, a path Express cannot decode, another route that answers).
 */
import { connect } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startTestIdentity, type TestIdentity } from '../../test/support/identity.ts';
import { Api, type ScreenContext } from './api.ts';
import { createApp, renderProblem, toProblem } from './app.ts';
import { createTokenVerifier, type TokenVerifier } from './auth.ts';
import { createLogger } from './logger.ts';
import { problem } from './problem.ts';
import { listen, type RunningService } from './server.ts';

let identity: TestIdentity;
let service: RunningService;
let bare: RunningService;
let token: string;
let verifications = 0;
/** What each screen was given, in order. */
const screened: (Omit<ScreenContext, 'req'> & { operationId: string; body: unknown })[] = [];
/** The principal each handler was given. */
const handled: { operationId: string; account: string }[] = [];

/** The demo's refusal: any string with "SECRET" in a path parameter or a body member, named by where it is. */
function refuseSecrets(operationId: string) {
  return ({ params, principal, req }: ScreenContext) => {
    screened.push({ operationId, params, principal, body: req.body as unknown });
    for (const [name, text] of Object.entries(params))
      if (text.includes('SECRET')) throw problem.unprocessable(`path ${name} holds a secret; keep it elsewhere.`);
    const body = req.body as Record<string, unknown> | undefined;
    if (body && typeof body === 'object' && JSON.stringify(body).includes('SECRET'))
      throw problem.unprocessable('body holds a secret; keep it elsewhere.');
    if (Array.isArray(body))
      throw problem.unprocessable('body is an array; the screen refuses it in its own words, however deep.');
  };
}

function demoApi(verifier: TokenVerifier): Api {
  const api = new Api({ title: 'screens', version: '0', description: 'routes with and without screens' }, verifier);
  // Registered first: a PUT to /v1/boxes/_all is answered here, and never meets the screen of the route below.
  api.route({
    method: 'put',
    path: '/v1/boxes/_all',
    operationId: 'put_all',
    summary: 'no screen',
    responses: { 204: { description: 'ok' } },
    handler: ({ principal }) => (handled.push({ operationId: 'put_all', account: principal.account }), { status: 204 }),
  });
  api.route({
    method: 'put',
    path: '/v1/boxes/{box}/items/{item}',
    operationId: 'put_item',
    summary: 'screened',
    params: z.object({
      box: z.string().max(10),
      item: z.string().regex(/^[a-z]{1,5}$/, 'an item is 1-5 small letters'),
    }),
    body: z.object({ label: z.string().max(5) }),
    responses: { 204: { description: 'ok' } },
    screen: refuseSecrets('put_item'),
    handler: ({ principal }) => (
      handled.push({ operationId: 'put_item', account: principal.account }),
      { status: 204 }
    ),
  });
  return api;
}

beforeAll(async () => {
  identity = await startTestIdentity();
  const real = createTokenVerifier({
    identityUrl: identity.url,
    audience: 'kit-test',
    keys: { file: identity.keysFile },
  });
  const verifier: TokenVerifier = {
    verify: (authorization) => {
      verifications += 1;
      return real.verify(authorization);
    },
    keysAvailable: () => real.keysAvailable(),
    keySetLoads: 0,
  };
  token = await identity.mint(identity.localCredential, 'kit-test');
  const logger = createLogger('kit-test', 'silent');
  service = await listen({ app: createApp({ logger, api: demoApi(verifier) }), host: '127.0.0.1', port: 0, logger });
  // The same Api in a plain Express app that does not mount `screening`: the route still screens.
  const plain = express();
  plain.use(express.json());
  plain.use(demoApi(verifier).router);
  plain.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
    renderProblem(res, toProblem(err)),
  );
  bare = await listen({ app: plain, host: '127.0.0.1', port: 0, logger });
});
afterAll(async () => {
  await service?.close();
  await bare?.close();
  await identity?.close();
});

/** An empty authorization sends none. */
async function put(path: string, body: string, authorization = `Bearer ${token}`, base = service.url) {
  const res = await fetch(base + path, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body,
  });
  const text = await res.text();
  return { status: res.status, detail: text ? ((JSON.parse(text) as { detail?: string }).detail ?? '') : '' };
}
/** What one request made of screens, handlers and verifications. */
async function traced(send: () => Promise<{ status: number; detail: string }>) {
  const [s, h, v] = [screened.length, handled.length, verifications];
  const answer = await send();
  return { ...answer, screens: screened.slice(s), handlers: handled.slice(h), verifications: verifications - v };
}
const deepArrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

describe("a route's screen", () => {
  it('runs with the named path parameters as sent (decoded, not validated) and the verified caller, and the handler gets the same caller', async () => {
    const r = await traced(() => put('/v1/boxes/a%2Fb%20c/items/tea', JSON.stringify({ label: 'x' })));
    expect(r.status).toBe(204);
    expect(r.screens).toHaveLength(1);
    expect(r.screens[0]!.params).toEqual({ box: 'a/b c', item: 'tea' });
    expect(r.screens[0]!.body).toEqual({ label: 'x' });
    expect(r.handlers).toEqual([{ operationId: 'put_item', account: r.screens[0]!.principal.account }]);
  });

  it('verifies the caller once per request, screen and handler together', async () => {
    expect((await traced(() => put('/v1/boxes/a/items/tea', JSON.stringify({ label: 'x' })))).verifications).toBe(1);
  });

  it('refuses in its own words before the schemas would: a parameter and a member that also break their schemas', async () => {
    const path = await traced(() => put('/v1/boxes/a/items/SECRET-and-far-too-long', JSON.stringify({ label: 'x' })));
    expect(path).toMatchObject({ status: 422, detail: 'path item holds a secret; keep it elsewhere.', handlers: [] });
    const body = await traced(() =>
      put('/v1/boxes/a/items/tea', JSON.stringify({ label: 'SECRET, longer than five' })),
    );
    expect(body).toMatchObject({ status: 422, detail: 'body holds a secret; keep it elsewhere.', handlers: [] });
    // A body that is not JSON at all reaches the screen without one, and the route answers 415 after it.
    const text = await fetch(`${service.url}/v1/boxes/a/items/tea`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.status).toBe(415);
  });

  it('comes before the kit\u2019s nesting check for a verified caller; a caller without a valid token gets 401 before the body is looked at, never the screen', async () => {
    const deep = deepArrays(2_000);
    const verified = await traced(() => put('/v1/boxes/a/items/tea', deep));
    expect(verified).toMatchObject({
      status: 422,
      detail: expect.stringMatching(/refuses it in its own words/) as unknown,
      screens: [expect.anything()],
    });
    for (const authorization of ['', 'Bearer not-a-token']) {
      const stranger = await traced(() => put('/v1/boxes/a/items/tea', deep, authorization));
      expect(stranger).toMatchObject({ status: 401, screens: [], handlers: [] });
      const shallow = await traced(() =>
        put('/v1/boxes/a/items/SECRET', JSON.stringify({ label: 'SECRET' }), authorization),
      );
      expect(shallow).toMatchObject({ status: 401, screens: [], handlers: [] });
    }
  });

  it('refuses a caller without a valid token before its body arrives, and closes the connection (a body that never finishes holds nothing)', async () => {
    for (const authorization of ['', 'Authorization: Bearer not-a-token\r\n']) {
      const socket = connect(Number(new URL(service.url).port), '127.0.0.1');
      socket.on('error', () => undefined);
      let received = '';
      socket.setEncoding('utf8').on('data', (d: string) => (received += d));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      // The body announces 1,000 bytes and sends one: the answer comes anyway, and the server closes the connection.
      socket.write(
        `PUT /v1/boxes/a/items/tea HTTP/1.1\r\nHost: 127.0.0.1\r\n${authorization}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
      );
      await closed;
      expect(received).toMatch(/^HTTP\/1\.1 401 /);
      expect(received.toLowerCase()).toContain('connection: close');
      expect(received).toContain('"status":401');
    }
  });

  it('belongs to the route Express matches: a request another route answers never meets it', async () => {
    const r = await traced(() => put('/v1/boxes/_all', JSON.stringify({ label: 'SECRET' })));
    expect(r).toMatchObject({ status: 204, screens: [], handlers: [{ operationId: 'put_all' }], verifications: 1 });
  });

  it('does not run for a path segment that is not percent-encoded UTF-8: the route refuses it with 400 as before', async () => {
    const r = await traced(() => put('/v1/boxes/%ff/items/SECRET', JSON.stringify({ label: 'x' })));
    expect(r).toMatchObject({
      status: 400,
      detail: expect.stringMatching(/percent-encoded UTF-8/) as unknown,
      screens: [],
      handlers: [],
    });
  });

  it('runs in an app that does not mount the screening router too, before the schemas', async () => {
    const r = await traced(() =>
      put('/v1/boxes/a/items/SECRET-and-far-too-long', JSON.stringify({ label: 'x' }), `Bearer ${token}`, bare.url),
    );
    expect(r).toMatchObject({
      status: 422,
      detail: 'path item holds a secret; keep it elsewhere.',
      verifications: 1,
      handlers: [],
    });
    expect(
      (await traced(() => put('/v1/boxes/a/items/tea', JSON.stringify({ label: 'x' }), `Bearer ${token}`, bare.url)))
        .status,
    ).toBe(204);
  });

  it('is refused on a route without a token: a screen runs with the verified caller', () => {
    const api = new Api(
      { title: 't', version: '0', description: 'd' },
      { verify: () => Promise.reject(new Error('unused')) },
    );
    expect(() =>
      api.route({
        method: 'post',
        path: '/x',
        operationId: 'x',
        summary: 'x',
        auth: false,
        responses: { 204: { description: 'ok' } },
        screen: () => {},
        handler: () => ({ status: 204 }),
      }),
    ).toThrow(/needs auth/);
  });
});
