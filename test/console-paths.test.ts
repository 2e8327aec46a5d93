/**
 * Paths the console builds from a person's input, against the real identity service and persona store
 * under the real supervisor: a dot segment ("..", ".") never reaches a service as a path step, so a
 * forget of a field can never become a request for the persona itself.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createConsoleApi } from '../main/console/api.ts';
import type { ConsoleApi, ConsoleResult } from '../common/contract.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { SETTLE_MS, STACK_TIMING } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';

vi.setConfig({ testTimeout: 60_000, hookTimeout: SETTLE_MS + 60_000 });

let supervisor: ServiceSupervisor;
let api: ConsoleApi;
let persona: string;
const profile = 'household';

async function store(method: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`${supervisor.url('persona-store')}${path}`, {
    method,
    headers: { authorization: persona, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

beforeAll(async () => {
  const dir = tempDir('console-paths');
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    IDENTITY_PORT: String(await freePort()),
    PERSONA_PORT: String(await freePort()),
  };
  supervisor = new ServiceSupervisor({
    dataDir: join(dir, 'data'),
    env,
    services: ['identity', 'persona-store'],
    ...STACK_TIMING,
  });
  await supervisor.startAll();
  await supervisor.waitUntilSettled(undefined, SETTLE_MS);
  const credential = await supervisor.localCredential();
  const minted = await fetch(`${supervisor.url('identity')}/v1/auth/service-token`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ audience: 'persona' }),
  });
  persona = `Bearer ${((await minted.json()) as { token: string }).token}`;
  expect(await store('POST', '/v1/personas', { profile, display_name: 'Juniper' })).toBe(201);
  expect(
    await store('PUT', `/v1/personas/${profile}/fields/favourite_tea`, {
      description: 'tea',
      value: 'Assam',
      source: 'owner',
    }),
  ).toBe(200);
  api = createConsoleApi({ supervisor });
});

afterAll(async () => {
  await supervisor?.close();
});

describe('a path the console builds from input', () => {
  it.each(['..', '.'])('refuses a field key %j before any request, and the persona is still there', async (key) => {
    for (const request of [
      { method: 'personas.forgetField', params: { profile, key } },
      { method: 'personas.pinField', params: { profile, key, pinned: true } },
    ]) {
      const result: ConsoleResult = await api.call(request);
      expect(result.ok, JSON.stringify(result)).toBe(false);
      if (!result.ok) {
        expect(result.error.status).toBe(422);
        expect(result.error.message).toMatch(/"\." or "\.\."/);
      }
    }
    expect(await store('GET', `/v1/personas/${profile}`)).toBe(200);
    expect(await store('GET', `/v1/personas/${profile}/fields/favourite_tea`)).toBe(200);
  });

  it('sends a key with a slash, a percent sign or dots inside as one encoded segment', async () => {
    for (const key of ['a/..', '%2e%2e', '..%2f', 'x/../../']) {
      const result = await api.call({ method: 'personas.forgetField', params: { profile, key } });
      // The store sees a key that is not there (or normalises to nothing), never another path.
      expect(result.ok).toBe(false);
      if (!result.ok) expect([404, 422]).toContain(result.error.status);
    }
    expect(await store('GET', `/v1/personas/${profile}`)).toBe(200);
  });
});
