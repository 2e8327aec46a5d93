import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectionCheck, startWorld, type World } from '../../test/github-double/world.ts';
import { waitFor } from '../../test/support/wait-for.ts';

const PAT = `github_pat_${'c3'.repeat(20)}`;
let world: World;
let hook: string;

const signalsFor = (id: string) => world.receiver.received.filter((r) => r.headers['webhook-id'] === `msg_${id}`);

function verified(secret: string, id: string): { type: string; data: Record<string, unknown> } {
  const got = signalsFor(id);
  expect(got).toHaveLength(1);
  const { headers, body } = got[0]!;
  return new Webhook(secret).verify(body, headers as Record<string, string>) as {
    type: string;
    data: Record<string, unknown>;
  };
}

async function open(body: Record<string, unknown>) {
  const res = await world.call('POST', '/v1/subscriptions', { body: { repo: 'dana/app', signal_url: hook, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; secret: string; state: string; expires_at: string; created_at: string };
}

const read = async (id: string) => (await world.call('GET', `/v1/subscriptions/${id}`)).body;

beforeAll(async () => {
  world = await startWorld({ REPOHOST_SWEEP_SECONDS: '3600' });
  world.double.addToken(PAT, 'dana', 'all');
  world.double.addRepo('dana/app', { private: true });
  await world.connect('work', { kind: 'token', token: PAT });
  hook = `${world.receiver.url}/hook`;
});

afterAll(async () => {
  await world?.close();
});

function newPull(branch: string): number {
  const d = world.double;
  d.repo('dana/app').refs.set(`heads/${branch}`, d.headOf('dana/app', 'main'));
  d.pushCommit('dana/app', branch, { [`${branch}.txt`]: 'change\n' });
  return d.addPull('dana/app', { head: branch });
}

describe('subscriptions end with exactly one signed signal', () => {
  it('checks settling on a pull request: active while checks run, then one signal verified with standardwebhooks', async () => {
    const n = newPull('checks');
    world.double.addCheckRun('dana/app', world.double.headOf('dana/app', 'checks'), {
      name: 'build',
      settleMs: 3_600_000,
      conclusion: 'failure',
    });
    const sub = await open({ kind: 'checks_settled', pull: n });
    expect(sub.state).toBe('active');
    expect(sub.secret).toMatch(/^whsec_/);
    // Nothing has ended it and nothing was sent: the delivery members say so.
    expect(sub).toMatchObject({
      profile: 'work',
      event: null,
      signal: 'none',
      signal_attempts: 0,
      signal_last_status: null,
      signal_last_error: null,
      signal_last_at: null,
      signal_next_at: null,
    });
    const head = world.double.headOf('dana/app', 'checks');
    world.double.addStatus('dana/app', head, { context: 'external-ci', state: 'pending' });
    await world.gateway.parts.subscriptions.sweep();
    expect((await read(sub.id)).state).toBe('active');
    world.double.settle('dana/app');
    // The check runs settle, but a commit status is still pending: not settled yet.
    await world.gateway.parts.subscriptions.sweep();
    expect((await read(sub.id)).state).toBe('active');
    world.double.addStatus('dana/app', head, { context: 'external-ci', state: 'success' });
    await waitFor('checks to settle', async () => {
      await world.gateway.parts.subscriptions.sweep();
      return (await read(sub.id)).state === 'ended';
    });
    const signal = verified(sub.secret, sub.id);
    expect(signal.type).toBe('subscription.ended');
    expect(signal.data).toEqual({
      subscription: sub.id,
      kind: 'checks_settled',
      event: 'checks_settled',
      state: 'ended',
      repo: 'dana/app',
      target: `pull/${n}`,
    });
    expect(JSON.stringify(signal)).not.toContain('failure');
    await world.gateway.parts.subscriptions.sweep();
    await read(sub.id);
    expect(signalsFor(sub.id)).toHaveLength(1);
    const ended = await read(sub.id);
    expect(ended).toMatchObject({
      state: 'ended',
      event: 'checks_settled',
      signal: 'sent',
      signal_attempts: 1,
      signal_last_status: 200,
      signal_last_error: null,
      signal_next_at: null,
    });
    expect(Date.parse(ended.signal_last_at as string)).toBeGreaterThanOrEqual(Date.parse(ended.ended_at as string));
    // The secret is shown once, at opening.
    expect(await read(sub.id)).not.toHaveProperty('secret');
    expect((await world.call('GET', '/v1/subscriptions')).text).not.toContain(sub.secret);
  });

  it('a pull request merging: the read after the merge ends it', async () => {
    const n = newPull('merge');
    const sub = await open({ kind: 'pull_merged', pull: n });
    expect((await read(sub.id)).state).toBe('active');
    world.double.mergePullOutside('dana/app', n);
    expect((await read(sub.id)).state).toBe('ended');
    expect(verified(sub.secret, sub.id).data.event).toBe('pull_merged');
  });

  it('a review landing: earlier reviews do not count; the hub\u2019s list drives it', async () => {
    const n = newPull('review');
    world.double.addReview('dana/app', n, { user: 'erin', state: 'COMMENTED' });
    const sub = await open({ kind: 'review_landed', pull: n });
    expect(sub.state).toBe('active');
    await world.call('GET', '/v1/subscriptions');
    expect((await read(sub.id)).state).toBe('active');
    world.double.addReview('dana/app', n, { user: 'erin', state: 'APPROVED' });
    const list = await world.call('GET', '/v1/subscriptions?state=ended');
    expect(list.body.items!.map((s) => s.id)).toContain(sub.id);
    expect(verified(sub.secret, sub.id).data.event).toBe('review_landed');
  });

  it('a run completing, across a restart of the gateway: the caller\u2019s read finishes the job', async () => {
    const { runId } = world.double.addWorkflowRun('dana/app', { name: 'ci', head_branch: 'main', settleMs: 3_600_000 });
    const sub = await open({ kind: 'run_completed', run_id: runId });
    await world.restartGateway({ REPOHOST_SWEEP_SECONDS: '3600' });
    world.double.settle('dana/app');
    // No credential survives the restart, so a sweep alone cannot watch it.
    await world.gateway.parts.subscriptions.sweep();
    expect(signalsFor(sub.id)).toHaveLength(0);
    expect((await read(sub.id)).state).toBe('ended');
    expect(verified(sub.secret, sub.id).data).toMatchObject({
      kind: 'run_completed',
      event: 'run_completed',
      target: `run/${runId}`,
    });
  });

  it('every kind finishes after a restart, driven by the caller\u2019s list, with one signal each', async () => {
    const d = world.double;
    const merge = newPull('r-merge');
    const review = newPull('r-review');
    const checks = newPull('r-checks');
    d.addCheckRun('dana/app', d.headOf('dana/app', 'r-checks'), { name: 'ci', settleMs: 3_600_000 });
    const { runId } = d.addWorkflowRun('dana/app', { name: 'r-run', head_branch: 'main', settleMs: 3_600_000 });
    const subs = [
      await open({ kind: 'pull_merged', pull: merge }),
      await open({ kind: 'review_landed', pull: review }),
      await open({ kind: 'checks_settled', pull: checks }),
      await open({ kind: 'run_completed', run_id: runId }),
    ];
    expect(subs.map((x) => x.state)).toEqual(['active', 'active', 'active', 'active']);
    await world.restartGateway({ REPOHOST_SWEEP_SECONDS: '3600' });
    d.mergePullOutside('dana/app', merge);
    d.addReview('dana/app', review, { user: 'erin', state: 'APPROVED' });
    d.settle('dana/app');
    await world.gateway.parts.subscriptions.sweep();
    for (const x of subs) expect(signalsFor(x.id)).toHaveLength(0);
    await world.call('GET', '/v1/subscriptions');
    for (const x of subs) {
      expect((await read(x.id)).state).toBe('ended');
      verified(x.secret, x.id);
    }
    await world.call('GET', '/v1/subscriptions');
    for (const x of subs) expect(signalsFor(x.id)).toHaveLength(1);
  });

  it('an event that already happened ends the subscription at opening, with one signal', async () => {
    const { runId } = world.double.addWorkflowRun('dana/app', { name: 'done', head_branch: 'main', settleMs: 0 });
    const sub = await open({ kind: 'run_completed', run_id: runId });
    expect(sub.state).toBe('ended');
    verified(sub.secret, sub.id);
  });

  it('a receiver answering 429 with Retry-After is not called again before it said', async () => {
    world.receiver.status = 429;
    world.receiver.headers = { 'retry-after': '2' };
    const { runId } = world.double.addWorkflowRun('dana/app', { name: 'busy', head_branch: 'main', settleMs: 0 });
    try {
      const sub = await open({ kind: 'run_completed', run_id: runId });
      expect(signalsFor(sub.id)).toHaveLength(1);
      // The first attempt is recorded with when the next is due: not before the receiver asked.
      const waiting = await read(sub.id);
      expect(waiting).toMatchObject({
        signal: 'pending',
        signal_last_status: 429,
        signal_last_error: 'the receiver asked to be called again later (Retry-After)',
      });
      expect(
        Date.parse(waiting.signal_next_at as string) - Date.parse(waiting.signal_last_at as string),
      ).toBeGreaterThanOrEqual(2000);
      world.receiver.status = 200;
      world.receiver.headers = {};
      await waitFor('the retried signal', async () => (await read(sub.id)).signal === 'sent');
      const [first, second] = signalsFor(sub.id);
      expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      // The retry base is 50 ms here; the receiver asked for 2 s, and was not called before (less a little for clocks).
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(1900);
    } finally {
      world.receiver.status = 200;
      world.receiver.headers = {};
    }
  });

  it('a failed delivery is retried with the same webhook-id until it succeeds, and is never sent again after', async () => {
    world.receiver.status = 500;
    const { runId } = world.double.addWorkflowRun('dana/app', { name: 'retry', head_branch: 'main', settleMs: 0 });
    const sub = await open({ kind: 'run_completed', run_id: runId });
    // The first attempt went out at once. With a retry base of 50 ms, retries may have arrived too by the
    // time this line runs (the receiver is in this process: a busy machine can hold it past 50 ms); every
    // one of them is checked below against the attempts the gateway counted.
    expect(signalsFor(sub.id).length).toBeGreaterThanOrEqual(1);
    const refused = await read(sub.id);
    // The retry base is 50 ms here, so more attempts may have been refused by the time of this read.
    expect(refused).toMatchObject({
      signal: 'pending',
      signal_last_status: 500,
      signal_last_error: 'the receiver did not accept it',
    });
    expect(refused.signal_next_at).toEqual(expect.any(String));
    world.receiver.status = 200;
    await waitFor('the retried signal', async () => (await read(sub.id)).signal === 'sent');
    expect(await read(sub.id)).toMatchObject({
      signal_last_status: 200,
      signal_last_error: null,
      signal_next_at: null,
    });
    const got = signalsFor(sub.id);
    expect(got.length).toBeGreaterThanOrEqual(2);
    expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    expect(
      new Webhook(sub.secret).verify(got.at(-1)!.body, got.at(-1)!.headers as Record<string, string>),
    ).toBeTruthy();
    expect((await read(sub.id)).signal_attempts).toBe(got.length);
    await world.gateway.parts.subscriptions.sweep();
    await world.gateway.parts.signals.kick();
    expect(signalsFor(sub.id)).toHaveLength(got.length);
  });
});

describe('subscription limits', () => {
  it('expires on its own and ends with one signal saying so; the event afterwards sends nothing more', async () => {
    const n = newPull('expiry');
    const sub = await open({ kind: 'pull_merged', pull: n, expires_in_seconds: 1 });
    expect(Date.parse(sub.expires_at) - Date.parse(sub.created_at)).toBe(1000);
    // Its moment is the event here: once the clock has passed it, the next sweep marks it expired.
    await waitFor('its expiry to pass', () => Date.now() > Date.parse(sub.expires_at));
    await world.gateway.parts.subscriptions.sweep();
    expect(await read(sub.id)).toMatchObject({ state: 'expired', event: null });
    // A hub waiting for it learns that it will not come, as for a cancel.
    const ended = await waitFor('the expiry signal to be delivered', async () => {
      const s = await read(sub.id);
      return s.signal === 'sent' && s;
    });
    expect(ended).toMatchObject({ signal_attempts: 1, signal_last_status: 200, signal_next_at: null });
    expect(verified(sub.secret, sub.id)).toEqual({
      type: 'subscription.ended',
      timestamp: expect.any(String),
      data: {
        subscription: sub.id,
        kind: 'pull_merged',
        event: null,
        state: 'expired',
        repo: 'dana/app',
        target: `pull/${n}`,
      },
    });
    world.double.mergePullOutside('dana/app', n);
    await read(sub.id);
    await world.gateway.parts.subscriptions.sweep();
    await world.gateway.parts.signals.kick();
    expect(signalsFor(sub.id)).toHaveLength(1);
  });

  it('lives at most one week', async () => {
    const res = await world.call('POST', '/v1/subscriptions', {
      body: { kind: 'pull_merged', repo: 'dana/app', pull: 1, signal_url: hook, expires_in_seconds: 604_801 },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('one week');
    const week = await open({ kind: 'pull_merged', pull: newPull('week'), expires_in_seconds: 604_800 });
    expect(Date.parse(week.expires_at) - Date.parse(week.created_at)).toBe(604_800_000);
  });

  it('a signal address outside the allowed prefixes is refused at opening, naming the variable', async () => {
    for (const url of ['https://example.com/hook', 'http://127.0.0.1.evil.test/hook', 'http://localhostile/hook']) {
      const res = await world.call('POST', '/v1/subscriptions', {
        body: { kind: 'pull_merged', repo: 'dana/app', pull: 1, signal_url: url },
      });
      expect(res.status, url).toBe(422);
      expect(res.body.detail).toContain('REPOHOST_SIGNAL_URL_PREFIXES');
    }
  });

  it('a signal address with user information, or on this app’s own service ports (the gateway’s own included), is refused at opening', async () => {
    const own = new URL(world.gateway.url).port;
    const cases: [string, string][] = [
      ['http://127.0.0.1:@evil.example/hook', 'user information'],
      [`http://127.0.0.1:${new URL(world.receiver.url).port}@evil.example/hook`, 'user information'],
      ['http://127.0.0.1:8001/v1/connections/work', 'REPOHOST_SIGNAL_REFUSED_PORTS'],
      ['http://0x7f.1:8127/v1/chat/completions', 'REPOHOST_SIGNAL_REFUSED_PORTS'],
      [`http://localhost:${own}/v1/subscriptions`, 'REPOHOST_SIGNAL_REFUSED_PORTS'],
      [`${hook}#fragment`, 'fragment'],
    ];
    const before = world.double.calls.length;
    for (const [url, why] of cases) {
      const res = await world.call('POST', '/v1/subscriptions', {
        body: { kind: 'pull_merged', repo: 'dana/app', pull: 1, signal_url: url },
      });
      expect(res.status, url).toBe(422);
      expect(res.body.detail, url).toContain(why);
    }
    expect(world.double.calls.length).toBe(before);
  });

  it('delivery checks the address again: a signal whose address the settings no longer allow is given up, never sent', async () => {
    const n = newPull('narrowed');
    const sub = await open({ kind: 'pull_merged', pull: n });
    // The installation narrows where signals may go while the subscription is open.
    await world.restartGateway({ REPOHOST_SIGNAL_URL_PREFIXES: 'https://hooks.example.com/hub' });
    try {
      world.double.mergePullOutside('dana/app', n);
      expect((await read(sub.id)).state).toBe('ended');
      const given = await waitFor('the signal to be settled', async () => {
        const s = await read(sub.id);
        return s.signal !== 'pending' && s;
      });
      expect(given).toMatchObject({
        signal: 'failed',
        signal_attempts: 0,
        signal_last_status: null,
        signal_next_at: null,
      });
      // It says why, without the address.
      expect(given.signal_last_error).toContain('no longer allowed');
      expect(given.signal_last_error).not.toContain('127.0.0.1');
      expect(signalsFor(sub.id)).toHaveLength(0);
      expect(world.logs.some((l) => l.includes(sub.id) && l.includes('no longer allowed'))).toBe(true);
    } finally {
      await world.restartGateway();
    }
  });

  it('a subscription on a repository the connection cannot see is refused with 404, like a missing one', async () => {
    world.double.addRepo('zed/private', { private: true });
    const hidden = await world.call('POST', '/v1/subscriptions', {
      body: { kind: 'pull_merged', repo: 'zed/private', pull: 1, signal_url: hook },
    });
    const missing = await world.call('POST', '/v1/subscriptions', {
      body: { kind: 'pull_merged', repo: 'zed/nothing', pull: 1, signal_url: hook },
    });
    expect(hidden.status).toBe(404);
    expect(JSON.parse(JSON.stringify(hidden.body).replaceAll('zed/private', 'zed/nothing'))).toEqual(missing.body);
  });

  it('another account\u2019s subscription answers 404', async () => {
    const sub = await open({ kind: 'pull_merged', pull: newPull('mine') });
    const other = await world.identity.addAccount('other');
    const token = await world.identity.mint(other, 'repohost-api');
    const res = await world.call('GET', `/v1/subscriptions/${sub.id}`, { token });
    expect(res.status).toBe(404);
    expect((await world.call('GET', '/v1/subscriptions', { token })).body.total).toBe(0);
  });

  it('idle sweeps revalidate with ETags and cost no primary quota', async () => {
    const n = newPull('idle');
    world.double.addCheckRun('dana/app', world.double.headOf('dana/app', 'idle'), {
      name: 'slow',
      settleMs: 3_600_000,
    });
    await open({ kind: 'checks_settled', pull: n });
    await world.gateway.parts.subscriptions.sweep();
    const quota = world.double.quotaUsed('dana');
    const calls = world.double.calls.length;
    for (let i = 0; i < 5; i++) await world.gateway.parts.subscriptions.sweep();
    expect(world.double.calls.length).toBeGreaterThan(calls);
    expect(world.double.quotaUsed('dana')).toBe(quota);
  });

  it('the background sweep alone ends a subscription while the caller\u2019s credential is held', async () => {
    await world.restartGateway({ REPOHOST_SWEEP_SECONDS: '1' });
    const n = newPull('background');
    const sub = await open({ kind: 'pull_merged', pull: n });
    world.double.mergePullOutside('dana/app', n);
    // The background sweep ends it: its signal arriving is the event.
    await world.receiver.when(() => signalsFor(sub.id).length === 1);
    expect(verified(sub.secret, sub.id).data.event).toBe('pull_merged');
  });

  it('stores no credential: the database holds neither the token nor any installation token', () => {
    const db = readdirSync(world.dataDir)
      .map((f) => readFileSync(join(world.dataDir, f)).toString('latin1'))
      .join('\n');
    expect(db).toContain('sub_');
    expect(db).not.toContain(PAT);
    expect(db).not.toContain('ghs_');
    expect(world.logs.join('\n')).not.toContain(PAT);
  });

  it('no answer carries a member outside its schema, subscriptions included', async () => {
    const { checked, undocumented, outside } = await projectionCheck(world);
    expect(undocumented).toEqual([]);
    expect(outside).toEqual([]);
    expect(checked['POST /v1/subscriptions']).toBeGreaterThan(5);
    expect(checked['GET /v1/subscriptions/{id}']).toBeGreaterThan(5);
    expect(checked['GET /v1/subscriptions']).toBeGreaterThan(2);
  });

  it('every request the double received matched GitHub\u2019s description', () => {
    expect(world.double.violations).toEqual([]);
  });
});
