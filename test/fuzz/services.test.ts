/**
 * Hostile input against every route of the four real services and the console, running as the app runs
 * them: the real supervisor starts identity, the persona store, the gateway (on the GitHub double) and
 * the provider (its CLI the scripted stand-in); the console server is the headless one.
 *
 * Routes come from each service's own /openapi.json, the console's methods from its API. Each route gets hostile path segments, query
 * strings, members and whole bodies, with a valid token, with none and with broken ones: first every
 * route against every hostile input of a table, then random combinations drawn with the file's seed.
 * The property (well-formed-answer.ts): never a 5xx, every refusal in the service's envelope with a
 * sentence, no stack trace, no secret. The upstreams (identity, the double) are kept healthy, so no
 * 502/503/504 is expected either; at the end every service is still up, never restarted, and the
 * double saw no request GitHub would refuse as malformed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConsoleServer } from '../../main/console/server-parts.ts';
import { METHOD_NAMES } from '../../main/console/methods.ts';
import { startConsoleServer } from '../../main/console/server.ts';
import {
  SETTLE_MS,
  seedConsoleData,
  startConsoleStack,
  type ConsoleStack,
  type Seeded,
} from '../support/console-stack.ts';
import { TEST_SEED, propertyOptions, reportSeedOnFailure } from '../support/seed.ts';
import {
  HOSTILE_AUTHORIZATIONS,
  HOSTILE_BODIES,
  HOSTILE_CONTENT_TYPES,
  HOSTILE_QUERY_VALUES,
  HOSTILE_SEGMENTS,
  HOSTILE_VALUES,
  hostileQueries,
  memberPaths,
  sampleOf,
  withMember,
  type Schema,
} from './hostile-input.ts';
import { describeRequest, send, type RawRequest } from './raw-request.ts';
import { fault, type Envelope } from './well-formed-answer.ts';

reportSeedOnFailure();
// Thousands of real requests against real processes on a loaded 2-core machine: backstops only.
vi.setConfig({ testTimeout: 900_000, hookTimeout: SETTLE_MS + 120_000 });

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  schema: Schema;
}

interface Route {
  method: string;
  /** OpenAPI path: /v1/personas/{profile} */
  template: string;
  parameters: Parameter[];
  body?: Schema;
}

interface Target {
  name: string;
  base: string;
  envelope: Envelope;
  routes: Route[];
  components: Record<string, Schema>;
  /** Values that name things that exist (a persona, a repository), by parameter or member name. */
  known: Record<string, unknown>;
  /** The headers of a request that is allowed to reach the route (a valid token, the connection's profile). */
  authorized: (route: Route) => Record<string, string>;
}

/**
 * known: requests that answered 5xx in code this test's author does not own, reported to its owners.
 * They are not skipped: the test "requests that once answered 5xx" sends each of them and fails until
 * each answers a well-formed 4xx.
 */
const KNOWN: { target: string; request: RawRequest; why: string }[] = [];

let stack: ConsoleStack;
let seeded: Seeded;
let consoleServer: ConsoleServer;
let targets: Target[];
let secrets: string[];
const faults: string[] = [];

