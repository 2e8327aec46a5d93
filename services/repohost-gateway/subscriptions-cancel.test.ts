import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectionCheck, startWorld, type World } from '../../test/github-double/world.ts';
import { tempDir } from '../../test/support/identity.ts';
import { waitFor } from '../../test/support/wait-for.ts';
import { openDatabase } from '../kit/sqlite.ts';
import { gatewayMigrations, SubscriptionStore, type GatewayDatabase } from './store.ts';
import { toModel } from './subscriptions.ts';

/**
 * DELETE /v1/subscriptions/{id}: a cancel ends a subscription with its one signal (state cancelled),
 * only under its own account and profile, answers an ended one as it is, and never lets a racing sweep
 * send a second signal. Signals go to a receiver of this file's own that can hold a delivery unanswered
 * (the race is driven by that event) or drop the connection.
 */

const PAT = `github_pat_${'d4'.repeat(20)}`;
let world: World;

interface Arrival {
  headers: IncomingHttpHeaders;
  body: string;
  answered: boolean;
  answer(status: number): void;
}

/** A signal receiver: answers 200, or holds each delivery until `release`, or drops the connection. */
const receiver = {
  mode: 'answer' as 'answer' | 'hold' | 'drop',
  arrivals: [] as Arrival[],
  events: new EventEmitter(),
  server: undefined as Server | undefined,
  url: '',
  of(id: string): Arrival[] {
    return this.arrivals.filter((a) => a.headers['webhook-id'] === `msg_${id}`);
  },
  /** Resolves once `count` deliveries for `id` have arrived (the event, not a time). */
  async arrived(id: string, count = 1): Promise<Arrival[]> {
    while (this.of(id).length < count) await once(this.events, 'arrival');
    return this.of(id);
  },
  /** Answers every held delivery with 200 and stops holding. */
  release(): void {
    this.mode = 'answer';
    for (const a of this.arrivals) if (!a.answered) a.answer(200);
  },
};

