import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorld, type World } from '../../test/github-double/world.ts';
import { tempDir } from '../../test/support/identity.ts';
import { waitFor } from '../../test/support/wait-for.ts';
import { openIdentityStore } from '../identity/service.ts';
import { CredentialResolver } from './credential-resolver.ts';
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
/**
 * The platform timeout of the gateway that meets a platform that does not answer: each such test waits
 * it out once or a few times. Every other request of those tests goes to operations whose schemas the
 * double compiled before (see beforeAll), so an answer that takes a few ms is never near it.
 */
const SHORT_TIMEOUT_MS = 2000;
let world: World;
let hook: string;

function newPull(repo: string, branch: string): number {
  const d = world.double;
  d.repo(repo).refs.set(`heads/${branch}`, d.headOf(repo, 'main'));
  d.pushCommit(repo, branch, { [`${branch}.txt`]: 'change\n' });
  return d.addPull(repo, { head: branch });
}

/** A second gateway on the same identity service and double, with its own settings and data folder. */
async function otherGateway(
  env: Record<string, string>,
): Promise<{ gateway: RunningGateway; done: () => Promise<void> }> {
  const dataDir = tempDir('repohost-other');
  const gateway = await startRepohostGateway({
    REPOHOST_PORT: '0',
    REPOHOST_DATA_DIR: dataDir,
    ...world.identity.trust('REPOHOST_'),
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

const callWith = (
  gateway: RunningGateway,
  token: string,
  profile: string,
  path: string,
  init: { method?: string; body?: unknown } = {},
) =>
  fetch(`${gateway.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, 'x-identity-profile': profile, 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });

beforeAll(async () => {
  // The default platform timeout (30 s): only the gateway of 'a platform that does not answer' has a short one.
  world = await startWorld({ REPOHOST_SWEEP_SECONDS: '3600' });
  const d = world.double;
  d.addToken(SLOW_PAT, 'slow', 'all');
  d.addRepo('slow/app', { private: true });
  d.addToken(GONE_PAT, 'gone', 'all');
  d.addRepo('gone/app', { private: true });
  d.addToken(WRITER_A, 'writer-a', 'all');
  d.addRepo('writer-a/r', { private: true });
  d.addToken(WRITER_B, 'writer-b', 'all');
  d.addRepo('writer-b/r', { private: true });
  // The double compiles each operation's schema on first use; do it now, not inside a request with the short timeout.
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
  let short: { gateway: RunningGateway; done: () => Promise<void> };
  let token: string;
  const call = async (path: string, init: { method?: string; body?: unknown } = {}) => {
    const res = await callWith(short.gateway, token, 'slow', path, init);
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: (text ? JSON.parse(text) : {}) as {
        detail?: string;
        id?: string;
        state?: string;
        items?: { id: string }[];
      },
    };
  };
  beforeAll(async () => {
    short = await otherGateway({
      REPOHOST_PLATFORM_TIMEOUT_MS: String(SHORT_TIMEOUT_MS),
      REPOHOST_SWEEP_SECONDS: '3600',
    });
    token = await world.token();
  });
  afterAll(async () => {
    await short?.done();
  });

  it('a read answers 504 naming REPOHOST_PLATFORM_TIMEOUT_MS, and is not retried', async () => {
    expect((await call('/v1/repos/slow/app')).status).toBe(200);
    const timeouts = short.gateway.parts.platform.counters.timeouts;
    const hold = world.double.hold('repos/get');
    try {
      const res = await call('/v1/repos/slow/app');
      expect(res.status).toBe(504);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.detail).toContain('REPOHOST_PLATFORM_TIMEOUT_MS');
      expect(res.body.detail).toContain(`${SHORT_TIMEOUT_MS} ms`);
      expect(hold.arrived).toBe(1);
      expect(short.gateway.parts.platform.counters.timeouts).toBe(timeouts + 1);
    } finally {
      hold.release();
    }
    expect((await call('/v1/repos/slow/app')).status).toBe(200);
  });

  it('a write answers 504 saying the change may or may not have been made', async () => {
    const hold = world.double.hold('issues/create');
    try {
      const res = await call('/v1/repos/slow/app/issues', { method: 'POST', body: { title: 'stuck' } });
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
      const res = await call('/v1/subscriptions', {
        method: 'POST',
        body: { kind: 'pull_merged', repo: 'slow/app', pull: n, signal_url: hook },
      });
      expect(res.status).toBe(201);
      subs.push(res.body.id!);
    }
    const subscriptions = short.gateway.parts.subscriptions;
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
      const list = await call('/v1/subscriptions?state=active&limit=100');
      expect(list.status).toBe(200);
      expect(hold.arrived - before).toBe(1);
      expect((list.body.items ?? []).filter((s) => subs.includes(s.id))).toHaveLength(20);
    } finally {
      hold.release();
    }
    // Once the platform answers again, the next pass does its work.
    world.double.mergePullOutside('slow/app', pulls[0]!);
    await subscriptions.sweep();
    expect((await call(`/v1/subscriptions/${subs[0]}`)).body.state).toBe('ended');
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

describe('credentials that stop being current', () => {
  /** A gateway that confirms before every use (window 0), so a test needs to wait for nothing. */
  async function strictGateway() {
    return otherGateway({ REPOHOST_CREDENTIAL_RECHECK_MS: '0', REPOHOST_SWEEP_SECONDS: '3600' });
  }
  const platformCallsTo = (prefix: string) => world.double.calls.filter((c) => c.path.startsWith(prefix)).length;
  const identityCall = (method: string, path: string, credential: string, body?: unknown) =>
    fetch(`${world.identity.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  /** An account of its own with one connection, a subscription held for sweeps, and a caller token. */
  async function setUp(gateway: RunningGateway, name: string) {
    const pat = `github_pat_${name
      .replace(/[^a-z0-9]/g, '')
      .padEnd(8, '0')
      .slice(0, 8)}${'0'.repeat(32)}`;
    world.double.addToken(pat, name, 'all');
    world.double.addRepo(`${name}/app`, { private: true });
    const credential = await world.identity.addAccount(name);
    expect((await identityCall('PUT', '/v1/connections/main', credential, { kind: 'token', token: pat })).status).toBe(
      200,
    );
    const token = await world.identity.mint(credential, 'repohost-api');
    expect((await callWith(gateway, token, 'main', `/v1/repos/${name}/app`)).status).toBe(200);
    const pull = newPull(`${name}/app`, 'watched');
    const opened = await callWith(gateway, token, 'main', '/v1/subscriptions', {
      method: 'POST',
      body: { kind: 'pull_merged', repo: `${name}/app`, pull, signal_url: hook },
    });
    expect(opened.status).toBe(201);
    const fingerprint = gateway.parts.subscriptions.heldFingerprints().at(-1)!;
    // Control: while the connection stands, a sweep watches the subscription on the platform.
    const before = platformCallsTo(`/repos/${name}/app/pulls/`);
    await gateway.parts.subscriptions.sweep();
    expect(platformCallsTo(`/repos/${name}/app/pulls/`)).toBeGreaterThan(before);
    return { credential, token, fingerprint, repo: `/repos/${name}/app` };
  }

  it('after DELETE of the connection, the next sweep and the next request do not use it (window 0)', async () => {
    const { gateway, done } = await strictGateway();
    try {
      const x = await setUp(gateway, 'doomed');
      expect((await identityCall('DELETE', '/v1/connections/main', x.credential)).status).toBe(204);
      const calls = platformCallsTo(x.repo);
      // The sweep comes first: it asks the identity service before using what it holds, and drops it.
      await gateway.parts.subscriptions.sweep();
      expect(platformCallsTo(x.repo)).toBe(calls);
      expect(gateway.parts.subscriptions.heldFingerprints()).not.toContain(x.fingerprint);
      expect(gateway.parts.resolver.fingerprints()).not.toContain(x.fingerprint);
      expect(gateway.parts.platform.fingerprints()).not.toContain(x.fingerprint);
      const refused = await callWith(gateway, x.token, 'main', '/v1/repos/doomed/app');
      expect(refused.status).toBe(404);
      expect(((await refused.json()) as { detail: string }).detail).toContain('/v1/connections/main');
      expect(platformCallsTo(x.repo)).toBe(calls);
      // What was opened under the profile can still be listed; it is no longer watched.
      const list = await callWith(gateway, x.token, 'main', '/v1/subscriptions');
      expect(list.status).toBe(200);
      expect(((await list.json()) as { total: number }).total).toBe(1);
      expect(platformCallsTo(x.repo)).toBe(calls);
    } finally {
      await done();
    }
  });

  it('after the session credential behind the caller\u2019s token is revoked, the token is refused on every route and sweeps stop; the account\u2019s other session goes on', async () => {
    const { gateway, done } = await strictGateway();
    try {
      const x = await setUp(gateway, 'revoked');
      const made = await identityCall('POST', '/v1/session-credentials', x.credential, { label: 'other' });
      expect(made.status).toBe(201);
      const otherToken = await world.identity.mint(
        ((await made.json()) as { credential: string }).credential,
        'repohost-api',
      );
      const ids = (await (await identityCall('GET', '/v1/session-credentials', x.credential)).json()) as {
        credentials: { id: string; current: boolean }[];
      };
      const used = ids.credentials.find((c) => c.current)!.id;
      expect((await identityCall('DELETE', `/v1/session-credentials/${used}`, x.credential)).status).toBe(204);
      const calls = platformCallsTo(x.repo);
      // The token itself is still within its exp, but the gateway no longer acts for it, nor answers it.
      for (const path of ['/v1/repos/revoked/app', '/v1/me', '/v1/subscriptions']) {
        const refused = await callWith(gateway, x.token, 'main', path);
        expect(refused.status, path).toBe(401);
        expect(((await refused.json()) as { detail: string }).detail, path).toContain('session credential');
      }
      await gateway.parts.subscriptions.sweep();
      expect(platformCallsTo(x.repo)).toBe(calls);
      expect(gateway.parts.subscriptions.heldFingerprints()).not.toContain(x.fingerprint);
      // The connection itself stands: a token of the account's other session credential still works.
      expect((await callWith(gateway, otherToken, 'main', '/v1/repos/revoked/app')).status).toBe(200);
      expect(platformCallsTo(x.repo)).toBe(calls + 1);
    } finally {
      await done();
    }
  });

  it('a revoked session\u2019s token that arrives while another session\u2019s resolution is running gets no share of it', async () => {
    const { gateway, done } = await otherGateway({ REPOHOST_SWEEP_SECONDS: '3600' });
    try {
      const app = world.double.addInstallation('joiner', ['joiner/app']);
      world.double.addRepo('joiner/app', { private: true });
      const credential = await world.identity.addAccount('joiner');
      const put = await identityCall('PUT', '/v1/connections/main', credential, {
        kind: 'app',
        app_id: app.appId,
        installation_id: app.installationId,
        private_key: app.privateKey,
      });
      expect(put.status).toBe(200);
      const made = await identityCall('POST', '/v1/session-credentials', credential, { label: 'leaked' });
      const leaked = (await made.json()) as { id: string; credential: string };
      const revokedToken = await world.identity.mint(leaked.credential, 'repohost-api');
      expect((await identityCall('DELETE', `/v1/session-credentials/${leaked.id}`, credential)).status).toBe(204);
      const ownToken = await world.identity.mint(credential, 'repohost-api');
      // The account's own request makes the identity service mint an installation token; the double holds it.
      const hold = world.double.hold('apps/create-installation-access-token');
      const own = callWith(gateway, ownToken, 'main', '/v1/repos/joiner/app');
      try {
        // The own request's resolution reaches the platform.
        await hold.when((h) => h.waiting === 1);
        // Its answer comes while the other resolution is still held: it is asked about on its own, not joined to it.
        const refused = await callWith(gateway, revokedToken, 'main', '/v1/repos/joiner/app');
        expect(refused.status).toBe(401);
        expect(((await refused.json()) as { detail: string }).detail).toContain('current session credential');
        expect(hold.waiting).toBe(1);
      } finally {
        hold.release();
      }
      expect((await own).status).toBe(200);
    } finally {
      await done();
    }
  });

  it('after the account is removed (command line), sweeps stop using its connection', async () => {
    const { gateway, done } = await strictGateway();
    try {
      const x = await setUp(gateway, 'removed');
      const store = openIdentityStore(world.identity.dataDir, {
        tokenTtlSeconds: 600,
        keyRotationDays: 30,
        platformUrl: world.double.url,
      });
      try {
        expect(await store.accounts.remove('removed')).toEqual({ sessions: 1, connections: 1 });
      } finally {
        await store.database.close();
      }
      const calls = platformCallsTo(x.repo);
      await gateway.parts.subscriptions.sweep();
      expect(platformCallsTo(x.repo)).toBe(calls);
      expect(gateway.parts.subscriptions.heldFingerprints()).not.toContain(x.fingerprint);
      expect((await callWith(gateway, x.token, 'main', '/v1/repos/removed/app')).status).toBe(401);
      expect(platformCallsTo(x.repo)).toBe(calls);
    } finally {
      await done();
    }
  });

  it('a replaced connection: the next request acts with the new credential, the old one is dropped', async () => {
    const { gateway, done } = await strictGateway();
    try {
      const x = await setUp(gateway, 'rotated');
      // The new token belongs to another platform user who can see the repository: the double's log tells them apart.
      const next = `github_pat_${'r0tated2'}${'1'.repeat(32)}`;
      world.double.addToken(next, 'rotated-next', ['rotated/app']);
      expect(
        (await identityCall('PUT', '/v1/connections/main', x.credential, { kind: 'token', token: next })).status,
      ).toBe(200);
      expect((await callWith(gateway, x.token, 'main', '/v1/repos/rotated/app')).status).toBe(200);
      expect(world.double.calls.filter((c) => c.path === '/repos/rotated/app').at(-1)!.bucket).toBe('rotated-next');
      expect(gateway.parts.resolver.fingerprints()).not.toContain(x.fingerprint);
      expect(gateway.parts.platform.fingerprints()).not.toContain(x.fingerprint);
    } finally {
      await done();
    }
  });

  it('with a window of some time, stops within it: the next use after the window refuses, and no sweep uses it again', async () => {
    const { gateway, done } = await otherGateway({
      REPOHOST_CREDENTIAL_RECHECK_MS: '300',
      REPOHOST_SWEEP_SECONDS: '3600',
    });
    try {
      const x = await setUp(gateway, 'windowed');
      const checks = gateway.parts.resolver.checks;
      expect((await identityCall('DELETE', '/v1/connections/main', x.credential)).status).toBe(204);
      // Inside the window the gateway may still act; it asks the identity service again once the window has passed.
      const status = await waitFor(
        'the gateway to ask the identity service again',
        async () => {
          const answered = (await callWith(gateway, x.token, 'main', '/v1/repos/windowed/app')).status;
          return answered !== 200 && answered;
        },
        30_000,
      );
      expect(status).toBe(404);
      expect(gateway.parts.resolver.checks).toBeGreaterThan(checks);
      const calls = platformCallsTo(x.repo);
      await gateway.parts.subscriptions.sweep();
      expect(platformCallsTo(x.repo)).toBe(calls);
      expect(gateway.parts.subscriptions.heldFingerprints()).not.toContain(x.fingerprint);
    } finally {
      await done();
    }
  });

  it('within the window a held credential is not asked about again: one check per window, not one per call', async () => {
    const { gateway, done } = await otherGateway({ REPOHOST_CREDENTIAL_RECHECK_MS: '300000' });
    try {
      const token = await world.token();
      expect((await callWith(gateway, token, 'wa', '/v1/repos/writer-a/r')).status).toBe(200);
      const checks = gateway.parts.resolver.checks;
      for (let i = 0; i < 5; i++)
        expect((await callWith(gateway, token, 'wa', '/v1/repos/writer-a/r')).status).toBe(200);
      expect(gateway.parts.resolver.checks).toBe(checks);
    } finally {
      await done();
    }
  });
});

describe('per-credential throttling', () => {
  const write = (gateway: RunningGateway, token: string, profile: string, repo: string, title: string) =>
    callWith(gateway, token, profile, `/v1/repos/${repo}/issues`, { method: 'POST', body: { title } });
  /** Resolves both credentials first, so only the pacing orders the writes. */
  async function resolveBoth(gateway: RunningGateway, token: string) {
    for (const [profile, repo] of [
      ['wa', 'writer-a/r'],
      ['wb', 'writer-b/r'],
    ] as const) {
      expect((await callWith(gateway, token, profile, `/v1/repos/${repo}`)).status).toBe(200);
    }
  }

  it('spaces the writes of one credential', async () => {
    const { gateway, done } = await otherGateway({ REPOHOST_WRITE_SPACING_MS: '2000' });
    try {
      const token = await world.token();
      await resolveBoth(gateway, token);
      const since = world.double.calls.length;
      const answers = await Promise.all([
        write(gateway, token, 'wa', 'writer-a/r', 'a1'),
        write(gateway, token, 'wa', 'writer-a/r', 'a2'),
        write(gateway, token, 'wa', 'writer-a/r', 'a3'),
      ]);
      expect(answers.map((a) => a.status)).toEqual([201, 201, 201]);
      const a = world.double.calls
        .slice(since)
        .filter((c) => c.operationId === 'issues/create' && c.bucket === 'writer-a')
        .map((c) => c.at)
        .sort((x, y) => x - y);
      expect(a).toHaveLength(3);
      // Each starts at least 2 s after the one before; arrival times at the double may differ from the starts
      // by the time a request takes to get there, hence the lower bound of 1 s (a busy machine only adds to gaps).
      expect(a[1]! - a[0]!).toBeGreaterThanOrEqual(1000);
      expect(a[2]! - a[1]!).toBeGreaterThanOrEqual(1000);
    } finally {
      await done();
    }
  });

  it('two credentials do not share a queue: another credential\u2019s write goes out before the first one\u2019s next', async () => {
    // writer-a's second write must wait 5 s behind its first; writer-b's, sent after it, must not wait behind it.
    const { gateway, done } = await otherGateway({ REPOHOST_WRITE_SPACING_MS: '5000' });
    const hold = world.double.hold('issues/create');
    try {
      const token = await world.token();
      await resolveBoth(gateway, token);
      const since = world.double.calls.length;
      const first = write(gateway, token, 'wa', 'writer-a/r', 'a1');
      // Writer-a's first write reaches the platform, then a second write.
      await hold.when((h) => h.arrived === 1);
      const queued = write(gateway, token, 'wa', 'writer-a/r', 'a2');
      const other = write(gateway, token, 'wb', 'writer-b/r', 'b1');
      await hold.when((h) => h.arrived === 2);
      hold.release();
      expect([(await first).status, (await queued).status, (await other).status]).toEqual([201, 201, 201]);
      const order = world.double.calls
        .slice(since)
        .filter((c) => c.operationId === 'issues/create')
        .sort((x, y) => x.at - y.at)
        .map((c) => c.bucket);
      expect(order).toEqual(['writer-a', 'writer-b', 'writer-a']);
    } finally {
      hold.release();
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
      expect(body.checks).toEqual({
        identity_keys: 'ok',
        identity: 'ok',
        platform: 'ok',
        database: 'failing',
        service_token: 'ok',
      });
      expect(body.detail).toContain('database');
      expect(body.detail).toContain('REPOHOST_DATA_DIR');
    } finally {
      await done();
    }
  });
});

describe('credentials in memory', () => {
  it(
    'is re-resolved shortly before it expires, and once expired nothing of it stays in memory',
    { timeout: 120_000 },
    async () => {
      const d = world.double;
      // Installation tokens that live 70 s: usable by the gateway for only 10 of them (it stops 60 s early),
      // long enough for the few calls below to find it in use; the test then waits for the drop, not for a time.
      d.installationTokenTtlSeconds = 70;
      d.addRepo('shortco/one', { private: true });
      const app = d.addInstallation('shortco', ['shortco/one']);
      await world.connect('short', {
        kind: 'app',
        app_id: app.appId,
        installation_id: app.installationId,
        private_key: app.privateKey,
      });
      await world.restartGateway({ REPOHOST_SWEEP_SECONDS: '1' });
      const parts = () => world.gateway.parts;
      expect(parts().resolver.fingerprints()).toEqual([]);

      expect((await world.call('GET', '/v1/repos/shortco/one', { profile: 'short' })).status).toBe(200);
      const n = newPull('shortco/one', 'short-lived');
      const sub = await world.call('POST', '/v1/subscriptions', {
        profile: 'short',
        body: { kind: 'pull_merged', repo: 'shortco/one', pull: n, signal_url: hook },
      });
      expect(sub.status).toBe(201);
      const [fingerprint] = parts().resolver.fingerprints();
      expect(fingerprint).toBeDefined();
      expect(parts().platform.fingerprints()).toContain(fingerprint);
      expect(parts().subscriptions.heldFingerprints()).toContain(fingerprint);
      const resolutions = parts().resolver.resolutions;

      // No call in between: the sweep tick drops the credential, its client and ETag cache, and the hold.
      const everywhere = () => [
        ...parts().resolver.fingerprints(),
        ...parts().platform.fingerprints(),
        ...parts().subscriptions.heldFingerprints(),
      ];
      await waitFor('the expired credential to be dropped', () => !everywhere().includes(fingerprint!), 60_000);
      expect(everywhere()).not.toContain(fingerprint);

      // The next call resolves a new credential, before the platform ever refused the old one.
      expect((await world.call('GET', '/v1/repos/shortco/one', { profile: 'short' })).status).toBe(200);
      expect(parts().resolver.resolutions).toBe(resolutions + 1);
      expect(parts().resolver.fingerprints()).not.toContain(fingerprint);
      expect(parts().resolver.fingerprints()).toHaveLength(1);
      expect(d.calls.filter((c) => c.path.startsWith('/repos/shortco/') && c.status === 401)).toEqual([]);
      d.installationTokenTtlSeconds = 3600;
    },
  );

  it('keeps at most its bound of credentials, the least recently used going first', async () => {
    const resolver = new CredentialResolver(world.identity.channel, world.serviceToken, 0, undefined, 2);
    const token = await world.token();
    for (const profile of ['wa', 'wb', 'slow']) await resolver.resolve('local', profile, token);
    expect(resolver.sizes.credentials).toBe(2);
    expect(resolver.cached('local', 'wa')).toBeUndefined();
    expect(resolver.cached('local', 'slow')).toBeDefined();
  });

  it('every request the double received matched GitHub\u2019s description', () => {
    expect(world.double.violations).toEqual([]);
  });
});
