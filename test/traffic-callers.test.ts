/**
 * Who made a request, as each real service counts it at GET /metrics (`caller` on the HTTP counters):
 * the app's own (its owner-only socket, the person's own credential, a registered service, a probe)
 * apart from a hub's (a hub credential), and apart from callers nothing proves (no credential, a refused
 * one, the provider's callers on its port). Never by a header a caller chooses: a hub that sends what
 * the console might send is still a hub. The real identity service, persona store and provider, over
 * real HTTP and their real sockets.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PROVIDER_SOCKET } from '../common/services.ts';
import { overSocket } from '../services/kit/identity-channel.ts';
import { startPersonaStore, type PersonaStore } from '../services/persona-store/service.ts';
import { startProvider, type StartedProvider } from '../services/model-provider/test-support/provider.ts';
import { startTestIdentity, tempDir, type TestIdentity } from './support/identity.ts';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

/** The persona store's token at identity's settings route, registered there as the supervisor does. */
const SETTINGS_TOKEN = 'persona-settings-token-for-the-caller-test';

let identity: TestIdentity;
let persona: PersonaStore;
let provider: StartedProvider;
let hubCredential: string;

/** Every `name{...} value` line of a /metrics text, its labels parsed. */
function series(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    out.push({
      labels: Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!])),
      value: Number(m[3]),
    });
  }
  return out;
}

/** The requests of one route, per caller and status class: `{ 'hub 2xx': 3, 'unverified 4xx': 1 }`. */
async function byCaller(url: string, method: string, route: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const s of series(text, 'http_requests_total')) {
    if (s.labels.method !== method || s.labels.route !== route || s.value === 0) continue;
    out[`${s.labels.caller} ${s.labels.status_class}`] = s.value;
  }
  return out;
}

async function status(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  await res.arrayBuffer();
  return res.status;
}

beforeAll(async () => {
  identity = await startTestIdentity({ IDENTITY_SERVICE_TOKENS: `persona=${SETTINGS_TOKEN}` });
  persona = await startPersonaStore({
    PERSONA_PORT: '0',
    PERSONA_DATA_DIR: tempDir('persona-callers'),
    PERSONA_LOG_LEVEL: 'silent',
    ...identity.trust('PERSONA_'),
    // The person's own settings are read at identity, as the supervisor wires it: a registered service's call.
    PERSONA_SETTINGS_API_BASE_URL: identity.url,
    PERSONA_SETTINGS_API_TOKEN: SETTINGS_TOKEN,
  });
  provider = await startProvider();
  // A hub credential, made as the console makes one: with the app's own credential, on identity's socket.
  const made = await identity.channel.call({
    method: 'POST',
    path: '/v1/session-credentials',
    headers: { authorization: `Bearer ${identity.localCredential}` },
    body: { label: 'hub', audiences: ['persona'] },
  });
  expect(made.status).toBe(201);
  hubCredential = (made.body as { credential: string }).credential;
});

afterAll(async () => {
  await persona?.close();
  await provider?.close();
  await identity?.close();
});

