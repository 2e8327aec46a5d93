import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { execa } from 'execa';
import { createTokenVerifier } from '../kit/auth.ts';
import { overSocket } from '../kit/identity-channel.ts';
import { createLogger } from '../kit/logger.ts';
import type { RunningService } from '../kit/server.ts';
import { openDatabase } from '../kit/sqlite.ts';
import { hashCredential } from './accounts.ts';
import { SigningKeys } from './keys.ts';
import { identityMigrations, type IdentityDatabase } from './tables.ts';
import { LOCAL_SESSION_FILE, openIdentityStore, startIdentity } from './service.ts';
import { IDENTITY_PLACES } from '../../common/services.ts';

const SERVICE_TOKEN = 'svc_' + 'k'.repeat(40);
const PAT = 'github_pat_11ABCDEFG0' + 'x'.repeat(72);
const APP_TOKEN = 'ghs_' + 'A'.repeat(36);

let logText = '';
const logSink = new Writable({
  write(chunk, _enc, cb) {
    logText += chunk.toString();
    cb();
  },
});
const responses: string[] = [];

let dataDir: string;
let identity: RunningService;
let local: string;
let platform: Server;
let platformUrl: string;
const app = generateKeyPairSync('rsa', { modulusLength: 2048 });
const appPrivatePem = app.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
let installationCalls = 0;

async function call(
  method: string,
  path: string,
  init: { auth?: string; body?: unknown; raw?: string; type?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.auth) headers.authorization = `Bearer ${init.auth}`;
  if (init.body !== undefined || init.raw !== undefined) headers['content-type'] = init.type ?? 'application/json';
  const res = await fetch(identity.url + path, {
    method,
    headers,
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await res.text();
  responses.push(text);
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
  };
}

beforeAll(async () => {
  // The platform's one route identity needs for app installations: it checks the app's JWT for real.
  const appPublic = await importSPKI(app.publicKey.export({ type: 'spki', format: 'pem' }).toString(), 'RS256');
  platform = createServer((req, res) => {
    const m = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(req.url ?? '');
    const jwt = /^(?:Bearer|bearer) (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (req.method === 'GET' && req.url === '/app/installations/77' && jwt) {
      // The installation itself, read with the app's JWT: whose account it is on.
      jwtVerify(jwt, appPublic).then(
        ({ payload }) => {
          res.writeHead(payload.iss === '4242' ? 200 : 401, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: 77,
              app_id: 4242,
              account: { login: 'acme-org', type: 'Organization' },
              repository_selection: 'selected',
            }),
          );
        },
        () => res.writeHead(401).end(),
      );
      return;
    }
    if (req.method !== 'POST' || !m || !jwt) {
      res.writeHead(404).end();
      return;
    }
    jwtVerify(jwt, appPublic).then(
      ({ payload }) => {
        installationCalls++;
        res.writeHead(payload.iss === '4242' ? 201 : 401, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            token: APP_TOKEN,
            expires_at: new Date(Date.now() + 3_600_000).toISOString(),
            permissions: {},
            repository_selection: 'all',
          }),
        );
      },
      () => res.writeHead(401).end(),
    );
  });
  await new Promise<void>((r) => platform.listen(0, '127.0.0.1', () => r()));
  platformUrl = `http://127.0.0.1:${(platform.address() as { port: number }).port}`;

  dataDir = tempDir('identity-test');
  identity = await startIdentity(
    {
      IDENTITY_DATA_DIR: dataDir,
      IDENTITY_PORT: '0',
      IDENTITY_SERVICE_TOKENS: `repohost-api=${SERVICE_TOKEN}`,
      IDENTITY_PLATFORM_URL: platformUrl,
    },
    createLogger('identity', 'debug', logSink),
  );
  local = readFileSync(join(dataDir, LOCAL_SESSION_FILE), 'utf8').trim();
});

afterAll(async () => {
  await identity?.close();
  await new Promise((r) => platform?.close(r));
});

async function mint(credential: string, audience: string): Promise<string> {
  const r = await call('POST', '/v1/auth/service-token', { auth: credential, body: { audience } });
  expect(r.status).toBe(200);
  return r.json!.token as string;
}