async function json(url: string, init: RequestInit = {}): Promise<unknown> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${res.status}: ${await res.text()}`);
  return res.json();
}

function routesOf(doc: {
  paths: Record<
    string,
    Record<string, { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: Schema }> } }>
  >;
}): Route[] {
  return Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      method: method.toUpperCase(),
      template,
      parameters: (op.parameters ?? []).map((p) => ({ name: p.name, in: p.in, schema: p.schema })),
      ...(op.requestBody ? { body: op.requestBody.content['application/json']!.schema } : {}),
    })),
  );
}

const PROVIDER_BODY = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: { type: 'string', enum: ['sonnet'] },
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: { role: { enum: ['user'] }, content: { type: 'string' } },
      },
    },
  },
} as Schema;

/** Every console method (a new one is fuzzed the day it is added) but those that stop services (stop, restart, stopAll, startAll), which would take the stack down under the test. */
const CONSOLE_METHODS = METHOD_NAMES.filter(
  (m) => !['services.stop', 'services.stopAll', 'services.restart', 'services.startAll'].includes(m),
);
const CONSOLE_PARAM_NAMES = [
  'name',
  'profile',
  'q',
  'limit',
  'after',
  'filter',
  'token',
  'since',
  'until',
  'action',
  'target_kind',
  'state',
  'kind',
  'id',
  'key',
  'card',
  'confirm',
  'pinned',
  'label',
];

/** A path from its template, each parameter's segment given (already on-the-wire text). */
function pathOf(route: Route, segments: Record<string, string>, query = ''): string {
  return route.template.replace(/\{(\w+)\}/g, (_m, name: string) => segments[name] ?? 'x') + (query ? `?${query}` : '');
}

function validSegments(target: Target, route: Route): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of route.parameters.filter((x) => x.in === 'path')) {
    const value = p.name in target.known ? target.known[p.name] : sampleOf(p.schema, target.components, {}, TEST_SEED);
    out[p.name] = encodeURIComponent(String(value));
  }
  return out;
}

function validBody(target: Target, route: Route): unknown {
  return route.body ? sampleOf(route.body, target.components, target.known, TEST_SEED) : undefined;
}

/** Sends one request and records what is wrong with its answer (every fault is listed at the end, not only the first). */
async function probe(target: Target, req: RawRequest): Promise<string | undefined> {
  let problem: string | undefined;
  try {
    const answer = await send(target.base, req);
    problem = fault(answer, target.envelope, secrets, req.method);
  } catch (err) {
    problem = `no answer: ${(err as Error).message}`;
  }
  if (problem) faults.push(`${target.name}: ${describeRequest(target.base, req)}\n    → ${problem}`);
  return problem;
}

/** Every route against every entry of the hostile tables. */
async function sweep(target: Target): Promise<number> {
  let sent = 0;
  const go = async (req: RawRequest) => {
    sent += 1;
    await probe(target, req);
  };
  for (const route of target.routes) {
    const auth = target.authorized(route);
    const segments = validSegments(target, route);
    const body = validBody(target, route);
    const bodyText = body === undefined ? undefined : JSON.stringify(body);
    const json = bodyText === undefined ? {} : { body: bodyText, contentType: 'application/json' };
    // Path: each parameter in turn takes each hostile segment.
    for (const p of route.parameters.filter((x) => x.in === 'path')) {
      for (const segment of HOSTILE_SEGMENTS)
        await go({
          method: route.method,
          path: pathOf(route, { ...segments, [p.name]: segment }),
          headers: auth,
          ...json,
        });
    }
    // Query: each parameter takes each hostile value; then attacks on the query parser itself.
    const queryNames = route.parameters.filter((x) => x.in === 'query').map((x) => x.name);
    for (const name of queryNames) {
      for (const value of HOSTILE_QUERY_VALUES)
        await go({ method: route.method, path: pathOf(route, segments, `${name}=${value}`), headers: auth, ...json });
    }
    for (const query of hostileQueries(queryNames[0] ?? 'limit'))
      await go({ method: route.method, path: pathOf(route, segments, query), headers: auth, ...json });
    // Headers the route reads (the gateway's connection profile).
    for (const h of route.parameters.filter((x) => x.in === 'header')) {
      for (const value of [
        '',
        'x'.repeat(5_000),
        '__proto__',
        '../work',
        'work\u00e9'.normalize('NFD').replace(/[^\x20-\x7e]/g, ''),
      ]) {
        await go({
          method: route.method,
          path: pathOf(route, segments),
          headers: { ...auth, [h.name]: value },
          ...json,
        });
      }
    }
    // Tokens: none and broken ones.
    if (Object.keys(auth).length > 0) {
      for (const authorization of HOSTILE_AUTHORIZATIONS) {
        await go({
          method: route.method,
          path: pathOf(route, segments),
          headers: authorization ? { ...auth, authorization } : {},
          ...json,
        });
      }
    }
    if (!route.body) continue;
    // Body: each member (and the body itself) replaced by each hostile value; then whole hostile bodies and media types.
    for (const member of memberPaths(body)) {
      for (const value of HOSTILE_VALUES) {
        await go({
          method: route.method,
          path: pathOf(route, segments),
          headers: auth,
          body: withMember(body, member, value),
          contentType: 'application/json',
        });
      }
    }
    for (const name of ['__proto__', 'constructor', 'prototype', '\u0000', '']) {
      await go({
        method: route.method,
        path: pathOf(route, segments),
        headers: auth,
        body: withMember(body, [name], '{"polluted":true}'),
        contentType: 'application/json',
      });
    }
    for (const junk of HOSTILE_BODIES)
      await go({
        method: route.method,
        path: pathOf(route, segments),
        headers: auth,
        body: junk,
        contentType: 'application/json',
      });
    for (const contentType of HOSTILE_CONTENT_TYPES)
      await go({ method: route.method, path: pathOf(route, segments), headers: auth, body: bodyText, contentType });
  }
  // Paths no route has, and methods no route takes.
  for (const segment of HOSTILE_SEGMENTS) {
    for (const prefix of ['/', '/v1/', '/docs/assets/', '/.well-known/'])
      await go({ method: 'GET', path: `${prefix}${segment}`, headers: target.authorized(target.routes[0]!) });
  }
  for (const method of ['OPTIONS', 'HEAD', 'TRACE', 'PATCH', 'PUT', 'DELETE', 'PROPFIND']) {
    await go({
      method,
      path: target.routes[0]!.template.replace(/\{\w+\}/g, 'x'),
      headers: target.authorized(target.routes[0]!),
    });
  }
  return sent;
}

/** Random combinations of the same ingredients, drawn with the file's seed; fast-check shrinks a failure to its smallest form. */
function randomRequest(target: Target): fc.Arbitrary<RawRequest> {
  const segment = (target_: Target, p: Parameter, method: string) =>
    fc.oneof(
      // A DELETE never names what exists: the later runs need the persona and the repository.
      ...(method === 'DELETE' || !(p.name in target_.known)
        ? []
        : [fc.constant(encodeURIComponent(String(target_.known[p.name])))]),
      fc.constant(encodeURIComponent(String(sampleOf(p.schema, target_.components, {}, TEST_SEED)))),
      fc.constantFrom(...HOSTILE_SEGMENTS),
      fc.string({ unit: 'binary', maxLength: 20 }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))),
    );
  return fc.constantFrom(...target.routes).chain((route) => {
    const pathParams = route.parameters.filter((x) => x.in === 'path');
    const queryNames = route.parameters.filter((x) => x.in === 'query').map((x) => x.name);
    const body = validBody(target, route);
    const members = body === undefined ? [] : memberPaths(body);
    return fc
      .record({
        segments: fc.tuple(...pathParams.map((p) => segment(target, p, route.method))),
        query: fc.oneof(
          fc.constant(''),
          queryNames.length
            ? fc
                .tuple(fc.constantFrom(...queryNames), fc.constantFrom(...HOSTILE_QUERY_VALUES))
                .map(([n, v]) => `${n}=${v}`)
            : fc.constant(''),
          fc.constantFrom(...hostileQueries(queryNames[0] ?? 'limit')),
        ),
        body:
          body === undefined
            ? fc.constant<string | Buffer | undefined>(undefined)
            : fc.oneof(
                fc.constant<string | Buffer | undefined>(JSON.stringify(body)),
                fc
                  .tuple(fc.constantFrom(...members), fc.constantFrom(...HOSTILE_VALUES))
                  .map(([m, v]) => withMember(body, m, v) as string | Buffer | undefined),
                fc.constantFrom<string | Buffer | undefined>(...HOSTILE_BODIES),
                fc.json({ depthSize: 'medium' }).map((j) => j as string | Buffer | undefined),
              ),
        contentType: fc.oneof(
          fc.constant<string | undefined>('application/json'),
          fc.constant<string | undefined>('application/json'),
          fc.constantFrom(...HOSTILE_CONTENT_TYPES),
        ),
        authorization: fc.oneof(
          fc.constant<'valid' | string>('valid'),
          fc.constant<'valid' | string>('valid'),
          fc.constantFrom(...HOSTILE_AUTHORIZATIONS),
        ),
      })
      .map(({ segments, query, body: b, contentType, authorization }) => {
        const valid = target.authorized(route);
        const headers = authorization === 'valid' ? valid : { ...valid, ...(authorization ? { authorization } : {}) };
        if (authorization === '') delete headers.authorization;
        return {
          method: route.method,
          path: pathOf(route, Object.fromEntries(pathParams.map((p, i) => [p.name, segments[i]!])), query),
          headers,
          ...(b === undefined ? {} : { body: b, contentType }),
        } satisfies RawRequest;
      });
  });
}

beforeAll(async () => {
  // No pause between the gateway's writes: hostile input is refused before a write, and valid writes only go to the double.
  stack = await startConsoleStack({ REPOHOST_WRITE_SPACING_MS: '0' });
  expect(
    stack.settled.map((s) => s.state),
    JSON.stringify(stack.settled),
  ).toEqual(['ready', 'ready', 'ready', 'ready']);
  const { supervisor } = stack;
  const credential = await supervisor.localCredential();
  const urls = {
    identity: supervisor.url('identity'),
    persona: supervisor.url('persona-store'),
    gateway: supervisor.url('repohost-gateway'),
    provider: supervisor.url('model-provider'),
  };
  seeded = await seedConsoleData({
    identityUrl: urls.identity,
    personaUrl: urls.persona,
    gatewayUrl: urls.gateway,
    credential,
    platform: stack.platform,
  });
  const mint = async (audience: string) =>
    (
      (await json(`${urls.identity}/v1/auth/service-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ audience }),
      })) as { token: string }
    ).token;
  const personaToken = await mint('persona');
  const gatewayToken = await mint('repohost-api');
  const serviceToken = readFileSync(join(stack.dataDir, 'repohost-service-token'), 'utf8').trim();
  const notes = (await json(`${urls.persona}/v1/personas/${seeded.profile}/notes`, {
    headers: { authorization: `Bearer ${personaToken}` },
  })) as { notes: { id: string }[] };
  const sessions = (await json(`${urls.identity}/v1/session-credentials`, {
    headers: { authorization: `Bearer ${credential}` },
  })) as { credentials: { id: string }[] };
  consoleServer = await startConsoleServer({ supervisor, host: '127.0.0.1', port: 0 });
  const consoleSecret = new URLSearchParams(new URL(consoleServer.url).hash.slice(1)).get('secret')!;
  secrets = [credential, personaToken, gatewayToken, serviceToken, seeded.platformToken, consoleSecret];

  const docOf = async (url: string) =>
    (await json(`${url}/openapi.json`)) as Parameters<typeof routesOf>[0] & {
      components?: { schemas?: Record<string, Schema> };
    };
  const [identityDoc, personaDoc, gatewayDoc, providerDoc] = await Promise.all([
    docOf(urls.identity),
    docOf(urls.persona),
    docOf(urls.gateway),
    docOf(urls.provider),
  ]);
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  targets = [
    {
      name: 'persona store',
      base: urls.persona,
      envelope: 'problem',
      routes: routesOf(personaDoc),
      components: personaDoc.components?.schemas ?? {},
      known: {
        profile: seeded.profile,
        key: 'favourite_tea',
        note_id: notes.notes[0]!.id,
        display_name: 'Fuzz',
        description: 'fuzzed',
        source: 'owner',
        value: 'x',
        content: 'a fuzzed note',
      },
      authorized: () => bearer(personaToken),
    },
    {
      name: 'gateway',
      base: urls.gateway,
      envelope: 'problem',
      routes: routesOf(gatewayDoc),
      components: gatewayDoc.components?.schemas ?? {},
      known: {
        owner: 'octo',
        name: 'hello',
        number: 1,
        id: seeded.subscriptionId,
        branch: 'feature',
        repo: 'octo/hello',
        signal_url: 'http://127.0.0.1:9/hub/signals',
        pull: 1,
      },
      authorized: () => ({ ...bearer(gatewayToken), 'x-identity-profile': seeded.connectionProfile }),
    },
    {
      name: 'provider',
      base: urls.provider,
      envelope: 'provider',
      // A valid draw runs the stand-in CLI: its body stays one short user message to one model.
      routes: routesOf(providerDoc).map((route) =>
        route.template === '/v1/chat/completions' ? { ...route, body: PROVIDER_BODY } : route,
      ),
      components: providerDoc.components?.schemas ?? {},
      known: { content: 'Say hello.', model: 'sonnet' },
      authorized: () => ({}),
    },
    {
      name: 'identity',
      base: urls.identity,
      envelope: 'problem',
      routes: routesOf(identityDoc),
      components: identityDoc.components?.schemas ?? {},
      // A connection profile of its own, so that the gateway's connection is never overwritten by a fuzzed one.
      known: {
        profile: 'fuzz-conn',
        id: sessions.credentials[0]!.id,
        audience: 'persona',
        caller_token: gatewayToken,
        label: 'fuzz',
        kind: 'token',
        token: `github_pat_${'Fz9'.repeat(10)}`,
      },
      authorized: (route) =>
        route.template.startsWith('/v1/credentials/') ? bearer(serviceToken) : bearer(credential),
    },
  ];
});

