import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from '../../test/github-double/world.ts';
import { tempDir } from '../../test/support/identity.ts';
import { startRepohostGateway, type RunningGateway } from './service.ts';
import { SWEEP_CONCURRENCY } from './subscriptions.ts';

/**
 * What happens when things go wrong or run out: a platform that does not answer, credentials that
 * expire or stop being accepted, per-credential write pacing, and a database that is gone.
 */

const SLOW_PAT = `github_pat_${'d4'.repeat(20)}`;
const GONE_PAT = `github_pat_${'e5'.repeat(20)}`;
const WRITER_A = `github_pat_${'f6'.repeat(20)}`;
const WRITER_B = `github_pat_${'a7'.repeat(20)}`;
/** Short, so tests that wait for it stay quick; the double's answers take a few ms. */
const TIMEOUT_MS = 1000;
let world: World;
let hook: string;

async function eventually(ok: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function newPull(repo: string, branch: string): number {
  const d = world.double;
  d.repo(repo).refs.set(`heads/${branch}`, d.headOf(repo, 'main'));
  d.pushCommit(repo, branch, { [`${branch}.txt`]: 'change\n' });
  return d.addPull(repo, { head: branch });
}

/** A second gateway on the same identity service and double, with its own settings and data folder. */
async function otherGateway(env: Record<string, string>): Promise<{ gateway: RunningGateway; done: () => Promise<void> }> {
  const dataDir = tempDir('repohost-other');
  const gateway = await startRepohostGateway({
    REPOHOST_PORT: '0',
    REPOHOST_DATA_DIR: dataDir,
    REPOHOST_IDENTITY_URL: world.identity.url,
    REPOHOST_PLATFORM_URL: world.double.url,
    REPOHOST_IDENTITY_SERVICE_TOKEN: world.serviceToken,
    REPOHOST_LOG_LEVEL: 'silent',
    ...env,
  });
  return {
    gateway,
    done: async () => {
      await gateway.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

beforeAll(async () => {
  world = await startWorld({ REPOHOST_PLATFORM_TIMEOUT_MS: String(TIMEOUT_MS), REPOHOST_SWEEP_SECONDS: '3600' });
  const d = world.double;
  d.addToken(SLOW_PAT, 'slow', 'all');
  d.addRepo('slow/app', { private: true });
  d.addToken(GONE_PAT, 'gone', 'all');
  d.addRepo('gone/app', { private: true });
  d.addToken(WRITER_A, 'writer-a', 'all');
  d.addRepo('writer-a/r', { private: true });
  d.addToken(WRITER_B, 'writer-b', 'all');
  d.addRepo('writer-b/r', { private: true });
  // The double compiles each operation's schema on first use; do it now, not inside a timed request.
  for (const path of ['/repos/slow/app', `/repos/slow/app/pulls/${newPull('slow/app', 'warm')}`]) {
    expect((await fetch(`${d.url}${path}`, { headers: { authorization: `token ${SLOW_PAT}` } })).status).toBe(200);
  }
  await world.connect('slow', { kind: 'token', token: SLOW_PAT });
  await world.connect('gone', { kind: 'token', token: GONE_PAT });
  await world.connect('wa', { kind: 'token', token: WRITER_A });
  await world.connect('wb', { kind: 'token', token: WRITER_B });
  hook = `${world.receiver.url}/hook`;
});

afterAll(async () => {
  await world?.close();
});

describe('a platform that does not answer', () => {
  it('a read answers 504 naming REPOHOST_PLATFORM_TIMEOUT_MS, and is not retried', async () => {
    expect((await world.call('GET', '/v1/repos/slow/app', { profile: 'slow' })).status).toBe(200);
    const timeouts = world.gateway.parts.platform.counters.timeouts;
    const hold = world.double.hold('repos/get');
    try {
      const res = await world.call('GET', '/v1/repos/slow/app', { profile: 'slow' });
      expect(res.status).toBe(504);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.detail).toContain('REPOHOST_PLATFORM_TIMEOUT_MS');
      expect(res.body.detail).toContain(`${TIMEOUT_MS} ms`);
      expect(hold.arrived).toBe(1);
      expect(world.gateway.parts.platform.counters.timeouts).toBe(timeouts + 1);
    } finally {
      hold.release();
    }
    expect((await world.call('GET', '/v1/repos/slow/app', { profile: 'slow' })).status).toBe(200);
  });

  it('a write answers 504 saying the change may or may not have been made', async () => {
    const hold = world.double.hold('issues/create');
    try {
      const res = await world.call('POST', '/v1/repos/slow/app/issues', { profile: 'slow', body: { title: 'stuck' } });
      expect(res.status).toBe(504);
      expect(res.body.detail).toContain('may or may not have been made');
      expect(res.body.detail).toContain('REPOHOST_PLATFORM_TIMEOUT_MS');
    } finally {
      hold.release();
    }
  });

  it('cannot stall the sweep: a credential whose request timed out is skipped for the rest of the pass, and the next pass runs', async () => {
    const subs: string[] = [];
    const pulls: number[] = [];
    for (let i = 0; i < 20; i++) {
      const n = newPull('slow/app', `stall-${i}`);
      pulls.push(n);
      const res = await world.call('POST', '/v1/subscriptions', { profile: 'slow', body: { kind: 'pull_merged', repo: 'slow/app', pull: n, signal_url: hook } });
      expect(res.status).toBe(201);
      subs.push(res.body.id as string);
    }
    const subscriptions = world.gateway.parts.subscriptions;
    const sweeps = subscriptions.sweeps;
    const hold = world.double.hold('pulls/get');
    try {
      await subscriptions.sweep();
      // Only the requests already under way when the first timed out were made; the rest of the 20 were skipped.
      expect(hold.arrived).toBeLessThanOrEqual(SWEEP_CONCURRENCY);
      const first = hold.arrived;
      await subscriptions.sweep();
      expect(subscriptions.sweeps).toBe(sweeps + 2);
      expect(hold.arrived - first).toBeLessThanOrEqual(SWEEP_CONCURRENCY);
      // The caller's list watches them too: one timeout, then it answers.
      const before = hold.arrived;
      const list = await world.call('GET', '/v1/subscriptions?state=active&limit=100', { profile: 'slow' });
      expect(list.status).toBe(200);
      expect(hold.arrived - before).toBe(1);
      expect((list.body.items ?? []).filter((s) => subs.includes(s.id as string))).toHaveLength(20);
    } finally {
      hold.release();
    }
    // Once the platform answers again, the next pass does its work.
    world.double.mergePullOutside('slow/app', pulls[0]!);
    await subscriptions.sweep();
    expect((await world.call('GET', `/v1/subscriptions/${subs[0]}`, { profile: 'slow' })).body.state).toBe('ended');
  });
});

describe('credentials the platform stops accepting', () => {
  it('a second 401 after the one refresh gives up with a problem naming the connection to renew, without looping', async () => {
    expect((await world.call('GET', '/v1/repos/gone/app', { profile: 'gone' })).status).toBe(200);
    const resolutions = world.gateway.parts.resolver.resolutions;
    world.double.revoke('gone');
    const res = await world.call('GET', '/v1/repos/gone/app', { profile: 'gone' });
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('even after a refresh');
    expect(res.body.detail).toContain('/v1/connections/gone');
    expect(world.gateway.parts.resolver.resolutions).toBe(resolutions + 1);
    expect(world.double.calls.filter((c) => c.path === '/repos/gone/app' && c.status === 401)).toHaveLength(2);
  });
});

describe('per-credential throttling', () => {
  it('spaces the writes of one credential, and two credentials do not share a queue', async () => {
    const { gateway, done } = await otherGateway({ REPOHOST_WRITE_SPACING_MS: '1500' });
    try {
      const token = await world.token();
      const write = (profile: string, repo: string, title: string) =>
        fetch(`${gateway.url}/v1/repos/${repo}/issues`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'x-identity-profile': profile, 'content-type': 'application/json' },
          body: JSON.stringify({ title }),
        });
      // Resolve both credentials first, so only the pacing orders the writes.
      for (const [profile, repo] of [['wa', 'writer-a/r'], ['wb', 'writer-b/r']] as const) {
        const res = await fetch(`${gateway.url}/v1/repos/${repo}`, { headers: { authorization: `Bearer ${token}`, 'x-identity-profile': profile } });
        expect(res.status).toBe(200);
      }
      const answers = await Promise.all([write('wa', 'writer-a/r', 'a1'), write('wa', 'writer-a/r', 'a2'), write('wa', 'writer-a/r', 'a3'), write('wb', 'writer-b/r', 'b1')]);
      expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201]);
      const arrivals = (bucket: string) =>
        world.double.calls
          .filter((c) => c.operationId === 'issues/create' && c.bucket === bucket)
          .map((c) => c.at)
          .sort((x, y) => x - y);
      const a = arrivals('writer-a');
      const b = arrivals('writer-b');
      expect(a).toHaveLength(3);
      expect(b).toHaveLength(1);
      // One credential: about the spacing (1.5 s) between its writes; generous for a busy machine.
      expect(a[1]! - a[0]!).toBeGreaterThanOrEqual(1000);
      expect(a[2]! - a[1]!).toBeGreaterThanOrEqual(1000);
      // The other credential's write did not queue behind them (that would be 1.5 s or more): it went out with the first.
      expect(Math.abs(b[0]! - a[0]!)).toBeLessThan(1000);
    } finally {
      await done();
    }
  });
});

