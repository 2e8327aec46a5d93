import { chmodSync, copyFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openIdentityStore } from '../identity/service.ts';
import { startTestIdentity, tempDir, type TestIdentity } from '../../test/support/identity.ts';
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
  verifier = createTokenVerifier({
    identityUrl: identity.url,
    audience: 'kit-test',
    keys: { file: identity.keysFile },
  });
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

  it('reads the key set once, not per request, while its file is unchanged', async () => {
    const token = await identity.mint(identity.localCredential, 'kit-test');
    await verifier.verify(`Bearer ${token}`);
    const before = verifier.keySetLoads;
    for (let i = 0; i < 50; i++) await verifier.verify(`Bearer ${token}`);
    expect(verifier.keySetLoads).toBe(before);
  });

  it('accepts a token signed by a key rotated in after the key set was read: the rewritten file is read again at once, without a restart', async () => {
    // A long cooldown: it holds back made-up key ids, never a file identity has rewritten.
    const rotating = createTokenVerifier({
      identityUrl: identity.url,
      audience: 'kit-test',
      keys: { file: identity.keysFile },
      keySetCooldownMs: 600_000,
    });
    const before = await identity.mint(identity.localCredential, 'kit-test');
    await rotating.verify(`Bearer ${before}`);
    expect(rotating.keySetLoads).toBe(1);
    // A new signing key, as `npm run identity -- keys rotate` makes it beside the running service.
    const store = openIdentityStore(identity.dataDir, {
      tokenTtlSeconds: 600,
      keyRotationDays: 30,
      platformUrl: 'http://127.0.0.1:9',
    });
    const kid = await store.keys.rotate();
    await store.database.close();
    const after = await identity.mint(identity.localCredential, 'kit-test');
    expect(decodeProtectedHeader(after).kid).toBe(kid);
    expect((await rotating.verify(`Bearer ${after}`)).account).toBeTruthy();
    expect(rotating.keySetLoads).toBe(2);
    // The retired key stays in the file until its tokens have expired: the earlier token still passes, with no further read.
    await rotating.verify(`Bearer ${before}`);
    await rotating.verify(`Bearer ${after}`);
    expect(rotating.keySetLoads).toBe(2);
    // Within the cooldown, a made-up key id does not make the unchanged file be read again.
    const stranger = await generateKeyPair('ES256');
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'made-up' })
      .setIssuer(identity.url)
      .setAudience('kit-test')
      .setSubject('anyone')
      .setExpirationTime('5m')
      .sign(stranger.privateKey);
    await expect(rotating.verify(`Bearer ${forged}`)).rejects.toMatchObject({ status: 401 });
    expect(rotating.keySetLoads).toBe(2);
  });

  it('refuses with 503, failing closed, while there is no key set to check with, and reports the keys unavailable', async () => {
    const empty = tempDir('no-keys');
    const orphan = createTokenVerifier({
      identityUrl: identity.url,
      audience: 'kit-test',
      keys: { file: join(empty, 'public-keys.json') },
    });
    expect(await orphan.keysAvailable()).toBe(false);
    const token = await identity.mint(identity.localCredential, 'kit-test');
    await expect(orphan.verify(`Bearer ${token}`)).rejects.toMatchObject({ status: 503 });
    // Identity writes the file: from then on the same verifier takes the token.
    copyFileSync(identity.keysFile, join(empty, 'public-keys.json'));
    expect(await orphan.keysAvailable()).toBe(true);
    expect((await orphan.verify(`Bearer ${token}`)).account).toBeTruthy();
    expect(await verifier.keysAvailable()).toBe(true);
  });

  const windows = process.platform === 'win32';
  it.skipIf(windows)(
    `never trusts a key set in a folder other users may write, or one that is a symbolic link${windows ? ' (skipped: Windows has no such modes)' : ''}`,
    async () => {
      const open = tempDir('open-keys');
      chmodSync(open, 0o777);
      copyFileSync(identity.keysFile, join(open, 'public-keys.json'));
      const loose = createTokenVerifier({
        identityUrl: identity.url,
        audience: 'kit-test',
        keys: { file: join(open, 'public-keys.json') },
      });
      const token = await identity.mint(identity.localCredential, 'kit-test');
      expect(await loose.keysAvailable()).toBe(false);
      await expect(loose.verify(`Bearer ${token}`)).rejects.toMatchObject({ status: 503 });
      const linked = tempDir('linked-keys');
      symlinkSync(identity.keysFile, join(linked, 'public-keys.json'));
      const link = createTokenVerifier({
        identityUrl: identity.url,
        audience: 'kit-test',
        keys: { file: join(linked, 'public-keys.json') },
      });
      expect(await link.keysAvailable()).toBe(false);
    },
  );
});
