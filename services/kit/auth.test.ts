import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openIdentityStore } from '../identity/service.ts';
import { startTestIdentity, type TestIdentity } from '../../test/support/identity.ts';
import { tokenRejectionSuite } from '../../test/support/token-suite.ts';
import { Api } from './api.ts';
import { createApp } from './app.ts';
import { createTokenVerifier, type TokenVerifier } from './auth.ts';
import { createLogger } from './logger.ts';
import { listen, type RunningService } from './server.ts';

let identity: TestIdentity;
let verifier: TokenVerifier;
let service: RunningService;

beforeAll(async () => {
  identity = await startTestIdentity();
  verifier = createTokenVerifier({ identityUrl: identity.url, audience: 'kit-test' });
  const api = new Api({ title: 'kit test', version: '0', description: 'a protected route' }, verifier);
  api.route({
    method: 'get',
    path: '/v1/whoami',
    operationId: 'whoami',
    summary: 'who is calling',
    responses: { 200: { description: 'the caller', schema: z.object({ account: z.string() }) } },
    handler: ({ principal }) => ({ body: { account: principal.account, extra: 'dropped by the schema' } }),
  });
  service = await listen({
    app: createApp({ logger: createLogger('kit-test', 'silent'), api }),
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('kit-test', 'silent'),
  });
});

afterAll(async () => {
  await service?.close();
  await identity?.close();
});

const call = (authorization: string | undefined) =>
  fetch(`${service.url}/v1/whoami`, { headers: authorization ? { authorization } : {} });

describe("the kit's token verifier", () => {
  tokenRejectionSuite({ audience: 'kit-test', identity: () => identity, call });

  it('names the account of a valid token and answers only the members of the response schema', async () => {
    const res = await call(`Bearer ${await identity.mint(identity.localCredential, 'kit-test')}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['account']);
  });

  it('fetches the key set once, not per request, while the cache is warm', async () => {
    const token = await identity.mint(identity.localCredential, 'kit-test');
    await verifier.verify(`Bearer ${token}`);
    const before = verifier.keySetFetches;
    for (let i = 0; i < 50; i++) await verifier.verify(`Bearer ${token}`);
    expect(verifier.keySetFetches).toBe(before);
  });

  it('accepts a token signed by a key rotated in after the key set was cached: an unknown kid fetches the set once more', async () => {
    // No cooldown between key-set fetches here, so the test need not wait one out; `cooling` keeps a long one.
    const rotating = createTokenVerifier({ identityUrl: identity.url, audience: 'kit-test', keySetCooldownMs: 0 });
    const cooling = createTokenVerifier({ identityUrl: identity.url, audience: 'kit-test', keySetCooldownMs: 600_000 });
    const before = await identity.mint(identity.localCredential, 'kit-test');
    await rotating.verify(`Bearer ${before}`);
    await cooling.verify(`Bearer ${before}`);
    expect(rotating.keySetFetches).toBe(1);
    expect(cooling.keySetFetches).toBe(1);
    // A new signing key, as `npm run identity -- keys rotate` makes it beside the running service.
    const store = openIdentityStore(identity.dataDir, {
      tokenTtlSeconds: 600,
      keyRotationDays: 30,
      platformUrl: 'http://127.0.0.1:9',
    });
    const kid = await store.keys.rotate();
    await store.database.close();
    const after = await identity.mint(identity.localCredential, 'kit-test');
    expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).toBe(kid);
    expect((await rotating.verify(`Bearer ${after}`)).account).toBeTruthy();
    expect(rotating.keySetFetches).toBe(2);
    // Within the cooldown since its last fetch, an unknown kid is refused without asking identity again (forged kids cannot hammer it).
    await expect(cooling.verify(`Bearer ${after}`)).rejects.toMatchObject({ status: 401 });
    expect(cooling.keySetFetches).toBe(1);
    // The retired key stays published until its tokens have expired: the earlier token still passes, with no further fetch.
    await rotating.verify(`Bearer ${before}`);
    await rotating.verify(`Bearer ${after}`);
    expect(rotating.keySetFetches).toBe(2);
  });

  it('reports the keys unavailable when the identity service cannot be reached', async () => {
    const orphan = createTokenVerifier({ identityUrl: 'http://127.0.0.1:9', audience: 'kit-test' });
    expect(await orphan.keysAvailable()).toBe(false);
    expect(await verifier.keysAvailable()).toBe(true);
  });
});
