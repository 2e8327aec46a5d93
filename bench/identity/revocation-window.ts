/**
 * The revocation window: how long a token minted before its session credential was revoked still works,
 * per service that takes tokens (the persona store and the gateway; the provider takes none), with each
 * service's default recheck (PERSONA_SESSION_RECHECK_MS and REPOHOST_CREDENTIAL_RECHECK_MS, 5 s).
 *
 * Each round makes a hub credential, mints a token for each service and calls both services with it
 * without pause (as a busy hub does), revokes the credential at a random moment, and times from the
 * revoke's answer to each service's first 401. A window is at most the recheck plus one identity round
 * trip; where within it a revoke lands is chance, hence several rounds.
 *
 *   npx tsx bench/identity/revocation-window.ts [--smoke]  (smoke: two rounds, to check the script)
 */
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startWorld } from '../../test/github-double/world.ts';
import { tempDir } from '../../test/support/identity.ts';
import { startPersonaStore } from '../../services/persona-store/service.ts';

const SMOKE = process.argv.includes('--smoke');
const ROUNDS = SMOKE ? 2 : 12;
const PAT = `github_pat_${'rv'.repeat(20)}`;

const world = await startWorld({ REPOHOST_LOG_LEVEL: 'silent' });
const persona = await startPersonaStore({
  PERSONA_DATA_DIR: tempDir('bench-revocation'),
  PERSONA_PORT: '0',
  ...world.identity.trust('PERSONA_'),
  PERSONA_LOG_LEVEL: 'silent',
});
try {
  world.double.addToken(PAT, 'bench', 'all');
  world.double.addRepo('bench/app', { description: 'bench' });
  await world.connect('work', { kind: 'token', token: PAT });
  const identity = world.identity;
  const own = { authorization: `Bearer ${identity.localCredential}`, 'content-type': 'application/json' };

  const services = {
    'persona store': { url: `${persona.url}/v1/personas`, audience: 'persona', headers: {} as Record<string, string> },
    gateway: {
      url: `${world.gateway.url}/v1/repos/bench/app`,
      audience: 'repohost-api',
      headers: { 'x-identity-profile': 'work' },
    },
  };
  const windows: Record<string, number[]> = { 'persona store': [], gateway: [] };

  for (let round = 0; round < ROUNDS; round++) {
    const made = (await (
      await fetch(`${identity.url}/v1/session-credentials`, {
        method: 'POST',
        headers: own,
        body: JSON.stringify({ label: `bench ${round}` }),
      })
    ).json()) as {
      id: string;
      credential: string;
    };
    let revokedAt = Number.NaN;
    const calls = Object.entries(services).map(async ([name, s]) => {
      const token = await identity.mint(made.credential, s.audience);
      for (;;) {
        const res = await fetch(s.url, { headers: { ...s.headers, authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        const at = performance.now();
        if (res.status === 401 && !Number.isNaN(revokedAt)) return windows[name]!.push(at - revokedAt);
        if (res.status !== 200) throw new Error(`${name} answered ${res.status} before the revoke`);
      }
    });
    // A random moment within the services' recheck period, so the revoke lands anywhere in their windows.
    await sleep(1_000 + randomInt(5_000));
    const revoke = await fetch(`${identity.url}/v1/session-credentials/${made.id}`, {
      method: 'DELETE',
      headers: { authorization: own.authorization },
    });
    revokedAt = performance.now();
    if (revoke.status !== 204) throw new Error(`revoke answered ${revoke.status}`);
    await Promise.all(calls);
  }

  const line = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `min ${(s[0]! / 1000).toFixed(2)} s  median ${(s[Math.floor(s.length / 2)]! / 1000).toFixed(2)} s  max ${(s.at(-1)! / 1000).toFixed(2)} s`;
  };
  console.log(
    `identity / revocation window: from a revoke's answer to a service's first 401 (${ROUNDS} rounds, default 5 s rechecks)`,
  );
  for (const [name, xs] of Object.entries(windows)) console.log(`  ${name.padEnd(14)} ${line(xs)}`);
  console.log('  chat-model provider: takes no tokens');
  if (SMOKE) console.log('(smoke run: two rounds, to check the script; the figures mean little)');
} finally {
  await persona.close();
  await world.close();
}