describe('identity: tokens', () => {
  it('mints a short-lived JWT naming the account, exactly the audience asked for, its own URL as issuer and the kid', async () => {
    const r = await call('POST', '/v1/auth/service-token', { auth: local, body: { audience: 'anything-at-all' } });
    expect(r.status).toBe(200);
    const token = r.json!.token as string;
    const claims = decodeJwt(token);
    const account = await call('GET', '/v1/account', { auth: local });
    expect(claims.sub).toBe(account.json!.id);
    expect(claims.aud).toBe('anything-at-all');
    expect(claims.iss).toBe(identity.url);
    expect(claims.exp! - claims.iat!).toBe(600);
    expect(r.json!.expires_in).toBe(600);
    const kid = decodeProtectedHeader(token).kid;
    const jwks = await call('GET', '/.well-known/jwks.json');
    expect((jwks.json!.keys as { kid: string; d?: string }[]).map((k) => k.kid)).toContain(kid);
    expect((jwks.json!.keys as { d?: string }[]).every((k) => k.d === undefined)).toBe(true);
  });

  it('refuses a missing or unknown session credential with 401 and WWW-Authenticate: Bearer', async () => {
    for (const auth of [undefined, 'hubs_not-a-real-credential']) {
      const r = await call('POST', '/v1/auth/service-token', { auth, body: { audience: 'persona' } });
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
    }
  });

  it('answers malformed JSON 400, a body that is not JSON 415, an oversized body 413 and a schema violation 422 naming the member', async () => {
    expect((await call('POST', '/v1/auth/service-token', { auth: local, raw: '{"audience":' })).status).toBe(400);
    expect(
      (await call('POST', '/v1/auth/service-token', { auth: local, raw: 'audience=persona', type: 'text/plain' }))
        .status,
    ).toBe(415);
    expect(
      (await call('POST', '/v1/auth/service-token', { auth: local, body: { audience: 'a'.repeat(100_000) } })).status,
    ).toBe(413);
    const bad = await call('POST', '/v1/auth/service-token', { auth: local, body: { audiense: 'persona' } });
    expect(bad.status).toBe(422);
    expect(bad.json!.detail).toMatch(/audience/);
    expect(bad.text).not.toMatch(/at .*\.ts:\d+/);
  });

  it('keeps a replaced key published until its tokens have expired, then drops it', async () => {
    const dir = tempDir('keys');
    const keys = new SigningKeys(dir, 600, 30);
    const t0 = new Date('2026-01-01T00:00:00Z');
    await keys.prepare(t0);
    const old = await keys.sign({ sub: 'a', aud: 'x', iss: 'http://i' }, t0);
    const oldKid = decodeProtectedHeader(old.token).kid;
    const t1 = new Date(t0.getTime() + 31 * 86_400_000);
    await keys.prepare(t1);
    const kidsAfterRotation = keys.publicSet(t1).keys.map((k) => k.kid);
    expect(kidsAfterRotation).toHaveLength(2);
    expect(kidsAfterRotation).toContain(oldKid);
    const fresh = await keys.sign({ sub: 'a', aud: 'x', iss: 'http://i' }, t1);
    expect(decodeProtectedHeader(fresh.token).kid).not.toBe(oldKid);
    const t2 = new Date(t1.getTime() + (600 + 301) * 1000);
    expect(keys.publicSet(t2).keys.map((k) => k.kid)).toEqual([decodeProtectedHeader(fresh.token).kid]);
    expect(statSync(join(dir, 'signing-keys.json')).mode & 0o777).toBe(0o600);
  });

  it('writes what it publishes to the public keys file, owner-only, at every rotation and prune, and on start if it is gone', async () => {
    const dir = tempDir('keys');
    const file = join(dir, 'public-keys.json');
    const keys = new SigningKeys(join(dir, 'keys'), 600, 30, file);
    const inFile = () => (JSON.parse(readFileSync(file, 'utf8')) as { keys: { kid: string; d?: string }[] }).keys;
    const t0 = new Date('2026-01-01T00:00:00Z');
    await keys.prepare(t0);
    const first = keys.activeKid!;
    expect(inFile().map((k) => k.kid)).toEqual([first]);
    expect(inFile().every((k) => k.d === undefined)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // A rotation (the hourly check, or `keys rotate` beside the running service) rewrites it at once.
    const second = await keys.rotate(t0);
    expect(inFile().map((k) => k.kid)).toEqual([first, second]);
    // Once the retired key's tokens have expired, the prune drops it from the file too.
    await keys.prepare(new Date(t0.getTime() + (600 + 301) * 1000));
    expect(inFile().map((k) => k.kid)).toEqual([second]);
    rmSync(file);
    await new SigningKeys(join(dir, 'keys'), 600, 30, file).prepare(new Date(t0.getTime() + 1000_000));
    expect(inFile().map((k) => k.kid)).toEqual([second]);
  });

  it('keeps a replaced key published for the longest lifetime it signed with, even after the setting was lowered', async () => {
    const dir = tempDir('keys');
    const t0 = new Date('2026-01-01T00:00:00Z');
    const long = new SigningKeys(dir, 3600, 30);
    await long.prepare(t0);
    const old = await long.sign({ sub: 'a', aud: 'x', iss: 'http://i' }, t0);
    const oldKid = decodeProtectedHeader(old.token).kid;
    // Restarted with a 10-minute lifetime, and rotated at once: the hour-long token above is still valid for an hour.
    const short = new SigningKeys(dir, 600, 30);
    await short.prepare(t0);
    await short.rotate(t0);
    const kids = (at: number) => short.publicSet(new Date(t0.getTime() + at * 1000)).keys.map((k) => k.kid);
    expect(kids(600 + 301)).toContain(oldKid);
    expect(kids(3600 + 299)).toContain(oldKid);
    expect(kids(3600 + 301)).not.toContain(oldKid);
  });
});

describe('identity: where the app\u2019s services find it', () => {
  it('publishes the same keys in its data folder as at /.well-known/jwks.json', async () => {
    const published = (await call('GET', '/.well-known/jwks.json')).json as { keys: unknown[] };
    expect(JSON.parse(readFileSync(join(dataDir, IDENTITY_PLACES.keysFile), 'utf8'))).toEqual(published);
  });

  it('answers on its socket in its data folder the same routes as on its port', async () => {
    const channel = overSocket(identity.url, join(dataDir, IDENTITY_PLACES.socket));
    expect(statSync(join(dataDir, IDENTITY_PLACES.socket)).isSocket()).toBe(true);
    const minted = await channel.call({
      method: 'POST',
      path: '/v1/auth/service-token',
      headers: { authorization: `Bearer ${local}` },
      body: { audience: 'persona' },
    });
    expect(minted.status).toBe(200);
    const token = (minted.body as { token: string }).token;
    expect(decodeJwt(token).iss).toBe(identity.url);
    const status = await channel.call({ method: 'POST', path: '/v1/auth/token-status', body: { token } });
    expect(status.body).toEqual({ active: true });
    expect(await channel.answers()).toBe(true);
  });

  it('takes over a socket left by a process that died, and refuses to start beside one that still answers on it', async () => {
    const folder = tempDir('identity-socket');
    const socket = join(folder, IDENTITY_PLACES.socket);
    // A process killed while listening leaves its socket file behind.
    await execa(process.execPath, [
      '-e',
      "require('node:net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))",
      socket,
    ]).catch(() => undefined);
    expect(statSync(socket).isSocket()).toBe(true);
    const env = { IDENTITY_DATA_DIR: folder, IDENTITY_PORT: '0', IDENTITY_LOG_LEVEL: 'silent' };
    const first = await startIdentity(env);
    try {
      expect(await overSocket(first.url, socket).answers()).toBe(true);
      await expect(startIdentity(env)).rejects.toThrow(/Another process already serves the socket .*identity\.sock/);
      // The refused second copy left the first one's socket alone.
      expect(await overSocket(first.url, socket).answers()).toBe(true);
    } finally {
      await first.close();
    }
    // Stopped, it removes its socket: nothing is left that a caller could mistake for it.
    expect(existsSync(socket)).toBe(false);
    rmSync(folder, { recursive: true, force: true });
  });
});

describe('identity: accounts and platform connections', () => {
  it('keeps each account to its own connections and never shows a secret', async () => {
    const store = openIdentityStore(dataDir, { tokenTtlSeconds: 600, keyRotationDays: 30, platformUrl });
    const bob = (await store.accounts.add('bob')).credential;
    await store.database.close();

    const put = await call('PUT', '/v1/connections/work', { auth: local, body: { kind: 'token', token: PAT } });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ profile: 'work', kind: 'token' });
    expect(put.text).not.toContain(PAT);

    const mine = await call('GET', '/v1/connections', { auth: local });
    expect((mine.json!.connections as { profile: string }[]).map((c) => c.profile)).toEqual(['work']);
    expect(mine.text).not.toContain(PAT);
    const bobs = await call('GET', '/v1/connections', { auth: bob });
    expect(bobs.json!.connections).toEqual([]);
    expect((await call('DELETE', '/v1/connections/work', { auth: bob })).status).toBe(404);
    expect((await call('GET', '/v1/connections', { auth: local })).json!.connections).toHaveLength(1);
  });

  it('leaves the database as it was when a connection is refused', async () => {
    const before = (await call('GET', '/v1/connections', { auth: local })).text;
    const r = await call('PUT', '/v1/connections/work', { auth: local, body: { kind: 'token' } });
    expect(r.status).toBe(422);
    expect(r.json!.detail).toMatch(/token/);
    expect(
      (await call('PUT', '/v1/connections/bad%20name', { auth: local, body: { kind: 'token', token: PAT } })).status,
    ).toBe(422);
    expect((await call('GET', '/v1/connections', { auth: local })).text).toBe(before);
  });

  it('resolves a token connection for a registered service presenting a caller token minted for it', async () => {
    expect(
      (await call('PUT', '/v1/connections/resolvable', { auth: local, body: { kind: 'token', token: PAT } })).status,
    ).toBe(200);
    const caller = await mint(local, 'repohost-api');
    const r = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'resolvable' },
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      profile: 'resolvable',
      kind: 'token',
      token: PAT,
      revision: expect.stringMatching(/^rev_[0-9a-f]{18}$/),
    });
    expect(r.json).not.toHaveProperty('login');
    expect(Date.parse(r.json!.expires_at as string)).toBeGreaterThan(Date.now());
  });

  it('refuses resolution to an unknown service token (401), a caller token for another audience (403) and a missing profile (404)', async () => {
    expect(
      (await call('PUT', '/v1/connections/work', { auth: local, body: { kind: 'token', token: PAT } })).status,
    ).toBe(200);
    const caller = await mint(local, 'repohost-api');
    expect(
      (
        await call('POST', '/v1/credentials/resolve', {
          auth: 'svc_wrong_' + 'x'.repeat(30),
          body: { caller_token: caller, profile: 'work' },
        })
      ).status,
    ).toBe(401);
    expect(
      (await call('POST', '/v1/credentials/resolve', { body: { caller_token: caller, profile: 'work' } })).status,
    ).toBe(401);
    const persona = await mint(local, 'persona');
    expect(
      (
        await call('POST', '/v1/credentials/resolve', {
          auth: SERVICE_TOKEN,
          body: { caller_token: persona, profile: 'work' },
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await call('POST', '/v1/credentials/resolve', {
          auth: SERVICE_TOKEN,
          body: { caller_token: caller + 'x', profile: 'work' },
        })
      ).status,
    ).toBe(403);
    const missing = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'nope' },
    });
    expect(missing.status).toBe(404);
    expect(missing.json!.detail).toMatch(/connections\/nope/);
  });

  it('mints an installation token from the platform for an app connection and caches it until near expiry', async () => {
    const put = await call('PUT', '/v1/connections/bot', {
      auth: local,
      body: { kind: 'app', app_id: 4242, installation_id: '77', private_key: appPrivatePem },
    });
    expect(put.status).toBe(200);
    const caller = await mint(local, 'repohost-api');
    const first = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'bot' },
    });
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ kind: 'app', token: APP_TOKEN, login: 'acme-org' });
    const calls = installationCalls;
    const cached = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'bot' },
    });
    expect(installationCalls).toBe(calls);
    expect(cached.json!.login).toBe('acme-org');
    await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'bot' },
      headers: { 'cache-control': 'no-cache' },
    });
    expect(installationCalls).toBe(calls + 1);
  });

  it('still resolves an app connection whose installation account the platform does not tell, without a login', async () => {
    await call('PUT', '/v1/connections/bot2', {
      auth: local,
      body: { kind: 'app', app_id: 4242, installation_id: '78', private_key: appPrivatePem },
    });
    const caller = await mint(local, 'repohost-api');
    const r = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'bot2' },
    });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ kind: 'app', token: APP_TOKEN });
    expect(r.json).not.toHaveProperty('login');
  });

  it('accepts its tokens through the kit verifier used by the other services', async () => {
    const verifier = createTokenVerifier({
      identityUrl: identity.url,
      audience: 'persona',
      keys: { file: join(dataDir, IDENTITY_PLACES.keysFile) },
    });
    const principal = await verifier.verify(`Bearer ${await mint(local, 'persona')}`);
    expect(principal.audience).toBe('persona');
  });
});