async function startReceiver(): Promise<void> {
  receiver.server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const arrival: Arrival = {
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        answered: false,
        answer(status) {
          arrival.answered = true;
          res.writeHead(status).end();
        },
      };
      if (receiver.mode === 'drop') {
        arrival.answered = true;
        req.socket.destroy();
      } else if (receiver.mode === 'answer') {
        arrival.answer(200);
      }
      receiver.arrivals.push(arrival);
      receiver.events.emit('arrival');
    });
  });
  await new Promise<void>((resolve) => receiver.server!.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(receiver.server!.address() as AddressInfo).port}/signals`;
}

type Sub = Record<string, unknown> & { id: string; state: string };

async function open(body: Record<string, unknown>): Promise<Sub & { secret: string }> {
  const res = await world.call('POST', '/v1/subscriptions', {
    body: { repo: 'fay/app', signal_url: receiver.url, ...body },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as Sub & { secret: string };
}

const read = async (id: string) => (await world.call('GET', `/v1/subscriptions/${id}`)).body as Sub;
const cancel = (id: string, options: { profile?: string; token?: string } = {}) =>
  world.call('DELETE', `/v1/subscriptions/${id}`, options);

function newPull(branch: string): number {
  const d = world.double;
  d.repo('fay/app').refs.set(`heads/${branch}`, d.headOf('fay/app', 'main'));
  d.pushCommit('fay/app', branch, { [`${branch}.txt`]: 'change\n' });
  return d.addPull('fay/app', { head: branch });
}

/** Delivers whatever signal is due now and waits for it: after this, nothing queued is still unsent. */
const deliverDue = () => world.gateway.parts.signals.kick();

function verify(secret: string, arrival: Arrival): { type: string; data: Record<string, unknown> } {
  return new Webhook(secret).verify(arrival.body, arrival.headers as Record<string, string>) as {
    type: string;
    data: Record<string, unknown>;
  };
}

beforeAll(async () => {
  await startReceiver();
  world = await startWorld({ REPOHOST_SWEEP_SECONDS: '3600' });
  world.double.addToken(PAT, 'fay', 'all');
  world.double.addRepo('fay/app', { private: true });
  await world.connect('work', { kind: 'token', token: PAT });
  await world.connect('side', { kind: 'token', token: PAT });
});

afterAll(async () => {
  receiver.release();
  await world?.close();
  await new Promise<void>((resolve) => (receiver.server ? receiver.server.close(() => resolve()) : resolve()));
});

describe('cancelling a subscription', () => {
  it('ends an active one as cancelled, with one signal signed with its own secret that says so', async () => {
    const n = newPull('cancel');
    const sub = await open({ kind: 'pull_merged', pull: n });
    const other = await open({ kind: 'pull_merged', pull: n });
    expect(sub).toMatchObject({ state: 'active', event: null, signal: 'none' });
    const res = await cancel(sub.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      id: sub.id,
      state: 'cancelled',
      event: 'cancelled',
      profile: 'work',
      kind: 'pull_merged',
      target: `pull/${n}`,
    });
    expect(res.body.ended_at).toEqual(expect.any(String));
    expect(['pending', 'sent']).toContain(res.body.signal);
    expect(res.body).not.toHaveProperty('secret');

    const [arrival] = await receiver.arrived(sub.id);
    const signal = verify(sub.secret, arrival!);
    expect(signal.type).toBe('subscription.ended');
    expect(signal.data).toEqual({
      subscription: sub.id,
      kind: 'pull_merged',
      event: 'cancelled',
      state: 'cancelled',
      repo: 'fay/app',
      target: `pull/${n}`,
    });
    // Signed with its own secret: another subscription's does not verify it.
    expect(() => verify(other.secret, arrival!)).toThrow();

    const delivered = await waitFor('the signal to be sent', async () => {
      const s = await read(sub.id);
      return s.signal === 'sent' && s;
    });
    expect(delivered).toMatchObject({
      state: 'cancelled',
      event: 'cancelled',
      signal_attempts: 1,
      signal_last_status: 200,
      signal_last_error: null,
      signal_next_at: null,
    });
    expect(Date.parse(delivered.signal_last_at as string)).toBeGreaterThanOrEqual(
      Date.parse(delivered.ended_at as string),
    );

    // The event it waited for happens afterwards: it stays cancelled and nothing more is sent.
    world.double.mergePullOutside('fay/app', n);
    await world.gateway.parts.subscriptions.sweep();
    expect((await read(sub.id)).state).toBe('cancelled');
    expect((await world.call('GET', '/v1/subscriptions?state=cancelled')).body.items!.map((s) => s.id)).toContain(
      sub.id,
    );
    await deliverDue();
    expect(receiver.of(sub.id)).toHaveLength(1);
    // The other subscription on the same pull request was not touched by the cancel; the merge ended it.
    expect((await read(other.id)).state).toBe('ended');
    expect(verify(other.secret, (await receiver.arrived(other.id))[0]!).data).toMatchObject({
      event: 'pull_merged',
      state: 'ended',
    });
  });

  it('answers one that is already cancelled, ended or expired as it is, and sends nothing more than its one signal (200)', async () => {
    // Cancelled already.
    const twice = await open({ kind: 'pull_merged', pull: newPull('twice') });
    expect((await cancel(twice.id)).body.state).toBe('cancelled');
    await receiver.arrived(twice.id);
    const again = await cancel(twice.id);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ state: 'cancelled', event: 'cancelled' });
    await deliverDue();
    expect(receiver.of(twice.id)).toHaveLength(1);

    // Ended by its event (here at opening, with its one signal).
    const { runId } = world.double.addWorkflowRun('fay/app', { name: 'done', head_branch: 'main', settleMs: 0 });
    const ended = await open({ kind: 'run_completed', run_id: runId });
    expect(ended.state).toBe('ended');
    await receiver.arrived(ended.id);
    const late = await cancel(ended.id);
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ state: 'ended', event: 'run_completed' });
    await deliverDue();
    expect(receiver.of(ended.id)).toHaveLength(1);
    expect(verify(ended.secret, receiver.of(ended.id)[0]!).data).toMatchObject({
      event: 'run_completed',
      state: 'ended',
    });

    // Past its lifetime, not yet marked by a sweep (sweeps are an hour apart here): the cancel finds it expired.
    const expiring = await open({ kind: 'pull_merged', pull: newPull('expiring'), expires_in_seconds: 1 });
    await waitFor('its expiry to pass', () => Date.now() > Date.parse(expiring.expires_at as string));
    const expired = await cancel(expiring.id);
    expect(expired.status).toBe(200);
    expect(expired.body).toMatchObject({ state: 'expired', event: null });
    // Its one signal is the expiry's, not a cancel's.
    expect(verify(expiring.secret, (await receiver.arrived(expiring.id))[0]!).data).toMatchObject({
      event: null,
      state: 'expired',
    });
    expect((await cancel(expiring.id)).body).toMatchObject({ state: 'expired' });
    await deliverDue();
    expect(receiver.of(expiring.id)).toHaveLength(1);
  });

  it('another account\u2019s or another profile\u2019s subscription is not found, word for word like a missing one, and stays active', async () => {
    const sub = await open({ kind: 'pull_merged', pull: newPull('isolated') });
    const missing = 'sub_AAAAAAAAAAAAAAAA';
    const notFound = await cancel(missing);
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('content-type')).toContain('application/problem+json');
    const same = (body: Record<string, unknown>) =>
      JSON.parse(JSON.stringify(body).replaceAll(sub.id, missing)) as unknown;

    const stranger = await world.identity.addAccount('stranger');
    const theirs = await cancel(sub.id, { token: await world.identity.mint(stranger, 'repohost-api') });
    expect(theirs.status).toBe(404);
    expect(same(theirs.body)).toEqual(notFound.body);

    // The same person, another of their connections: a cancel acts for the connection it was opened under.
    const sideways = await cancel(sub.id, { profile: 'side' });
    expect(sideways.status).toBe(404);
    expect(same(sideways.body)).toEqual(notFound.body);
    // A profile without any connection at all: the same.
    expect(same((await cancel(sub.id, { profile: 'nowhere' })).body)).toEqual(notFound.body);

    // A token for another audience is refused before anything else.
    expect((await cancel(sub.id, { token: await world.token('persona') })).status).toBe(401);
    // An id that cannot be a subscription's says what one looks like.
    const bad = await cancel('sub_short');
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('sub_');

    expect((await read(sub.id)).state).toBe('active');
    await deliverDue();
    expect(receiver.of(sub.id)).toHaveLength(0);
    // Its owner, under its profile, can still cancel it.
    expect((await cancel(sub.id)).body.state).toBe('cancelled');
    await receiver.arrived(sub.id);
  });
});

describe('a cancel racing a sweep sends one signal', () => {
  it('the sweep ended it first and its signal is held at the receiver: the cancel answers ended, nothing more is sent', async () => {
    const n = newPull('race-sweep-first');
    const sub = await open({ kind: 'pull_merged', pull: n });
    receiver.mode = 'hold';
    try {
      world.double.mergePullOutside('fay/app', n);
      const sweeping = world.gateway.parts.subscriptions.sweep();
      await receiver.arrived(sub.id);
      const res = await cancel(sub.id);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ state: 'ended', event: 'pull_merged', signal: 'pending' });
      // While that delivery is in flight, a read, another sweep and another cancel send nothing.
      expect((await read(sub.id)).state).toBe('ended');
      expect((await cancel(sub.id)).body.state).toBe('ended');
      receiver.release();
      await sweeping;
    } finally {
      receiver.release();
    }
    await world.gateway.parts.subscriptions.sweep();
    await deliverDue();
    const got = receiver.of(sub.id);
    expect(got).toHaveLength(1);
    expect(verify(sub.secret, got[0]!).data).toMatchObject({ event: 'pull_merged', state: 'ended' });
    expect(
      await waitFor('the signal to be sent', async () => {
        const s = await read(sub.id);
        return s.signal === 'sent' && s;
      }),
    ).toMatchObject({ state: 'ended', signal_attempts: 1 });
  });

  it('the cancel ended it first and its signal is held at the receiver: the sweep that then sees the event sends nothing', async () => {
    const n = newPull('race-cancel-first');
    const sub = await open({ kind: 'pull_merged', pull: n });
    receiver.mode = 'hold';
    try {
      expect((await cancel(sub.id)).body.state).toBe('cancelled');
      await receiver.arrived(sub.id);
      world.double.mergePullOutside('fay/app', n);
      await world.gateway.parts.subscriptions.sweep();
      expect(await read(sub.id)).toMatchObject({ state: 'cancelled', event: 'cancelled', signal: 'pending' });
      expect((await cancel(sub.id)).body.state).toBe('cancelled');
      expect(receiver.of(sub.id)).toHaveLength(1);
    } finally {
      receiver.release();
    }
    await deliverDue();
    await world.gateway.parts.subscriptions.sweep();
    const got = receiver.of(sub.id);
    expect(got).toHaveLength(1);
    expect(verify(sub.secret, got[0]!).data).toMatchObject({ event: 'cancelled', state: 'cancelled' });
  });

  it('the sweep is watching (the platform holds its answer) when the cancel lands: the sweep\u2019s end loses, one signal', async () => {
    const n = newPull('race-mid-watch');
    const sub = await open({ kind: 'pull_merged', pull: n });
    world.double.mergePullOutside('fay/app', n);
    const hold = world.double.hold('pulls/get');
    let sweeping: Promise<void> | undefined;
    try {
      sweeping = world.gateway.parts.subscriptions.sweep();
      // The sweep has read the subscription as active and asked the platform: the request is waiting at the double.
      await hold.when((h) => h.waiting >= 1);
      const res = await cancel(sub.id);
      expect(res.body).toMatchObject({ state: 'cancelled', event: 'cancelled' });
    } finally {
      hold.release();
    }
    // The platform now answers "merged"; the sweep's end finds the subscription no longer active.
    await sweeping;
    await deliverDue();
    const [arrival] = await receiver.arrived(sub.id);
    expect(verify(sub.secret, arrival!).data).toMatchObject({ event: 'cancelled', state: 'cancelled' });
    await world.gateway.parts.subscriptions.sweep();
    await deliverDue();
    expect(receiver.of(sub.id)).toHaveLength(1);
    expect(await read(sub.id)).toMatchObject({ state: 'cancelled', event: 'cancelled' });
  });
});

describe('what a subscription reports of its delivery', () => {
  it('a receiver that drops the connection: pending, no status, why in words without the address, the next attempt; then delivered', async () => {
    const { runId } = world.double.addWorkflowRun('fay/app', { name: 'dropped', head_branch: 'main', settleMs: 0 });
    receiver.mode = 'drop';
    const sub = await open({ kind: 'run_completed', run_id: runId }).finally(() => undefined);
    try {
      await receiver.arrived(sub.id);
      const failing = await waitFor('a first failed attempt', async () => {
        const s = await read(sub.id);
        return (s.signal_attempts as number) >= 1 && s;
      });
      expect(failing).toMatchObject({
        state: 'ended',
        event: 'run_completed',
        signal: 'pending',
        signal_last_status: null,
      });
      expect(failing.signal_last_error).toMatch(/^no answer from the receiver/);
      expect(failing.signal_last_error).not.toContain('127.0.0.1');
      expect(failing.signal_last_error).not.toContain('/signals');
      expect(Date.parse(failing.signal_next_at as string)).toBeGreaterThan(
        Date.parse(failing.signal_last_at as string),
      );
    } finally {
      receiver.mode = 'answer';
    }
    const delivered = await waitFor('the signal to be sent', async () => {
      const s = await read(sub.id);
      return s.signal === 'sent' && s;
    });
    expect(delivered).toMatchObject({ signal_last_status: 200, signal_last_error: null, signal_next_at: null });
    expect(delivered.signal_attempts).toBe(receiver.of(sub.id).length);
  });

  it('a database written before the delivery members gains them with its rows intact', async () => {
    const dir = tempDir('repohost-schema');
    const file = join(dir, 'repohost-gateway.db');
    try {
      const old = openDatabase<GatewayDatabase>(file, gatewayMigrations.slice(0, 1));
      old.sqlite
        .prepare(
          `INSERT INTO subscriptions (id, account, profile, kind, repo, target, signal_url, secret, state, event, created_at, expires_at, ended_at, signal_state, signal_attempts, signal_next_at)
           VALUES ('sub_OLDOLDOLDOLDOLD1', 'acct', 'work', 'pull_merged', 'fay/app', 'pull/1', 'http://127.0.0.1:9/h', 'whsec_x', 'ended', 'pull_merged', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z', '2026-01-01T01:00:00.000Z', 'sent', 1, NULL)`,
        )
        .run();
      await old.close();
      const upgraded = openDatabase<GatewayDatabase>(file, gatewayMigrations);
      try {
        const row = await new SubscriptionStore(upgraded.db).get('sub_OLDOLDOLDOLDOLD1');
        expect(toModel(row!)).toMatchObject({
          state: 'ended',
          event: 'pull_merged',
          signal: 'sent',
          signal_attempts: 1,
          signal_last_status: null,
          signal_last_error: null,
          signal_last_at: null,
          signal_next_at: null,
        });
      } finally {
        await upgraded.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no answer carries a member outside its schema, the cancel\u2019s included, and the platform saw only valid requests', async () => {
    const { checked, undocumented, outside } = await projectionCheck(world);
    expect(undocumented).toEqual([]);
    expect(outside).toEqual([]);
    expect(checked['DELETE /v1/subscriptions/{id}']).toBeGreaterThan(5);
    expect(world.double.violations).toEqual([]);
  });

  it('the OpenAPI document describes the cancel and every member the console reads', async () => {
    const doc = (await (await fetch(`${world.gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: {
        schemas: Record<string, { properties: Record<string, { description?: string; enum?: string[] }> }>;
      };
    };
    expect(Object.keys(doc.paths['/v1/subscriptions/{id}']!.delete!.responses)).toEqual(
      expect.arrayContaining(['200', '404']),
    );
    const props = doc.components.schemas.Subscription!.properties;
    for (const m of [
      'event',
      'signal_next_at',
      'signal_last_status',
      'signal_last_error',
      'signal_last_at',
      'signal_attempts',
      'profile',
    ]) {
      expect(props[m]?.description, m).toBeTruthy();
    }
    expect(JSON.stringify(props.state)).toContain('cancelled');
  });
});
