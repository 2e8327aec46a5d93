import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIdentity, type TestIdentity } from '../../test/support/identity.ts';
import { openIdentityStore } from './service.ts';

/**
 * What a session credential may do, tried as an attacker holding one would, over real HTTP against the
 * real identity service: a hub credential mints tokens for its audiences and nothing else; the app's
 * own credential manages; nothing outlives the credential it came from.
 */

const PAT = 'github_pat_11ABCDEFG0' + 'q'.repeat(72);
let identity: TestIdentity;
let local: string;

async function call(method: string, path: string, auth: string, body?: unknown) {
  const res = await fetch(identity.url + path, {
    method,
    headers: { authorization: `Bearer ${auth}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

interface Row {
  id: string;
  label: string | null;
  expires_at: string | null;
  current: boolean;
  purpose: string;
  audiences: string[] | null;
}

const listed = async (auth: string) => (await call('GET', '/v1/session-credentials', auth)).json!.credentials as Row[];
const ownId = async (auth: string) => (await listed(auth)).find((c) => c.current)!.id;

/** A hub credential made as the console's "Connect a hub" makes it: with the app's own credential. */
async function hubCredential(
  body: Record<string, unknown> = { label: 'hub' },
): Promise<{ id: string; credential: string; expires_at: string | null }> {
  const made = await call('POST', '/v1/session-credentials', local, body);
  expect(made.status).toBe(201);
  return made.json as { id: string; credential: string; expires_at: string | null };
}

/** A credential the command line makes for the local account (the app's own kind), as `session add local --purpose owner` does. */
async function ownerCredentialFromCli(
  expiresInSeconds: number | null,
): Promise<{ credential: string; session: string }> {
  const store = openIdentityStore(identity.dataDir, {
    tokenTtlSeconds: 600,
    keyRotationDays: 30,
    platformUrl: 'http://127.0.0.1:9',
  });
  try {
    return await store.accounts.addSession('local', { label: 'cli', expiresInSeconds, purpose: 'owner' });
  } finally {
    await store.database.close();
  }
}

const minted = async (credential: string, audience: string) =>
  call('POST', '/v1/auth/service-token', credential, { audience });

beforeAll(async () => {
  identity = await startTestIdentity();
  local = identity.localCredential;
});

afterAll(async () => {
  await identity?.close();
});

describe('a hub credential mints tokens for its audiences and nothing else', () => {
  it('is made for the persona store and the gateway unless other audiences are named, and says so in the list', async () => {
    const hub = await hubCredential();
    const row = (await listed(local)).find((c) => c.id === hub.id)!;
    expect(row).toMatchObject({ purpose: 'hub', audiences: ['persona', 'repohost-api'] });
    expect((await listed(local)).find((c) => c.current)).toMatchObject({ purpose: 'owner', audiences: null });
    expect((await minted(hub.credential, 'persona')).status).toBe(200);
    expect((await minted(hub.credential, 'repohost-api')).status).toBe(200);
  });

  it('refuses to mint a token for an audience it was not made for (403 naming the ones it may)', async () => {
    const hub = await hubCredential({ label: 'persona only', audiences: ['persona'] });
    expect((await minted(hub.credential, 'persona')).status).toBe(200);
    const refused = await minted(hub.credential, 'repohost-api');
    expect(refused.status).toBe(403);
    expect(refused.json!.detail).toContain('"persona"');
    expect(refused.json).not.toHaveProperty('token');
  });

  it('cannot revoke every other credential, the app\u2019s own included; the app keeps working', async () => {
    const hub = await hubCredential();
    const all = await call('DELETE', '/v1/session-credentials?keep_current=true', hub.credential);
    expect(all.status).toBe(403);
    expect(all.json!.detail).toMatch(/hub credential/);
    const one = await call('DELETE', `/v1/session-credentials/${await ownId(local)}`, hub.credential);
    expect(one.status).toBe(403);
    expect((await minted(local, 'persona')).status).toBe(200);
    expect((await call('GET', '/v1/session-credentials', local)).status).toBe(200);
  });

  it('cannot make a credential, of any lifetime', async () => {
    const hub = await hubCredential({ label: 'short', expires_in_seconds: 60 });
    for (const body of [{ expires_in_seconds: null }, {}, { expires_in_seconds: 60 }]) {
      const made = await call('POST', '/v1/session-credentials', hub.credential, body);
      expect(made.status).toBe(403);
      expect(made.json).not.toHaveProperty('credential');
    }
  });

  it('cannot put, delete or list platform connections, nor list credentials', async () => {
    expect((await call('PUT', '/v1/connections/work', local, { kind: 'token', token: PAT })).status).toBe(200);
    const hub = await hubCredential();
    expect((await call('PUT', '/v1/connections/work', hub.credential, { kind: 'token', token: PAT })).status).toBe(403);
    expect((await call('PUT', '/v1/connections/other', hub.credential, { kind: 'token', token: PAT })).status).toBe(
      403,
    );
    expect((await call('DELETE', '/v1/connections/work', hub.credential)).status).toBe(403);
    expect((await call('GET', '/v1/connections', hub.credential)).status).toBe(403);
    expect((await call('GET', '/v1/session-credentials', hub.credential)).status).toBe(403);
    expect(
      ((await call('GET', '/v1/connections', local)).json!.connections as { profile: string }[]).map((c) => c.profile),
    ).toEqual(['work']);
  });

  it('may still revoke nothing but is revoked by the app\u2019s own credential', async () => {
    const hub = await hubCredential();
    expect((await call('DELETE', `/v1/session-credentials/${hub.id}`, local)).status).toBe(204);
    expect((await minted(hub.credential, 'persona')).status).toBe(401);
  });

  it('refuses an audience list that is empty or holds a malformed audience, naming the member', async () => {
    for (const audiences of [[], ['has space'], ['x'.repeat(201)]]) {
      const r = await call('POST', '/v1/session-credentials', local, { label: 'bad', audiences });
      expect(r.status).toBe(422);
      expect(r.json!.detail).toMatch(/audiences/);
    }
  });
});

describe('the app\u2019s own credential', () => {
  it('cannot be revoked through the API by another credential of the same account, even one of its own kind', async () => {
    const other = await ownerCredentialFromCli(null);
    const appId = await ownId(local);
    const one = await call('DELETE', `/v1/session-credentials/${appId}`, other.credential);
    expect(one.status).toBe(403);
    expect(one.json!.detail).toMatch(/command line/);
    const all = await call('DELETE', '/v1/session-credentials?keep_current=true', other.credential);
    expect(all.status).toBe(200);
    expect((await minted(local, 'persona')).status).toBe(200);
    expect((await listed(local)).map((c) => c.id)).toContain(appId);
    // Revoking itself stays possible (the command line or the next start makes a new one for the app).
    expect((await call('DELETE', `/v1/session-credentials/${other.session}`, other.credential)).status).toBe(204);
  });
});

describe('nothing outlives the credential it came from', () => {
  it('a credential that expires in 60 s cannot make one that never expires, nor one that lives longer', async () => {
    const short = await ownerCredentialFromCli(60);
    const expiresAt = Date.parse((await listed(short.credential)).find((c) => c.current)!.expires_at!);
    const never = await call('POST', '/v1/session-credentials', short.credential, { expires_in_seconds: null });
    expect(never.status).toBe(422);
    expect(never.json!.detail).toMatch(/outlive/);
    const longer = await call('POST', '/v1/session-credentials', short.credential, { expires_in_seconds: 3600 });
    expect(longer.status).toBe(422);
    // Without an asked lifetime it gets the default, cut to its maker's.
    const fallback = await call('POST', '/v1/session-credentials', short.credential, {});
    expect(fallback.status).toBe(201);
    expect(Date.parse(fallback.json!.expires_at as string)).toBeLessThanOrEqual(expiresAt);
  });

  it('a token never outlives its session credential: its exp is cut to the credential\u2019s expiry', async () => {
    const hub = await hubCredential({ label: 'one minute', expires_in_seconds: 60 });
    const r = await minted(hub.credential, 'persona');
    expect(r.status).toBe(200);
    const exp = decodeJwt(r.json!.token as string).exp!;
    expect(exp * 1000).toBeLessThanOrEqual(Date.parse(hub.expires_at!));
    expect(Date.parse(r.json!.expires_at as string)).toBe(exp * 1000);
    expect(r.json!.expires_in).toBeLessThanOrEqual(60);
  });
});