afterAll(async () => {
  await consoleServer?.close();
  await stack?.close();
});

describe('hostile input against every route of every service', () => {
  // Identity last: its routes revoke session credentials, which the other services' tokens were minted with.
  for (const name of ['persona store', 'gateway', 'provider', 'identity']) {
    it(`the ${name}: every route against every hostile path segment, query, header, token and body of the tables`, async () => {
      const target = targets.find((t) => t.name === name)!;
      const before = faults.length;
      const sent = await sweep(target);
      expect(sent).toBeGreaterThan(100);
      expect(faults.slice(before), faults.slice(before).join('\n')).toEqual([]);
    });

    it(`the ${name}: random combinations of the same, drawn with the file's seed`, async () => {
      const target = targets.find((t) => t.name === name)!;
      await fc.assert(
        fc.asyncProperty(randomRequest(target), async (req) => {
          const problem = await probe(target, req);
          if (problem) throw new Error(`${describeRequest(target.base, req)}\n→ ${problem}`);
        }),
        propertyOptions({ numRuns: 300 }),
      );
    });
  }
});

describe('hostile input against the console', () => {
  const consoleTarget = (): Target => {
    const url = new URL(consoleServer.url);
    return {
      name: 'console',
      base: url.origin,
      envelope: 'console',
      routes: [],
      components: {},
      known: {},
      authorized: () => ({ 'x-console-secret': new URLSearchParams(url.hash.slice(1)).get('secret')! }),
    };
  };

  it('paths, methods and bodies of the console server, with its secret and without', async () => {
    const target = consoleTarget();
    const before = faults.length;
    const withSecret = target.authorized({ method: 'GET', template: '/', parameters: [] });
    for (const headers of [withSecret, {}]) {
      for (const segment of HOSTILE_SEGMENTS) {
        for (const prefix of ['/', '/api/', '/assets/'])
          await probe(target, { method: 'GET', path: `${prefix}${segment}`, headers });
      }
      for (const body of HOSTILE_BODIES)
        await probe(target, { method: 'POST', path: '/api/call', headers, body, contentType: 'application/json' });
      for (const contentType of HOSTILE_CONTENT_TYPES)
        await probe(target, {
          method: 'POST',
          path: '/api/call',
          headers,
          body: '{"method":"services.list"}',
          contentType,
        });
    }
    expect(faults.slice(before), faults.slice(before).join('\n')).toEqual([]);
  });

  it('every method of the console API with hostile params, and hostile method names', async () => {
    const target = consoleTarget();
    const headers = target.authorized({ method: 'POST', template: '/api/call', parameters: [] });
    const call = (method: string, params: string | undefined) =>
      probe(target, {
        method: 'POST',
        path: '/api/call',
        headers,
        contentType: 'application/json',
        body:
          params === undefined ? JSON.stringify({ method }) : `{"method":${JSON.stringify(method)},"params":${params}}`,
      });
    const before = faults.length;
    const names = [
      ...CONSOLE_METHODS,
      'constructor',
      '__proto__',
      'toString',
      'hasOwnProperty',
      'services',
      '',
      'services.list.x',
      'personas.__proto__',
    ];
    for (const method of names) {
      for (const value of HOSTILE_VALUES) await call(method, value);
      for (const param of CONSOLE_PARAM_NAMES) {
        // services.start with a real service name is harmless (they run), but a hostile one must be refused.
        for (const value of HOSTILE_VALUES) await call(method, `{${JSON.stringify(param)}:${value}}`);
      }
    }
    for (const body of [
      '{"method":{"toString":1}}',
      '{"method":["services.list"]}',
      '{"method":"services.list","params":{"__proto__":{"x":1}}}',
      '{"method":"personas.get","params":{"profile":"household","constructor":1}}',
    ]) {
      await probe(target, { method: 'POST', path: '/api/call', headers, contentType: 'application/json', body });
    }
    expect(faults.slice(before), faults.slice(before).join('\n')).toEqual([]);
  });

  it('random console calls, drawn with the file\u2019s seed', async () => {
    const target = consoleTarget();
    const headers = target.authorized({ method: 'POST', template: '/api/call', parameters: [] });
    const params = fc.oneof(
      fc.constantFrom(...HOSTILE_VALUES),
      fc
        .dictionary(fc.constantFrom(...CONSOLE_PARAM_NAMES), fc.oneof(fc.constantFrom(...HOSTILE_VALUES), fc.json()))
        .map((d) => JSON.stringify(d)),
      fc.json(),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...CONSOLE_METHODS), params, async (method, p) => {
        const req = {
          method: 'POST',
          path: '/api/call',
          headers,
          contentType: 'application/json',
          body: `{"method":${JSON.stringify(method)},"params":${p}}`,
        };
        const problem = await probe(target, req);
        if (problem) throw new Error(`${describeRequest(target.base, req)}\n→ ${problem}`);
      }),
      propertyOptions({ numRuns: 300 }),
    );
  });
});