interface SessionRow {
  id: string;
  label: string | null;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  current: boolean;
}

/** A fresh account made as the command line makes one (the store, on the same files), and its first credential. */
async function newAccount(name: string): Promise<string> {
  const store = openIdentityStore(dataDir, { tokenTtlSeconds: 600, keyRotationDays: 30, platformUrl });
  try {
    return (await store.accounts.add(name)).credential;
  } finally {
    await store.database.close();
  }
}

const sessions = async (credential: string) =>
  (await call('GET', '/v1/session-credentials', { auth: credential })).json!.credentials as SessionRow[];

describe('identity: session credentials', () => {
  it('lists the caller\u2019s own session credentials without secrets, marking the one in use and when it was last used', async () => {
    const dana = await newAccount('dana');
    const r = await call('GET', '/v1/session-credentials', { auth: dana });
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const [only] = r.json!.credentials as SessionRow[];
    expect(only).toEqual({
      id: expect.stringMatching(/^ses_[0-9a-f]{24}$/),
      label: null,
      created_at: expect.any(String),
      last_used_at: expect.any(String),
      expires_at: null,
      current: true,
      purpose: 'owner',
      audiences: null,
    });
    expect(r.text).not.toContain(dana);
    expect((await sessions(local)).map((x) => x.id)).not.toContain(only!.id);
  });

  it('makes a new credential for the caller\u2019s own account with a label and an expiry, shown once, that works at once', async () => {
    const before = Date.now();
    const r = await call('POST', '/v1/session-credentials', {
      auth: local,
      body: { label: 'hub', expires_in_seconds: 3600 },
    });
    expect(r.status).toBe(201);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const made = r.json as unknown as SessionRow & { credential: string };
    expect(made).toMatchObject({
      label: 'hub',
      current: false,
      last_used_at: null,
      credential: expect.stringMatching(/^hubs_/),
    });
    expect(Date.parse(made.expires_at!) - before).toBeGreaterThanOrEqual(3600_000);
    expect(Date.parse(made.expires_at!) - before).toBeLessThan(3700_000);
    const token = await mint(made.credential, 'persona');
    expect(decodeJwt(token).sub).toBe((await call('GET', '/v1/account', { auth: local })).json!.id);
    const listed = (await sessions(local)).find((x) => x.id === made.id)!;
    expect(listed).toMatchObject({ label: 'hub', expires_at: made.expires_at, current: false });
    expect(listed).not.toHaveProperty('credential');
    const never = await call('POST', '/v1/session-credentials', { auth: local, body: { expires_in_seconds: null } });
    expect(never.json).toMatchObject({ label: null, expires_at: null });
  });

  it('refuses an expiry under a minute and a label with control characters, naming the member', async () => {
    const short = await call('POST', '/v1/session-credentials', { auth: local, body: { expires_in_seconds: 5 } });
    expect(short.status).toBe(422);
    expect(short.json!.detail).toMatch(/expires_in_seconds/);
    const label = await call('POST', '/v1/session-credentials', { auth: local, body: { label: 'a\nb' } });
    expect(label.status).toBe(422);
    expect(label.json!.detail).toMatch(/label/);
  });

  it('revokes one of its own credentials by id: refused from then on; another account\u2019s id answers 404 and stays', async () => {
    const erin = await newAccount('erin');
    const spare = (await call('POST', '/v1/session-credentials', { auth: erin, body: { label: 'spare' } })).json as {
      id: string;
      credential: string;
    };
    await mint(spare.credential, 'persona');
    expect((await call('DELETE', `/v1/session-credentials/${spare.id}`, { auth: local })).status).toBe(404);
    await mint(spare.credential, 'persona');
    expect((await call('DELETE', `/v1/session-credentials/${spare.id}`, { auth: erin })).status).toBe(204);
    const refused = await call('POST', '/v1/auth/service-token', {
      auth: spare.credential,
      body: { audience: 'persona' },
    });
    expect(refused.status).toBe(401);
    expect(refused.json!.detail).toMatch(/not known/);
    expect((await sessions(erin)).map((x) => x.id)).not.toContain(spare.id);
    expect((await call('DELETE', `/v1/session-credentials/${spare.id}`, { auth: erin })).status).toBe(404);
    expect((await call('DELETE', '/v1/session-credentials/not-an-id', { auth: erin })).status).toBe(422);
  });

  it('revokes all of its own credentials: with keep_current every other one, without it the current one too', async () => {
    const fay = await newAccount('fay');
    const others = await Promise.all(
      [1, 2].map(
        async () =>
          ((await call('POST', '/v1/session-credentials', { auth: fay, body: {} })).json as { credential: string })
            .credential,
      ),
    );
    const kept = await call('DELETE', '/v1/session-credentials?keep_current=true', { auth: fay });
    expect(kept.json).toEqual({ revoked: 2 });
    for (const o of others)
      expect((await call('POST', '/v1/auth/service-token', { auth: o, body: { audience: 'persona' } })).status).toBe(
        401,
      );
    await mint(fay, 'persona');
    expect((await call('DELETE', '/v1/session-credentials', { auth: fay })).json).toEqual({ revoked: 1 });
    expect((await call('POST', '/v1/auth/service-token', { auth: fay, body: { audience: 'persona' } })).status).toBe(
      401,
    );
    await mint(local, 'persona');
  });

  it('refuses an expired session credential with 401 naming when it expired', async () => {
    const made = (await call('POST', '/v1/session-credentials', { auth: local, body: { expires_in_seconds: 60 } }))
      .json as { id: string; credential: string };
    await mint(made.credential, 'persona');
    // Moved into the past on the real file (waiting a minute proves nothing more).
    const store = openIdentityStore(dataDir, { tokenTtlSeconds: 600, keyRotationDays: 30, platformUrl });
    const past = new Date(Date.now() - 1000).toISOString();
    await store.database.db.updateTable('sessions').set({ expires_at: past }).where('id', '=', made.id).execute();
    await store.database.close();
    const r = await call('POST', '/v1/auth/service-token', { auth: made.credential, body: { audience: 'persona' } });
    expect(r.status).toBe(401);
    expect(r.json!.detail).toContain(`expired at ${past}`);
  });

  it('gives new credentials IDENTITY_SESSION_TTL_SECONDS when none is asked for; the local account\u2019s own never expires', async () => {
    const dir = tempDir('identity-ttl');
    const other = await startIdentity(
      { IDENTITY_DATA_DIR: dir, IDENTITY_PORT: '0', IDENTITY_SESSION_TTL_SECONDS: '7200' },
      createLogger('identity', 'silent'),
    );
    try {
      const own = readFileSync(join(dir, LOCAL_SESSION_FILE), 'utf8').trim();
      const res = (path: string, init: RequestInit = {}) =>
        fetch(other.url + path, {
          ...init,
          headers: { authorization: `Bearer ${own}`, 'content-type': 'application/json' },
        }).then((r) => r.json() as Promise<Record<string, unknown>>);
      const listed = (await res('/v1/session-credentials')).credentials as SessionRow[];
      expect(listed).toEqual([expect.objectContaining({ label: 'desktop app', expires_at: null, current: true })]);
      const before = Date.now();
      const made = await res('/v1/session-credentials', { method: 'POST', body: '{}' });
      expect(Date.parse(made.expires_at as string) - before).toBeGreaterThanOrEqual(7200_000);
      expect(Date.parse(made.expires_at as string) - before).toBeLessThan(7300_000);
      expect(
        (await res('/v1/session-credentials', { method: 'POST', body: '{"expires_in_seconds":null}' })).expires_at,
      ).toBeNull();
    } finally {
      await other.close();
    }
  });

  it('replaces a revoked local credential at the next start, so the desktop app has one that works', async () => {
    const dir = tempDir('identity-local');
    const env = { IDENTITY_DATA_DIR: dir, IDENTITY_PORT: '0' };
    let service = await startIdentity(env, createLogger('identity', 'silent'));
    const first = readFileSync(join(dir, LOCAL_SESSION_FILE), 'utf8').trim();
    const revokeAll = await fetch(`${service.url}/v1/session-credentials`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${first}` },
    });
    expect(await revokeAll.json()).toEqual({ revoked: 1 });
    await service.close();
    service = await startIdentity(env, createLogger('identity', 'silent'));
    try {
      const second = readFileSync(join(dir, LOCAL_SESSION_FILE), 'utf8').trim();
      expect(second).not.toBe(first);
      const mintWith = (credential: string) =>
        fetch(`${service.url}/v1/auth/service-token`, {
          method: 'POST',
          headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
          body: '{"audience":"persona"}',
        });
      expect((await mintWith(second)).status).toBe(200);
      expect((await mintWith(first)).status).toBe(401);
      expect(statSync(join(dir, LOCAL_SESSION_FILE)).mode & 0o777).toBe(0o600);
    } finally {
      await service.close();
    }
  });
});

describe('identity: whether a resolved credential is still current', () => {
  const check = (body: Record<string, unknown>, auth = SERVICE_TOKEN) =>
    call('POST', '/v1/credentials/check', { auth, body });

  it('tokens name the session credential they were minted with (sid)', async () => {
    const made = (await call('POST', '/v1/session-credentials', { auth: local, body: { label: 'sid' } })).json as {
      id: string;
      credential: string;
    };
    expect(decodeJwt(await mint(made.credential, 'repohost-api')).sid).toBe(made.id);
  });

  it('answers current until the connection is replaced or removed, and says which', async () => {
    const gus = await newAccount('gus');
    await call('PUT', '/v1/connections/p1', { auth: gus, body: { kind: 'token', token: PAT } });
    const caller = await mint(gus, 'repohost-api');
    const { sub, sid } = decodeJwt(caller) as { sub: string; sid: string };
    const resolved = (
      await call('POST', '/v1/credentials/resolve', {
        auth: SERVICE_TOKEN,
        body: { caller_token: caller, profile: 'p1' },
      })
    ).json as { revision: string };
    const held = { account: sub, profile: 'p1', revision: resolved.revision, session: sid };
    expect((await check(held)).json).toEqual({ current: true });
    expect((await check(held, 'svc_wrong_' + 'x'.repeat(30))).status).toBe(401);
    await call('PUT', '/v1/connections/p1', { auth: gus, body: { kind: 'token', token: PAT } });
    expect((await check(held)).json).toEqual({ current: false, reason: 'connection_replaced' });
    const again = (
      await call('POST', '/v1/credentials/resolve', {
        auth: SERVICE_TOKEN,
        body: { caller_token: caller, profile: 'p1' },
      })
    ).json as { revision: string };
    expect(again.revision).not.toBe(resolved.revision);
    expect((await check({ ...held, revision: again.revision })).json).toEqual({ current: true });
    expect((await call('DELETE', '/v1/connections/p1', { auth: gus })).status).toBe(204);
    expect((await check({ ...held, revision: again.revision })).json).toEqual({
      current: false,
      reason: 'connection_removed',
    });
  });

  it('answers not current once the session credential behind the caller\u2019s token is revoked, and resolution refuses that token (403)', async () => {
    const hal = await newAccount('hal');
    const spare = (await call('POST', '/v1/session-credentials', { auth: hal, body: {} })).json as {
      id: string;
      credential: string;
    };
    await call('PUT', '/v1/connections/p1', { auth: hal, body: { kind: 'token', token: PAT } });
    const caller = await mint(spare.credential, 'repohost-api');
    const resolved = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'p1' },
    });
    expect(resolved.status).toBe(200);
    const held = {
      account: decodeJwt(caller).sub,
      profile: 'p1',
      revision: (resolved.json as { revision: string }).revision,
      session: spare.id,
    };
    expect((await check(held)).json).toEqual({ current: true });
    expect((await call('DELETE', `/v1/session-credentials/${spare.id}`, { auth: hal })).status).toBe(204);
    expect((await check(held)).json).toEqual({ current: false, reason: 'session_revoked' });
    const refused = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'p1' },
    });
    expect(refused.status).toBe(403);
    expect(refused.json!.detail).toMatch(/revoked/);
    // A token of the account's other, standing credential still resolves.
    expect(
      (
        await call('POST', '/v1/credentials/resolve', {
          auth: SERVICE_TOKEN,
          body: { caller_token: await mint(hal, 'repohost-api'), profile: 'p1' },
        })
      ).status,
    ).toBe(200);
  });
});

describe('identity: removing an account', () => {
  const files = () => ['identity.db', 'identity.db-wal'].map((f) => join(dataDir, f));
  const anywhere = (bytes: Buffer) => files().some((f) => existsSync(f) && readFileSync(f).includes(bytes));
  const check = (body: Record<string, unknown>) => call('POST', '/v1/credentials/check', { auth: SERVICE_TOKEN, body });

  it('removes its session credentials and its connections, whose encrypted secrets leave the database file and its log', async () => {
    const ivy = await newAccount('ivy');
    await call('PUT', '/v1/connections/one', { auth: ivy, body: { kind: 'token', token: PAT } });
    await call('PUT', '/v1/connections/two', {
      auth: ivy,
      body: { kind: 'app', app_id: 4242, installation_id: '77', private_key: appPrivatePem },
    });
    const caller = await mint(ivy, 'repohost-api');
    const resolved = (
      await call('POST', '/v1/credentials/resolve', {
        auth: SERVICE_TOKEN,
        body: { caller_token: caller, profile: 'one' },
      })
    ).json as { revision: string };
    const store = openIdentityStore(dataDir, { tokenTtlSeconds: 600, keyRotationDays: 30, platformUrl });
    try {
      const id = decodeJwt(caller).sub!;
      const secrets = (
        await store.database.db.selectFrom('connections').select('ciphertext').where('account_id', '=', id).execute()
      ).map((r) => r.ciphertext);
      expect(secrets).toHaveLength(2);
      // Control: the bytes are there to be found before.
      for (const c of secrets) expect(anywhere(c)).toBe(true);
      await expect(store.accounts.remove('local')).rejects.toThrow(/desktop app/);
      expect(await store.accounts.remove('ivy')).toEqual({ sessions: 1, connections: 2 });
      for (const c of secrets) expect(anywhere(c)).toBe(false);
      expect((await store.accounts.list()).map((a) => a.name)).not.toContain('ivy');
    } finally {
      await store.database.close();
    }
    expect((await call('POST', '/v1/auth/service-token', { auth: ivy, body: { audience: 'persona' } })).status).toBe(
      401,
    );
    const gone = await call('POST', '/v1/credentials/resolve', {
      auth: SERVICE_TOKEN,
      body: { caller_token: caller, profile: 'one' },
    });
    expect(gone.status).toBe(403);
    expect((await check({ account: decodeJwt(caller).sub, profile: 'one', revision: resolved.revision })).json).toEqual(
      { current: false, reason: 'account_removed' },
    );
  });
});

describe('identity: a database made by the first release', () => {
  it('keeps its accounts, session credentials and connections working after the upgrade', async () => {
    const dir = tempDir('identity-upgrade');
    const old = openDatabase<IdentityDatabase>(join(dir, 'identity.db'), identityMigrations.slice(0, 1));
    const credential = 'hubs_' + 'u'.repeat(43);
    old.sqlite
      .prepare('INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)')
      .run('acc-1', 'local', '2026-01-01T00:00:00.000Z');
    old.sqlite
      .prepare('INSERT INTO sessions (credential_hash, account_id, created_at) VALUES (?, ?, ?)')
      .run(hashCredential(credential), 'acc-1', '2026-01-01T00:00:00.000Z');
    await old.close();
    writeFileSync(join(dir, LOCAL_SESSION_FILE), `${credential}\n`, { mode: 0o600 });
    const service = await startIdentity(
      { IDENTITY_DATA_DIR: dir, IDENTITY_PORT: '0' },
      createLogger('identity', 'silent'),
    );
    try {
      expect(readFileSync(join(dir, LOCAL_SESSION_FILE), 'utf8').trim()).toBe(credential);
      const listed = await fetch(`${service.url}/v1/session-credentials`, {
        headers: { authorization: `Bearer ${credential}` },
      });
      expect(((await listed.json()) as { credentials: SessionRow[] }).credentials).toEqual([
        expect.objectContaining({
          id: expect.stringMatching(/^ses_[0-9a-f]{24}$/),
          expires_at: null,
          current: true,
          purpose: 'owner',
        }),
      ]);
    } finally {
      await service.close();
    }
  });
});

describe('identity: secrets stay secret', () => {
  it('never writes a session credential, service token, platform token or signing key to a log line or a response', async () => {
    // Its own traffic, so that it checks something when it runs alone: a connection of each kind, resolved.
    await call('PUT', '/v1/connections/secret-token', { auth: local, body: { kind: 'token', token: PAT } });
    await call('PUT', '/v1/connections/secret-app', {
      auth: local,
      body: { kind: 'app', app_id: 4242, installation_id: '77', private_key: appPrivatePem },
    });
    const caller = await mint(local, 'repohost-api');
    for (const profile of ['secret-token', 'secret-app']) {
      expect(
        (
          await call('POST', '/v1/credentials/resolve', {
            auth: SERVICE_TOKEN,
            body: { caller_token: caller, profile },
          })
        ).status,
      ).toBe(200);
    }
    await call('GET', '/ready');
    const keys = JSON.parse(readFileSync(join(dataDir, 'keys', 'signing-keys.json'), 'utf8')) as {
      privateJwk: { d: string };
    }[];
    const secrets = [
      local,
      SERVICE_TOKEN,
      PAT,
      APP_TOKEN,
      appPrivatePem.split('\n')[1]!,
      ...keys.map((k) => k.privateJwk.d),
    ];
    expect(logText.length).toBeGreaterThan(0);
    for (const s of secrets) expect(logText).not.toContain(s);
    const nonTokenResponses = responses.filter(
      (r) => !r.includes('"kind":"token","token"') && !r.includes('"kind":"app","token"'),
    );
    for (const s of [local, SERVICE_TOKEN, PAT, appPrivatePem.split('\n')[1]!, ...keys.map((k) => k.privateJwk.d)]) {
      for (const r of nonTokenResponses) expect(r).not.toContain(s);
    }
  });

  it('keeps platform secrets encrypted in the data folder and its key files owner-only', async () => {
    await call('PUT', '/v1/connections/at-rest-token', { auth: local, body: { kind: 'token', token: PAT } });
    await call('PUT', '/v1/connections/at-rest-app', {
      auth: local,
      body: { kind: 'app', app_id: 4242, installation_id: '77', private_key: appPrivatePem },
    });
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else if (e.isFile()) files.push(join(d, e.name));
      }
    };
    walk(dataDir);
    const pemLine = appPrivatePem.split('\n')[1]!;
    for (const f of files) {
      const bytes = readFileSync(f);
      expect(bytes.includes(PAT), f).toBe(false);
      expect(bytes.includes(pemLine), f).toBe(false);
      if (f.endsWith('.db') || f.endsWith('-wal')) expect(bytes.includes(local), f).toBe(false);
    }
    for (const f of [
      'local-session',
      'keys/signing-keys.json',
      'keys/connections.key',
      'identity.db',
      'public-keys.json',
      'identity.sock',
    ]) {
      expect(statSync(join(dataDir, f)).mode & 0o777, f).toBe(0o600);
    }
    expect(statSync(join(dataDir, 'keys')).mode & 0o777).toBe(0o700);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
  });
});