describe('the persona store counts its callers apart', () => {
  it('a hub credential\u2019s token is a hub\u2019s; the person\u2019s own is the app\u2019s; no token or a bad one is unverified', async () => {
    const hubToken = await identity.mint(hubCredential, 'persona');
    const ownToken = await identity.mint(identity.localCredential, 'persona');
    const personas = `${persona.url}/v1/personas`;
    expect(
      await status(personas, {
        method: 'POST',
        headers: { authorization: `Bearer ${ownToken}` },
        body: { profile: 'ada', display_name: 'Ada' },
      }),
    ).toBe(201);
    for (let i = 0; i < 2; i++)
      expect(await status(personas, { headers: { authorization: `Bearer ${ownToken}` } })).toBe(200);
    for (let i = 0; i < 3; i++)
      expect(await status(personas, { headers: { authorization: `Bearer ${hubToken}` } })).toBe(200);
    expect(await status(personas)).toBe(401);
    expect(await status(personas, { headers: { authorization: 'Bearer not.a.token' } })).toBe(401);

    expect(await byCaller(persona.url, 'GET', '/v1/personas')).toEqual({
      'app 2xx': 2,
      'hub 2xx': 3,
      'unverified 4xx': 2,
    });
    expect(await byCaller(persona.url, 'POST', '/v1/personas')).toEqual({ 'app 2xx': 1 });
  });

  it('a hub that sends what the console might send is still counted as a hub', async () => {
    const hubToken = await identity.mint(hubCredential, 'persona');
    const before = await byCaller(persona.url, 'GET', '/v1/personas');
    const looksLikeTheApp = {
      authorization: `Bearer ${hubToken}`,
      'user-agent': 'hub-services-console',
      'x-forwarded-for': '127.0.0.1',
      'x-caller': 'app',
      'x-console-secret': 'hubcon_guessed',
      'x-identity-profile': 'default',
    };
    expect(await status(`${persona.url}/v1/personas`, { headers: looksLikeTheApp })).toBe(200);
    const after = await byCaller(persona.url, 'GET', '/v1/personas');
    expect(after['hub 2xx']).toBe(before['hub 2xx']! + 1);
    expect(after['app 2xx']).toBe(before['app 2xx']);
  });

  it('the supervisor\u2019s probes are the app\u2019s', async () => {
    expect(await status(`${persona.url}/healthy`)).toBe(200);
    expect(await status(`${persona.url}/ready`)).toBe(200);
    expect(await byCaller(persona.url, 'GET', '/healthy')).toEqual({ 'app 2xx': 1 });
    expect((await byCaller(persona.url, 'GET', '/ready'))['app 2xx']).toBeGreaterThanOrEqual(1);
  });
});

describe('identity counts its callers apart', () => {
  it('what arrives on its socket is the app\u2019s; on its port, a hub credential is a hub\u2019s', async () => {
    const before = await byCaller(identity.url, 'POST', '/v1/auth/service-token');
    await identity.mint(hubCredential, 'persona');
    await identity.mint(identity.localCredential, 'persona');
    const onSocket = await identity.channel.call({
      method: 'POST',
      path: '/v1/auth/service-token',
      headers: { authorization: `Bearer ${identity.localCredential}` },
      body: { audience: 'persona' },
    });
    expect(onSocket.status).toBe(200);
    const after = await byCaller(identity.url, 'POST', '/v1/auth/service-token');
    expect((after['hub 2xx'] ?? 0) - (before['hub 2xx'] ?? 0)).toBe(1);
    expect((after['app 2xx'] ?? 0) - (before['app 2xx'] ?? 0)).toBe(2);
    expect(await status(`${identity.url}/.well-known/jwks.json`)).toBe(200);
    expect(await byCaller(identity.url, 'GET', '/.well-known/jwks.json')).toEqual({ 'unverified 2xx': 1 });
  });

  it('the other services\u2019 calls are the app\u2019s: revocation checks on its socket, settings with a registered token', async () => {
    // The persona store asked both while it served the calls above.
    const status_ = await byCaller(identity.url, 'POST', '/v1/auth/token-status');
    expect(Object.keys(status_)).toEqual(['app 2xx']);
    const settings = await byCaller(identity.url, 'GET', '/v1/settings/persona');
    expect(Object.keys(settings).every((k) => k.startsWith('app '))).toBe(true);
    expect(Object.values(settings).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });
});

describe('the provider, which takes no credential, counts its socket apart', () => {
  it('its owner-only socket is the app\u2019s; its port is anyone\u2019s', async () => {
    const socket = join(provider.dataDir, PROVIDER_SOCKET);
    if (process.platform !== 'win32') expect(statSync(socket).mode & 0o777).toBe(0o600);
    expect(await status(`${provider.url}/v1/models`)).toBe(200);
    const channel = overSocket(provider.url, socket);
    expect((await channel.call({ path: '/v1/models' })).status).toBe(200);
    expect((await channel.call({ path: '/v1/models' })).status).toBe(200);
    expect(await byCaller(provider.url, 'GET', '/v1/models')).toEqual({ 'unverified 2xx': 1, 'app 2xx': 2 });
  });
});

describe('every HTTP series says who called', () => {
  it('with one of app, hub or unverified', async () => {
    for (const url of [identity.url, persona.url, provider.url]) {
      const text = await (await fetch(`${url}/metrics`)).text();
      for (const name of ['http_requests_total', 'http_request_errors_total'])
        for (const s of series(text, name))
          expect(['app', 'hub', 'unverified'], `${url} ${name}`).toContain(s.labels.caller);
    }
  });
});