describe('after the fuzz', () => {
  it('requests that once answered 5xx answer a well-formed refusal now (the known list)', async () => {
    const before = faults.length;
    for (const { target, request } of KNOWN)
      await probe(
        targets.find((t) => t.name === target)!,
        request,
      );
    expect(faults.slice(before), faults.slice(before).join('\n')).toEqual([]);
  });

  it('every service is still up and was never restarted, and the double saw no request GitHub would refuse as malformed', async () => {
    const statuses = stack.supervisor.status();
    // On a failure, the last log lines of each restarted service say why (the supervisor's own notes among them).
    const why = statuses
      .filter((s) => s.restarts > 0 || s.state !== 'ready')
      .flatMap((s) =>
        stack.supervisor
          .logs(s.name, { limit: 200 })
          .filter((l) => !l.probe)
          .slice(-40)
          .map((l) => `${l.service} ${l.time} ${l.text}`),
      );
    expect(
      statuses.map((s) => [s.name, s.state, s.restarts]),
      why.join('\n'),
    ).toEqual([
      ['identity', 'ready', 0],
      ['persona-store', 'ready', 0],
      ['repohost-gateway', 'ready', 0],
      ['model-provider', 'ready', 0],
    ]);
    expect(stack.platform.violations).toEqual([]);
  });
});