describe('readiness', () => {
  it('answers 503 naming the database when it does not answer', async () => {
    const { gateway, done } = await otherGateway({});
    try {
      expect((await fetch(`${gateway.url}/ready`)).status).toBe(200);
      gateway.parts.sqlite.close();
      const res = await fetch(`${gateway.url}/ready`);
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const body = (await res.json()) as { detail: string; checks: Record<string, string> };
      expect(body.checks).toEqual({ identity_keys: 'ok', platform: 'ok', database: 'failing', service_token: 'ok' });
      expect(body.detail).toContain('database');
      expect(body.detail).toContain('REPOHOST_DATA_DIR');
    } finally {
      await done();
    }
  });
});

describe('credentials in memory', () => {
  it('is re-resolved shortly before it expires, and once expired nothing of it stays in memory', async () => {
    const d = world.double;
    // Installation tokens that live 65 s: usable by the gateway for only 5 of them (it stops 60 s early).
    d.installationTokenTtlSeconds = 65;
    d.addRepo('shortco/one', { private: true });
    const app = d.addInstallation('shortco', ['shortco/one']);
    await world.connect('short', { kind: 'app', app_id: app.appId, installation_id: app.installationId, private_key: app.privateKey });
    await world.restartGateway({ REPOHOST_PLATFORM_TIMEOUT_MS: String(TIMEOUT_MS), REPOHOST_SWEEP_SECONDS: '1' });
    const parts = () => world.gateway.parts;
    expect(parts().resolver.fingerprints()).toEqual([]);

    expect((await world.call('GET', '/v1/repos/shortco/one', { profile: 'short' })).status).toBe(200);
    const n = newPull('shortco/one', 'short-lived');
    const sub = await world.call('POST', '/v1/subscriptions', { profile: 'short', body: { kind: 'pull_merged', repo: 'shortco/one', pull: n, signal_url: hook } });
    expect(sub.status).toBe(201);
    const [fingerprint] = parts().resolver.fingerprints();
    expect(fingerprint).toBeDefined();
    expect(parts().platform.fingerprints()).toContain(fingerprint);
    expect(parts().subscriptions.heldFingerprints()).toContain(fingerprint);
    const resolutions = parts().resolver.resolutions;

    // No call in between: the sweep tick drops the credential, its client and ETag cache, and the hold.
    const everywhere = () => [...parts().resolver.fingerprints(), ...parts().platform.fingerprints(), ...parts().subscriptions.heldFingerprints()];
    await eventually(() => !everywhere().includes(fingerprint!), 'the expired credential to be dropped');
    expect(everywhere()).not.toContain(fingerprint);

    // The next call resolves a new credential, before the platform ever refused the old one.
    expect((await world.call('GET', '/v1/repos/shortco/one', { profile: 'short' })).status).toBe(200);
    expect(parts().resolver.resolutions).toBe(resolutions + 1);
    expect(parts().resolver.fingerprints()).not.toContain(fingerprint);
    expect(parts().resolver.fingerprints()).toHaveLength(1);
    expect(d.calls.filter((c) => c.path.startsWith('/repos/shortco/') && c.status === 401)).toEqual([]);
    d.installationTokenTtlSeconds = 3600;
  });

  it('every request the double received matched GitHub\u2019s description', () => {
    expect(world.double.violations).toEqual([]);
  });
});
