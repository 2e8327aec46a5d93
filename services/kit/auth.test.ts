import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
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
  service = await listen({ app: createApp({ logger: createLogger('kit-test', 'silent'), api }), host: '127.0.0.1', port: 0, logger: createLogger('kit-test', 'silent') });
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

  it('reports the keys unavailable when the identity service cannot be reached', async () => {
    const orphan = createTokenVerifier({ identityUrl: 'http://127.0.0.1:9', audience: 'kit-test' });
    expect(await orphan.keysAvailable()).toBe(false);
    expect(await verifier.keysAvailable()).toBe(true);
  });
});
