import { chmodSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDENTITY_PLACES, SERVICE_CATALOGUE } from '../../common/services.ts';
import { startTestIdentity, tempDir, type TestIdentity } from '../../test/support/identity.ts';
import { freePort, ROOT } from '../../test/support/process.ts';
import { loadPersonaConfig } from '../persona-store/config.ts';
import { loadRepohostConfig } from '../repohost-gateway/config.ts';
import { createTokenVerifier } from './auth.ts';
import { appDataDir, ConfigError } from './config.ts';
import { IdentityUnreachable, overHttps, overSocket } from './identity-channel.ts';
import { trustIdentity } from './identity-trust.ts';

const places = { identity: SERVICE_CATALOGUE.identity, ...IDENTITY_PLACES };
const trust = (values: Parameters<typeof trustIdentity>[1]) => trustIdentity('DEMO_', values, places);
const A = 'a'.repeat(43);

describe('where a service takes identity\u2019s keys from, and how it calls it (trustIdentity)', () => {
  it('on this machine with nothing set: the keys file and the socket in identity\u2019s default data folder', () => {
    const t = trust({ identityUrl: 'http://127.0.0.1:8001' });
    expect(t.keys).toEqual({ file: join(appDataDir(), 'identity', 'public-keys.json') });
    expect(t.channel.where).toBe(`its socket ${join(appDataDir(), 'identity', 'identity.sock')}`);
  });

  it('a keys file that is set brings the socket beside it, unless the socket is set too', () => {
    const t = trust({ identityUrl: 'http://127.0.0.1:9001', identityKeysFile: '/srv/id/public-keys.json' });
    expect(t.keys).toEqual({ file: '/srv/id/public-keys.json' });
    expect(t.channel.where).toBe('its socket /srv/id/identity.sock');
    const both = trust({
      identityUrl: 'http://127.0.0.1:9001',
      identityKeysFile: '/srv/id/public-keys.json',
      identitySocket: '/run/id.sock',
    });
    expect(both.channel.where).toBe('its socket /run/id.sock');
  });

  it('an identity elsewhere over https: the pinned keys of its published set, and its certificate for the calls', () => {
    const t = trust({ identityUrl: 'https://id.example.com', identityKeyThumbprints: [A] });
    expect(t.keys).toEqual({ jwksUrl: 'https://id.example.com/.well-known/jwks.json', thumbprints: [A] });
    expect(t.channel.where).toBe('https://id.example.com');
  });

  it('refuses in words, naming the settings, what would leave the service trusting whatever answers', () => {
    const refusal = (values: Parameters<typeof trustIdentity>[1]) => {
      try {
        trust(values);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('not refused');
    };
    // Elsewhere with no keys named: they would have to come from whatever answers at the URL.
    expect(refusal({ identityUrl: 'https://id.example.com' })).toMatch(
      /DEMO_IDENTITY_KEY_THUMBPRINTS .* or DEMO_IDENTITY_KEYS_FILE/,
    );
    // Plain http to another machine: nothing proves who receives the tokens and the service's own secrets.
    expect(refusal({ identityUrl: 'http://id.example.com', identityKeyThumbprints: [A] })).toMatch(
      /plain http .* Use an https:\/\/ URL, or set DEMO_IDENTITY_SOCKET/,
    );
    expect(
      refusal({ identityUrl: 'http://127.0.0.1:8001', identityKeysFile: '/k.json', identityKeyThumbprints: [A] }),
    ).toMatch(/Set one of DEMO_IDENTITY_KEYS_FILE and DEMO_IDENTITY_KEY_THUMBPRINTS/);
    if (process.platform !== 'win32') {
      expect(
        refusal({ identityUrl: 'http://127.0.0.1:8001', identitySocket: `/${'s'.repeat(120)}/identity.sock` }),
      ).toMatch(/the system takes at most 103/);
    }
  });

  it('reads the settings with each service\u2019s prefix; a thumbprint that is not one is refused by name', () => {
    expect(
      loadPersonaConfig({
        PERSONA_IDENTITY_URL: 'https://id.example.com',
        PERSONA_IDENTITY_KEY_THUMBPRINTS: `${A}, ${'b'.repeat(43)}`,
      }).identity.keys,
    ).toEqual({ jwksUrl: 'https://id.example.com/.well-known/jwks.json', thumbprints: [A, 'b'.repeat(43)] });
    expect(() => loadRepohostConfig({ REPOHOST_IDENTITY_KEY_THUMBPRINTS: 'sha256:abc' })).toThrow(
      /REPOHOST_IDENTITY_KEY_THUMBPRINTS is not valid \(must be comma-separated SHA-256 JWK thumbprints/,
    );
    expect(() => loadRepohostConfig({ REPOHOST_IDENTITY_URL: 'http://id.example.com' })).toThrow(ConfigError);
  });

  it('a service started against an identity elsewhere with no keys named exits 78 naming the settings', async () => {
    const r = await execa(process.execPath, ['--import', 'tsx', join(ROOT, 'services', 'run.ts'), 'persona-store'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PERSONA_PORT: String(await freePort()),
        PERSONA_DATA_DIR: tempDir('trust-exit'),
        PERSONA_IDENTITY_URL: 'https://id.example.com',
      },
      extendEnv: false,
      reject: false,
    });
    expect(r.exitCode, r.stderr).toBe(78);
    expect(r.stderr).toMatch(/PERSONA_IDENTITY_KEY_THUMBPRINTS/);
    expect(r.stderr).toMatch(/PERSONA_IDENTITY_KEYS_FILE/);
  });
});

const windows = process.platform === 'win32';
describe('identity\u2019s socket', () => {
  it.skipIf(windows)(
    `is not called when its folder is not the user\u2019s alone: whoever may write the folder may have put the socket there${windows ? ' (skipped: Windows has no such modes)' : ''}`,
    async () => {
      const folder = tempDir('open-socket');
      chmodSync(folder, 0o777);
      const path = join(folder, 'identity.sock');
      const heard: string[] = [];
      const server = createServer((req, res) => {
        heard.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"active":true}');
      });
      await new Promise<void>((resolve) => server.listen(path, resolve));
      try {
        const channel = overSocket('http://127.0.0.1:8001', path);
        await expect(
          channel.call({ method: 'POST', path: '/v1/auth/token-status', headers: { authorization: 'Bearer secret' } }),
        ).rejects.toThrow(/not yours alone/);
        expect(await channel.answers()).toBe(false);
        expect(heard).toEqual([]);
        // The same socket in a folder that is the user's alone is called.
        chmodSync(folder, 0o700);
        expect(await channel.answers()).toBe(true);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );
});

describe('an identity elsewhere, with its keys pinned by thumbprint', () => {
  let identity: TestIdentity;
  let realThumbprint: string;
  let impostor: { server: Server; url: string; sign: (sub: string) => Promise<string> };

  beforeAll(async () => {
    identity = await startTestIdentity();
    const published = JSON.parse(readFileSync(identity.keysFile, 'utf8')) as { keys: JWK[] };
    realThumbprint = await calculateJwkThumbprint(published.keys[0]!, 'sha256');
    // What answers at the URL here publishes its own key beside the real one, and signs with its own.
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const own = { ...(await exportJWK(publicKey)), kid: 'stand-in', alg: 'ES256', use: 'sig' };
    const server = createServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ keys: [own, ...published.keys] })),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    impostor = {
      server,
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      sign: (sub) =>
        new SignJWT({})
          .setProtectedHeader({ alg: 'ES256', kid: 'stand-in' })
          .setIssuer(identity.url)
          .setAudience('kit-test')
          .setSubject(sub)
          .setExpirationTime('5m')
          .sign(privateKey),
    };
  });

  afterAll(async () => {
    await new Promise((resolve) => impostor?.server.close(resolve));
    await identity?.close();
  });

  const pinned = (jwksUrl: string, thumbprints: string[]) =>
    createTokenVerifier({ identityUrl: identity.url, audience: 'kit-test', keys: { jwksUrl, thumbprints } });

  it('takes a token signed by a pinned key from identity\u2019s published set', async () => {
    const verifier = pinned(`${identity.url}/.well-known/jwks.json`, [realThumbprint]);
    const token = await identity.mint(identity.localCredential, 'kit-test');
    expect((await verifier.verify(`Bearer ${token}`)).account).toBeTruthy();
    expect(await verifier.keysAvailable()).toBe(true);
  });

  it('refuses a key it publishes that is not pinned, even beside a pinned one', async () => {
    const verifier = pinned(`${impostor.url}/.well-known/jwks.json`, [realThumbprint]);
    await expect(verifier.verify(`Bearer ${await impostor.sign('mallory')}`)).rejects.toMatchObject({ status: 401 });
    // The real key it republished is pinned, so the real identity's token still passes.
    const token = await identity.mint(identity.localCredential, 'kit-test');
    expect((await verifier.verify(`Bearer ${token}`)).account).toBeTruthy();
  });

  it('calls it at its URL, under the URL\u2019s path too, and says when it does not answer (the https channel, over plain http here: tests have no certificate authority)', async () => {
    // A reverse proxy that serves identity under /identity, as an https front of an identity elsewhere would.
    const proxy = createServer((req, res) => {
      if (!req.url?.startsWith('/identity/')) return void res.writeHead(404).end();
      const forward = httpRequest(
        `${identity.url}${req.url.slice('/identity'.length)}`,
        { method: req.method, headers: { ...req.headers, host: new URL(identity.url).host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(forward);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const channel = overHttps(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}/identity`);
      const token = await identity.mint(identity.localCredential, 'kit-test');
      const answer = await channel.call({ method: 'POST', path: '/v1/auth/token-status', body: { token } });
      expect(answer).toMatchObject({ status: 200, body: { active: true } });
      expect(await channel.answers()).toBe(true);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
    const gone = overHttps('http://127.0.0.1:9');
    await expect(gone.call({ path: '/healthy' })).rejects.toBeInstanceOf(IdentityUnreachable);
    expect(await gone.answers()).toBe(false);
  });

  it('with no published key pinned, takes nothing, the real identity\u2019s tokens included', async () => {
    const verifier = pinned(`${identity.url}/.well-known/jwks.json`, [A]);
    const token = await identity.mint(identity.localCredential, 'kit-test');
    await expect(verifier.verify(`Bearer ${token}`)).rejects.toMatchObject({ status: 401 });
    expect(await verifier.keysAvailable()).toBe(false);
  });
});
