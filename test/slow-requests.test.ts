/**
 * Slow requests cannot take a service down (issue 30, finding 2), tried as the audit did: 540 real
 * slow sockets per service (a byte of body every 5 s, bodies never finishing; a connection the service
 * closes is opened again) against identity, the persona store and the provider, running as the real
 * services under the real supervisor. While every connection slot is taken, real clients are served
 * and the supervisor's liveness checks are answered, round after round, and no service is restarted.
 * How fast the real clients are served is a figure of bench/desktop/slow-requests.ts, not of this test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceStatus } from '../common/contract.ts';
import type { ServiceName } from '../common/services.ts';
import { ServiceSupervisor, type LivenessCheck } from '../main/supervisor/supervisor.ts';
import { standInBinary } from '../services/model-provider/test-support/stand-in.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';
import { SlowFlood, realRequest } from './support/slow-flood.ts';

/** The finding's figure: more slow requests than a service keeps connections (512). */
const SLOW_REQUESTS = 540;
const LIVENESS_FAILURES = 2;

let supervisor: ServiceSupervisor;
let personaToken: string;
const floods: SlowFlood[] = [];
const statuses: ServiceStatus[] = [];

beforeAll(async () => {
  const standIn = standInBinary(tempDir('slow-cli'));
  supervisor = new ServiceSupervisor({
    dataDir: tempDir('slow-requests'),
    services: ['identity', 'persona-store', 'model-provider'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IDENTITY_PORT: String(await freePort()),
      PERSONA_PORT: String(await freePort()),
      MODELPROV_PORT: String(await freePort()),
      MODELPROV_CLI_BINARY: standIn.binary,
      IDENTITY_LOG_LEVEL: 'warn',
      PERSONA_LOG_LEVEL: 'warn',
      MODELPROV_LOG_LEVEL: 'warn',
    },
    startTimeoutMs: 150_000,
    // Quick rounds, so that a liveness check stuck behind the flood would restart a service within seconds.
    pollMs: 500,
    probeTimeoutMs: 3_000,
    livenessFailures: LIVENESS_FAILURES,
  });
  await supervisor.startAll();
  const settled = await supervisor.waitUntilSettled(undefined, 180_000);
  expect(settled.map((s) => s.state)).toEqual(['ready', 'ready', 'ready']);
  const credential = await supervisor.localCredential();
  const minted = await realRequest(`${supervisor.url('identity')}/v1/auth/service-token`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}` },
    body: { audience: 'persona' },
  });
  personaToken = (JSON.parse(minted.body) as { token: string }).token;
  supervisor.on('status', (s: ServiceStatus) => statuses.push(s));
}, 240_000);

afterAll(async () => {
  for (const f of floods) f.stop();
  await supervisor?.close();
});

/** Resolves after `rounds` liveness checks of `name`'s process counted from now, each answered or not. */
function livenessRounds(name: ServiceName, rounds: number): Promise<LivenessCheck[]> {
  const seen: LivenessCheck[] = [];
  return new Promise((resolve) => {
    const on = (check: LivenessCheck) => {
      if (check.name !== name) return;
      seen.push(check);
      if (seen.length === rounds) {
        supervisor.off('checked', on);
        resolve(seen);
      }
    };
    supervisor.on('checked', on);
  });
}

/** What the flood on each service sends, and what a real client of it asks meanwhile. */
function attackOn(name: ServiceName): {
  path: string;
  headers?: Record<string, string>;
  real: () => Promise<number[]>;
} {
  const url = supervisor.url(name);
  if (name === 'identity') {
    return {
      // A route that takes no credential: its body must be read, so only the connection bound stands in the way.
      path: '/v1/auth/token-status',
      real: async () => [
        (await realRequest(`${url}/.well-known/jwks.json`)).status,
        (await realRequest(`${url}/v1/auth/token-status`, { method: 'POST', body: { token: personaToken } })).status,
      ],
    };
  }
  if (name === 'persona-store') {
    return {
      // With a valid token, so that the body is read after it (a caller without one is refused before its body).
      path: '/v1/personas',
      headers: { authorization: `Bearer ${personaToken}` },
      real: async () => [
        (await realRequest(`${url}/v1/personas`, { headers: { authorization: `Bearer ${personaToken}` } })).status,
      ],
    };
  }
  return {
    path: '/v1/chat/completions',
    real: async () => [
      (await realRequest(`${url}/v1/models`)).status,
      (
        await realRequest(`${url}/v1/chat/completions`, {
          method: 'POST',
          body: { model: 'sonnet', messages: [{ role: 'user', content: 'hello under a flood' }] },
        })
      ).status,
    ],
  };
}

describe('540 slow requests on a service', { timeout: 300_000 }, () => {
  for (const name of ['identity', 'persona-store', 'model-provider'] as const) {
    it(`${name}: real clients are served and the liveness checks answered while every slot is taken; no restart`, async () => {
      const before = supervisor.status().find((s) => s.name === name)!;
      const attack = attackOn(name);
      const flood = new SlowFlood({
        port: Number(new URL(supervisor.url(name)).port),
        path: attack.path,
        ...(attack.headers ? { headers: attack.headers } : {}),
        count: SLOW_REQUESTS,
      });
      floods.push(flood);
      const from = statuses.length;
      await flood.start();
      // More slow requests than the service keeps: it has closed some to make room (every slot was taken).
      const rounds = livenessRounds(name, LIVENESS_FAILURES + 2);
      // Many of them, each on a connection of its own, while the flood's closed connections come back.
      for (let i = 0; i < 25; i++) {
        const answered = await attack.real();
        expect(answered).toEqual(answered.map(() => 200));
      }
      // As many checks as would have ended the process had they gone unanswered, and more, all answered.
      expect((await rounds).every((check) => check.alive && check.pid === before.pid)).toBe(true);
      expect(flood.closedByServer).toBeGreaterThanOrEqual(SLOW_REQUESTS - 512);
      // Closed to make room: an upload with a 408 saying why, a connection that had not sent its headers yet without a word.
      expect([...flood.answers.keys()].filter((status) => status !== 408 && status !== 0)).toEqual([]);
      flood.stop();
      const now = supervisor.status().find((s) => s.name === name)!;
      expect(now).toMatchObject({ pid: before.pid, restarts: 0 });
      expect(
        statuses.slice(from).filter((s) => ['crashed', 'backing-off', 'gave-up', 'stopping'].includes(s.state)),
      ).toEqual([]);
    });
  }
});
