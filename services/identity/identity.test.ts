import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { createTokenVerifier } from '../kit/auth.ts';
import { createLogger } from '../kit/logger.ts';
import type { RunningService } from '../kit/server.ts';
import { SigningKeys } from './keys.ts';
import { LOCAL_SESSION_FILE, openIdentityStore, startIdentity } from './service.ts';

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

async function call(method: string, path: string, init: { auth?: string; body?: unknown; raw?: string; type?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(init.headers ?? {}) };
  if (init.auth) headers.authorization = `Bearer ${init.auth}`;
  if (init.body !== undefined || init.raw !== undefined) headers['content-type'] = init.type ?? 'application/json';
  const res = await fetch(identity.url + path, { method, headers, body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)) });
  const text = await res.text();
  responses.push(text);
  return { status: res.status, headers: res.headers, text, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
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
          res.end(JSON.stringify({ id: 77, app_id: 4242, account: { login: 'acme-org', type: 'Organization' }, repository_selection: 'selected' }));
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
        res.end(JSON.stringify({ token: APP_TOKEN, expires_at: new Date(Date.now() + 3_600_000).toISOString(), permissions: {}, repository_selection: 'all' }));
      },
      () => res.writeHead(401).end(),
    );
  });
  await new Promise<void>((r) => platform.listen(0, '127.0.0.1', () => r()));
  platformUrl = `http://127.0.0.1:${(platform.address() as { port: number }).port}`;

  dataDir = tempDir('identity-test');
  identity = await startIdentity(
    { IDENTITY_DATA_DIR: dataDir, IDENTITY_PORT: '0', IDENTITY_SERVICE_TOKENS: `repohost-api=${SERVICE_TOKEN}`, IDENTITY_PLATFORM_URL: platformUrl },
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
    expect((await call('POST', '/v1/auth/service-token', { auth: local, raw: 'audience=persona', type: 'text/plain' })).status).toBe(415);
    expect((await call('POST', '/v1/auth/service-token', { auth: local, body: { audience: 'a'.repeat(100_000) } })).status).toBe(413);
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
    expect((await call('PUT', '/v1/connections/bad%20name', { auth: local, body: { kind: 'token', token: PAT } })).status).toBe(422);
    expect((await call('GET', '/v1/connections', { auth: local })).text).toBe(before);
  });

  it('resolves a token connection for a registered service presenting a caller token minted for it', async () => {
    const caller = await mint(local, 'repohost-api');
    const r = await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: caller, profile: 'work' } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ profile: 'work', kind: 'token', token: PAT });
    expect(r.json).not.toHaveProperty('login');
    expect(Date.parse(r.json!.expires_at as string)).toBeGreaterThan(Date.now());
  });

  it('refuses resolution to an unknown service token (401), a caller token for another audience (403) and a missing profile (404)', async () => {
    const caller = await mint(local, 'repohost-api');
    expect((await call('POST', '/v1/credentials/resolve', { auth: 'svc_wrong_' + 'x'.repeat(30), body: { caller_token: caller, profile: 'work' } })).status).toBe(401);
    expect((await call('POST', '/v1/credentials/resolve', { body: { caller_token: caller, profile: 'work' } })).status).toBe(401);
    const persona = await mint(local, 'persona');
    expect((await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: persona, profile: 'work' } })).status).toBe(403);
    expect((await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: caller + 'x', profile: 'work' } })).status).toBe(403);
    const missing = await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: caller, profile: 'nope' } });
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
    const first = await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: caller, profile: 'bot' } });
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ kind: 'app', token: APP_TOKEN, login: 'acme-org' });
    const calls = installationCalls;
    const cached = await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: caller, profile: 'bot' } });
    expect(installationCalls).toBe(calls);
    expect(cached.json!.login).toBe('acme-org');
    await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: caller, profile: 'bot' }, headers: { 'cache-control': 'no-cache' } });
    expect(installationCalls).toBe(calls + 1);
  });

  it('still resolves an app connection whose installation account the platform does not tell, without a login', async () => {
    await call('PUT', '/v1/connections/bot2', { auth: local, body: { kind: 'app', app_id: 4242, installation_id: '78', private_key: appPrivatePem } });
    const caller = await mint(local, 'repohost-api');
    const r = await call('POST', '/v1/credentials/resolve', { auth: SERVICE_TOKEN, body: { caller_token: caller, profile: 'bot2' } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ kind: 'app', token: APP_TOKEN });
    expect(r.json).not.toHaveProperty('login');
  });

  it('accepts its tokens through the kit verifier used by the other services', async () => {
    const verifier = createTokenVerifier({ identityUrl: identity.url, audience: 'persona' });
    const principal = await verifier.verify(`Bearer ${await mint(local, 'persona')}`);
    expect(principal.audience).toBe('persona');
  });
});

describe('identity: secrets stay secret', () => {
  it('never writes a session credential, service token, platform token or signing key to a log line or a response', async () => {
    await call('GET', '/ready');
    const keys = JSON.parse(readFileSync(join(dataDir, 'keys', 'signing-keys.json'), 'utf8')) as { privateJwk: { d: string } }[];
    const secrets = [local, SERVICE_TOKEN, PAT, APP_TOKEN, appPrivatePem.split('\n')[1]!, ...keys.map((k) => k.privateJwk.d)];
    expect(logText.length).toBeGreaterThan(0);
    for (const s of secrets) expect(logText).not.toContain(s);
    const nonTokenResponses = responses.filter((r) => !r.includes('"kind":"token","token"') && !r.includes('"kind":"app","token"'));
    for (const s of [local, SERVICE_TOKEN, PAT, appPrivatePem.split('\n')[1]!, ...keys.map((k) => k.privateJwk.d)]) {
      for (const r of nonTokenResponses) expect(r).not.toContain(s);
    }
  });

  it('keeps platform secrets encrypted in the data folder and its key files owner-only', () => {
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else files.push(join(d, e.name));
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
    for (const f of ['local-session', 'keys/signing-keys.json', 'keys/connections.key', 'identity.db']) {
      expect(statSync(join(dataDir, f)).mode & 0o777, f).toBe(0o600);
    }
    expect(statSync(join(dataDir, 'keys')).mode & 0o777).toBe(0o700);
  });
});
