import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../services/kit/auth.ts';
import { refuseRevokedSessions } from '../services/kit/revocation.ts';
import { openIdentityStore } from '../services/identity/service.ts';
import { startPersonaStore, type PersonaStore } from '../services/persona-store/service.ts';
import { startTestIdentity, tempDir, type TestIdentity } from './support/identity.ts';

/**
 * A revoke reaches the persona store: tokens minted before it stop working there, tried over real HTTP
 * against the real identity service and a real persona store. The store here asks identity on every
 * request (PERSONA_SESSION_RECHECK_MS=0), so the request right after a revoke must already be refused;
 * the window a person gets by default (5 s) is measured by bench/identity/revocation-window.ts.
 */

let identity: TestIdentity;
let store: PersonaStore;

async function personaGet(token: string): Promise<{ status: number; detail?: string }> {
  const res = await fetch(`${store.url}/v1/personas`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { detail?: string };
  return { status: res.status, detail: body.detail };
}

async function identityCall(method: string, path: string, auth: string, body?: unknown) {
  const res = await fetch(identity.url + path, {
    method,
    headers: { authorization: `Bearer ${auth}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.body?.cancel();
  return { status: res.status };
}

async function hubCredential(expiresInSeconds: number | null = null): Promise<{ id: string; credential: string }> {
  const res = await fetch(`${identity.url}/v1/session-credentials`, {
    method: 'POST',
    headers: { authorization: `Bearer ${identity.localCredential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ label: 'hub', expires_in_seconds: expiresInSeconds }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; credential: string };
}

/** Changes the identity database as the command line would, beside the running service. */
async function withIdentityStore<T>(body: (store: ReturnType<typeof openIdentityStore>) => Promise<T>): Promise<T> {
  const opened = openIdentityStore(identity.dataDir, {
    tokenTtlSeconds: 600,
    keyRotationDays: 30,
    platformUrl: 'http://127.0.0.1:9',
  });
  try {
    return await body(opened);
  } finally {
    await opened.database.close();
  }
}

beforeAll(async () => {
  identity = await startTestIdentity();
  store = await startPersonaStore({
    PERSONA_DATA_DIR: tempDir('revocation-persona'),
    PERSONA_PORT: '0',
    ...identity.trust('PERSONA_'),
    PERSONA_LOG_LEVEL: 'silent',
    PERSONA_SESSION_RECHECK_MS: '0',
  });
});

afterAll(async () => {
  await store?.close();
  await identity?.close();
});

describe('a revoke reaches the persona store', () => {
  it('a token minted before its hub credential was revoked is refused (401 naming the session credential); the app\u2019s own tokens go on', async () => {
    const hub = await hubCredential();
    const token = await identity.mint(hub.credential, 'persona');
    const own = await identity.mint(identity.localCredential, 'persona');
    expect((await personaGet(token)).status).toBe(200);
    expect((await identityCall('DELETE', `/v1/session-credentials/${hub.id}`, identity.localCredential)).status).toBe(
      204,
    );
    const refused = await personaGet(token);
    expect(refused.status).toBe(401);
    expect(refused.detail).toMatch(/session credential/);
    // Remembered as refused: still refused, and the store's verified-token memory does not bring it back.
    expect((await personaGet(token)).status).toBe(401);
    expect((await personaGet(own)).status).toBe(200);
  });

  it('a token of a credential that expired is refused, even before its own exp', async () => {
    const hub = await hubCredential(3600);
    const token = await identity.mint(hub.credential, 'persona');
    expect((await personaGet(token)).status).toBe(200);
    const past = new Date(Date.now() - 1000).toISOString();
    await withIdentityStore((s) =>
      s.database.db.updateTable('sessions').set({ expires_at: past }).where('id', '=', hub.id).execute(),
    );
    expect(decodeJwt(token).exp! * 1000).toBeGreaterThan(Date.now());
    expect((await personaGet(token)).status).toBe(401);
  });

  it('a token revoked at the command line, or of a removed account, is refused', async () => {
    const credential = await identity.addAccount('nina');
    const token = await identity.mint(credential, 'persona');
    const hub = await hubCredential();
    const hubToken = await identity.mint(hub.credential, 'persona');
    expect((await personaGet(token)).status).toBe(200);
    expect((await personaGet(hubToken)).status).toBe(200);
    await withIdentityStore((s) => s.accounts.revokeSession(hub.id));
    expect((await personaGet(hubToken)).status).toBe(401);
    await withIdentityStore((s) => s.accounts.remove('nina'));
    expect((await personaGet(token)).status).toBe(401);
  });
});

describe('the kit asks identity once per session per window', () => {
  it('answers from its last answer within the window and asks again after it, shared by every token of the session', async () => {
    let now = 1_000_000;
    const checked = refuseRevokedSessions(
      createTokenVerifier({ identityUrl: identity.url, audience: 'persona', keys: { file: identity.keysFile } }),
      { identity: identity.channel, recheckMs: 5_000, now: () => now },
    );
    const hub = await hubCredential();
    const [a, b] = [await identity.mint(hub.credential, 'persona'), await identity.mint(hub.credential, 'persona')];
    await Promise.all([checked.verify(`Bearer ${a}`), checked.verify(`Bearer ${b}`)]);
    expect(checked.asked).toBe(1);
    expect((await identityCall('DELETE', `/v1/session-credentials/${hub.id}`, identity.localCredential)).status).toBe(
      204,
    );
    now += 4_999;
    await checked.verify(`Bearer ${b}`);
    expect(checked.asked).toBe(1);
    now += 1;
    await expect(checked.verify(`Bearer ${a}`)).rejects.toMatchObject({ status: 401 });
    await expect(checked.verify(`Bearer ${b}`)).rejects.toMatchObject({ status: 401 });
    expect(checked.asked).toBe(2);
  });

  it('fails closed: when identity cannot answer past the window, a token is refused with 503 naming the identity service', async () => {
    const other = await startTestIdentity();
    const token = await other.mint(other.localCredential, 'persona');
    let now = 1_000_000;
    const checked = refuseRevokedSessions(
      createTokenVerifier({ identityUrl: other.url, audience: 'persona', keys: { file: other.keysFile } }),
      { identity: other.channel, recheckMs: 5_000, now: () => now },
    );
    await checked.verify(`Bearer ${token}`);
    // Stopped, its data folder (and the keys in it) still there: the signature holds, the session cannot be confirmed.
    await other.service.close();
    try {
      // Within the window the last answer stands; past it, no answer means no.
      await checked.verify(`Bearer ${token}`);
      now += 5_000;
      const refused = await checked
        .verify(`Bearer ${token}`)
        .catch((err: unknown) => err as { status: number; detail: string });
      expect(refused).toMatchObject({ status: 503 });
      expect((refused as { detail: string }).detail).toContain(other.url);
    } finally {
      await other.close();
    }
  });

  it('identity answers whether a token stands, and says nothing for a token it did not sign', async () => {
    const status = async (token: string) =>
      (await (
        await fetch(`${identity.url}/v1/auth/token-status`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token }),
        })
      ).json()) as Record<string, unknown>;
    const hub = await hubCredential();
    const token = await identity.mint(hub.credential, 'repohost-api');
    expect(await status(token)).toEqual({ active: true });
    await identityCall('DELETE', `/v1/session-credentials/${hub.id}`, identity.localCredential);
    expect(await status(token)).toEqual({ active: false, reason: 'session_revoked' });
    expect(await status(`${token.slice(0, -4)}AAAA`)).toEqual({ active: false, reason: 'invalid_token' });
  });
});
