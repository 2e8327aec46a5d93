import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, field, startTestbed, type Testbed } from '../services/persona-store/test-support/harness.ts';
import { startTestIdentity, type TestIdentity } from './support/identity.ts';

/**
 * The person's own forgetting, chosen with their own credential at identity (as the console's Settings page
 * does) and read by the persona store as its settings service, the way the supervisor wires the two.
 */
const settingsToken = `hubsvc_${randomBytes(32).toString('base64url')}`;
let identity: TestIdentity;
let bed: Testbed;

beforeAll(async () => {
  identity = await startTestIdentity({ IDENTITY_SERVICE_TOKENS: `persona=${settingsToken}` });
  bed = await startTestbed(
    { PERSONA_SETTINGS_API_BASE_URL: identity.url, PERSONA_SETTINGS_API_TOKEN: settingsToken },
    identity,
  );
});
afterAll(async () => {
  await bed?.close();
  await identity?.close();
});

const putSettings = (credential: string, body: unknown) =>
  fetch(`${identity.url}/v1/account/settings/persona`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('forgetting the person chooses, kept at identity and read by the persona store', () => {
  it('nothing chosen: the deployment\u2019s keep; chosen destroy_now: the next forget destroys; cleared: keep again', async () => {
    const c = bed.owner;
    await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' });
    const mode = async () => (await c.call<{ forget: { mode: string } }>('GET', '/v1/personas/ada')).body.forget.mode;
    expect(await mode()).toBe('keep');

    const chosen = await putSettings(identity.localCredential, { forget_mode: 'destroy_now' });
    expect([chosen.status, await chosen.json()]).toEqual([200, { forget_mode: 'destroy_now' }]);
    expect(await mode()).toBe('destroy_now');
    await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
    expect((await c.call('DELETE', '/v1/personas/ada/fields/mood')).body).toEqual({ outcome: 'destroyed' });

    expect((await putSettings(identity.localCredential, {})).status).toBe(200);
    expect(await mode()).toBe('keep');
    await c.call('PUT', '/v1/personas/ada/fields/mood', field('calm'));
    expect((await c.call('DELETE', '/v1/personas/ada/fields/mood')).body).toEqual({ outcome: 'kept' });
  });

  it('one person\u2019s choice is theirs alone: another account keeps the deployment\u2019s', async () => {
    expect((await putSettings(identity.localCredential, { forget_mode: 'destroy_after_grace' })).status).toBe(200);
    const other = await bed.account('grace');
    await other.call('POST', '/v1/personas', { profile: 'g', display_name: 'G' });
    expect((await other.call<{ forget: { mode: string } }>('GET', '/v1/personas/g')).body.forget.mode).toBe('keep');
    expect((await bed.owner.call<{ forget: { mode: string } }>('GET', '/v1/personas/ada')).body.forget.mode).toBe(
      'destroy_after_grace',
    );
  });

  it('a hub credential cannot choose; only the registered persona store reads; bad choices are refused in words', async () => {
    const made = await fetch(`${identity.url}/v1/session-credentials`, {
      method: 'POST',
      headers: { authorization: `Bearer ${identity.localCredential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'hub' }),
    });
    const { credential } = (await made.json()) as { credential: string };
    expect((await putSettings(credential, { forget_mode: 'destroy_now' })).status).toBe(403);

    const read = (token: string) =>
      fetch(`${identity.url}/v1/settings/persona?account=x`, { headers: { authorization: `Bearer ${token}` } });
    expect((await read(identity.localCredential)).status).toBe(401);
    expect((await read(settingsToken)).status).toBe(404);

    const bad = await putSettings(identity.localCredential, { forget_mode: 'shred', grace_period_seconds: 0 });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: string }).detail).toContain('forget_mode');
  });

  it('a persona store whose settings service does not answer refuses with 503 rather than apply another policy', async () => {
    const lost = await startTestbed({
      PERSONA_SETTINGS_API_BASE_URL: 'http://127.0.0.1:9',
      PERSONA_SETTINGS_API_TOKEN: settingsToken,
    });
    try {
      const answer = await new Client(lost.store.url, lost.owner.token).call<{ detail: string }>('GET', '/v1/personas');
      expect(answer.status).toBe(503);
      expect(answer.body.detail).toContain('settings service');
    } finally {
      await lost.close();
    }
  });
});
