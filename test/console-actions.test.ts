/**
 * The console's overview, activity history, hub connection and persona actions through the console API,
 * against the real services under the real supervisor (the persona store's page size lowered to 3, so
 * the export pages). Every action goes through the persona store's own API and lands in its change log.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ActivityView } from '../common/activity.ts';
import type { ConsoleApi, ForgetPolicy, OverviewView } from '../common/contract.ts';
import type { HubView, NewHubCredential, WholeExport } from '../main/console/answers.ts';
import { createConsoleApi } from '../main/console/api.ts';
import {
  SETTLE_MS,
  SIGNAL_PREFIX,
  recordingCalls,
  seedConsoleData,
  startConsoleStack,
  type ConsoleStack,
  type Seeded,
} from './support/console-stack.ts';
import { startSignalReceiver, type SignalReceiver } from './support/signal-receiver.ts';

vi.setConfig({ testTimeout: 120_000, hookTimeout: SETTLE_MS + 60_000 });

let stack: ConsoleStack;
let receiver: SignalReceiver;
let seeded: Seeded;
let api: ConsoleApi;
let credential: string;

const { answers, data, failure } = recordingCalls(() => api);

async function http(
  url: string,
  init: { method?: string; authorization?: string; body?: unknown } = {},
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.authorization ? { authorization: init.authorization } : {}),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const persona = () => stack.supervisor.url('persona-store');
const identity = () => stack.supervisor.url('identity');

/** Every change-log entry of a persona, paging as the console does. */
async function allEvents(profile: string): Promise<{ action: string; target: string }[]> {
  const all: { action: string; target: string }[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await data<{ events: { action: string; target: string }[]; next_after: number | null }>(
      'personas.events',
      { profile, ...(after === undefined ? {} : { after }) },
    );
    all.push(...page.events);
    if (page.next_after === null || page.next_after === undefined) return all;
    after = page.next_after;
  }
}

beforeAll(async () => {
  // The hub's signal endpoint, beside the seeded address where nothing listens.
  receiver = await startSignalReceiver();
  stack = await startConsoleStack({
    PERSONA_PAGE_SIZE: '3',
    REPOHOST_SIGNAL_URL_PREFIXES: `${SIGNAL_PREFIX},${receiver.prefix}`,
  });
  expect(
    stack.settled.map((s) => s.state),
    JSON.stringify(stack.settled),
  ).toEqual(['ready', 'ready', 'ready', 'ready']);
  credential = await stack.supervisor.localCredential();
  seeded = await seedConsoleData({
    identityUrl: identity(),
    personaUrl: persona(),
    gatewayUrl: stack.supervisor.url('repohost-gateway'),
    credential,
    platform: stack.platform,
  });
  api = createConsoleApi({ supervisor: stack.supervisor, env: stack.env });
});

afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

describe('the overview', () => {
  it('shows each service ready, the counts, and nothing needing attention', async () => {
    const view = await data<OverviewView>('overview.get');
    expect(view.services.map((s) => [s.name, s.state, s.advice])).toEqual([
      ['identity', 'ready', ''],
      ['persona-store', 'ready', ''],
      ['repohost-gateway', 'ready', ''],
      ['model-provider', 'ready', ''],
    ]);
    expect(view.counts).toEqual({
      personas: { value: 1 },
      fields: { value: 3 },
      notes: { value: 2 },
      openSubscriptions: { value: 1 },
      connections: { value: 1 },
      hubCredentials: { value: 0 },
    });
    expect(view.attention).toEqual([]);
  });

  it('counts a hub\u2019s requests and refusals per minute from the services\u2019 /metrics, the app\u2019s own apart', async () => {
    const before = await data<ActivityView>('overview.activity');
    for (const name of ['identity', 'persona-store', 'repohost-gateway'] as const)
      expect(before.services[name]!.reading.ok, name).toBe(true);
    type Counted = 'requests' | 'refused' | 'errors' | 'appRequests' | 'appRefused' | 'appErrors';
    const total = (view: ActivityView, member: Counted, service = 'persona-store') =>
      view.services[service]!.minutes.reduce((sum, m) => sum + m[member], 0);
    expect(before.services['persona-store']!.minutes).toHaveLength(60);
    expect(before.services['persona-store']!.hours).toHaveLength(24);
    // A hub: its own credential, made on the console; its token minted at identity's port; three answered
    // requests straight to the store. One refused (no token): nothing proves who sent it, so it is not the
    // app's. Probes are not charted.
    const hub = await data<NewHubCredential>('hub.createCredential', { label: 'activity', expiresInDays: 1 });
    const minted = await http(`${identity()}/v1/auth/service-token`, {
      method: 'POST',
      authorization: `Bearer ${hub.credential}`,
      body: { audience: 'persona' },
    });
    expect(minted.status).toBe(200);
    const token = (minted.body as { token: string }).token;
    for (let i = 0; i < 3; i++)
      expect((await http(`${persona()}/v1/personas`, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect((await http(`${persona()}/v1/personas`)).status).toBe(401);
    expect((await http(`${persona()}/healthy`)).status).toBe(200);
    // The app's own: the console reads the personas with the person's own credential, one call.
    await data('personas.list');
    const after = await data<ActivityView>('overview.activity');
    expect(total(after, 'requests') - total(before, 'requests')).toBe(4);
    expect(total(after, 'refused') - total(before, 'refused')).toBe(1);
    expect(total(after, 'errors') - total(before, 'errors')).toBe(0);
    expect(total(after, 'appRequests') - total(before, 'appRequests')).toBe(1);
    // At identity, the hub's one mint; the console's calls (the credential, its own tokens) and the
    // persona store's revocation checks are the app's.
    expect(total(after, 'requests', 'identity') - total(before, 'requests', 'identity')).toBe(1);
    expect(total(after, 'appRequests', 'identity') - total(before, 'appRequests', 'identity')).toBeGreaterThan(0);
    expect(after.services['persona-store']!.counters).toContain('http_requests_total');
    await data('hub.revokeCredential', { id: hub.id });
  });

  it('counts the provider\u2019s CLI runs and tokens per hour, and its requests per minute', async () => {
    const before = await data<ActivityView>('overview.activity');
    const provider = (view: ActivityView) => view.services['model-provider']!;
    expect(provider(before).reading.ok).toBe(true);
    const hour = (view: ActivityView, counter: string) => provider(view).hours.at(-1)!.counts[counter] ?? 0;
    const answer = await http(`${stack.supervisor.url('model-provider')}/v1/chat/completions`, {
      method: 'POST',
      body: { model: 'sonnet', messages: [{ role: 'user', content: 'Say hello.' }] },
    });
    expect(answer.status).toBe(200);
    const usage = (answer.body as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    // The console's provider page reads its models on the provider's socket: the app's own, not a hub's.
    await data('provider.status');
    const after = await data<ActivityView>('overview.activity');
    expect(hour(after, 'modelprov_cli_runs_total:ok') - hour(before, 'modelprov_cli_runs_total:ok')).toBe(1);
    expect(hour(after, 'modelprov_tokens_total') - hour(before, 'modelprov_tokens_total')).toBe(
      usage.prompt_tokens + usage.completion_tokens,
    );
    expect(provider(after).counters).toEqual(
      expect.arrayContaining(['modelprov_cli_runs_total', 'modelprov_tokens_total', 'http_requests_total']),
    );
    const count = (view: ActivityView, member: 'requests' | 'appRequests') =>
      provider(view).minutes.reduce((sum, m) => sum + m[member], 0);
    expect(count(after, 'requests') - count(before, 'requests')).toBe(1);
    expect(count(after, 'appRequests') - count(before, 'appRequests')).toBe(1);
  });
});

describe('connecting a hub', () => {
  it('names each service\u2019s base URL, audience and environment lines', async () => {
    const hub = await data<HubView>('hub.get');
    const byName = Object.fromEntries(hub.services.map((s) => [s.name, s]));
    expect(byName['persona-store']!.baseUrl).toBe(persona());
    expect(byName['persona-store']!.env).toEqual([
      ['HUB_PERSONA_BASE_URL', persona()],
      ['HUB_PERSONA_AUDIENCE', 'persona'],
    ]);
    expect(byName['repohost-gateway']!.env).toContainEqual(['HUB_REPOHOST_PROFILE', seeded.connectionProfile]);
    expect(byName['model-provider']!.baseUrl).toBe(`${stack.supervisor.url('model-provider')}/v1`);
    expect(byName.identity!.env[0]).toEqual(['HUB_IDENTITY_URL', identity()]);
    // The app's own credential is listed, marked as such.
    expect(hub.credentials.filter((c) => c.current)).toHaveLength(1);
  });

  it('makes a hub credential that mints tokens the persona store takes, and revokes it', async () => {
    const made = await data<NewHubCredential>('hub.createCredential', { label: 'hub', expiresInDays: null });
    expect(made.label).toBe('hub');
    expect(made.credential.length).toBeGreaterThan(20);
    const minted = await http(`${identity()}/v1/auth/service-token`, {
      method: 'POST',
      authorization: `Bearer ${made.credential}`,
      body: { audience: 'persona' },
    });
    expect(minted.status).toBe(200);
    const list = await http(`${persona()}/v1/personas`, {
      authorization: `Bearer ${(minted.body as { token: string }).token}`,
    });
    expect(list.status).toBe(200);
    expect((list.body as { personas: { profile: string }[] }).personas.map((p) => p.profile)).toContain(seeded.profile);
    // Listed afterwards without its secret; counted on the overview.
    const hub = await data<HubView>('hub.get');
    expect(hub.credentials.find((c) => c.id === made.id)).toMatchObject({
      label: 'hub',
      current: false,
      purpose: 'hub',
      audiences: ['persona', 'repohost-api'],
      may: 'Mints tokens for persona, repohost-api; nothing else.',
    });
    expect(hub.credentials.find((c) => c.current)).toMatchObject({
      purpose: 'owner',
      audiences: null,
      may: expect.stringMatching(/^This app\u2019s own/),
    });
    // It mints tokens and nothing else: it cannot touch the app's other credentials or the platform connections.
    expect(
      (
        await http(`${identity()}/v1/session-credentials?keep_current=true`, {
          method: 'DELETE',
          authorization: `Bearer ${made.credential}`,
        })
      ).status,
    ).toBe(403);
    expect((await http(`${identity()}/v1/connections`, { authorization: `Bearer ${made.credential}` })).status).toBe(
      403,
    );
    expect((await data<HubView>('hub.get')).credentialsError).toBeUndefined();
    expect(JSON.stringify(hub)).not.toContain(made.credential);
    expect((await data<OverviewView>('overview.get')).counts.hubCredentials).toEqual({ value: 1 });

    expect(await data('hub.revokeCredential', { id: made.id })).toEqual({ revoked: made.id });
    const refused = await http(`${identity()}/v1/auth/service-token`, {
      method: 'POST',
      authorization: `Bearer ${made.credential}`,
      body: { audience: 'persona' },
    });
    expect(refused.status).toBe(401);
  });

  it('will not revoke the app\u2019s own credential', async () => {
    const own = (await data<HubView>('hub.get')).credentials.find((c) => c.current)!;
    const error = await failure('hub.revokeCredential', { id: own.id });
    expect(error.status).toBe(409);
    expect(error.message).toMatch(/this app\u2019s own credential/);
  });
});

describe('acting on a persona', () => {
  it('says which forget mode applies before anything is forgotten', async () => {
    // The store reports the person's policy in the identity block (its `forget` member), so it is the one that decides.
    expect(await data<ForgetPolicy>('personas.forgetPolicy', { profile: seeded.profile })).toEqual({
      mode: 'keep',
      gracePeriodSeconds: 604_800,
      decidedBy: 'persona-store',
    });
  });

  it('pins and unpins a field and a note, keeping the writer\u2019s claim', async () => {
    const pinned = await data<{ key: string; pinned: boolean; source: string; value: unknown }>('personas.pinField', {
      profile: seeded.profile,
      key: 'kids_names',
      pinned: true,
    });
    expect(pinned).toMatchObject({ key: 'kids_names', pinned: true, source: 'assistant', value: ['Ada', 'Linus'] });
    const notes = await data<{ notes: { id: string }[] }>('personas.notes', { profile: seeded.profile });
    const note = await data<{ pinned: boolean }>('personas.pinNote', {
      profile: seeded.profile,
      id: notes.notes[0]!.id,
      pinned: true,
    });
    expect(note.pinned).toBe(true);
    expect(
      (
        await data<{ pinned: boolean }>('personas.pinNote', {
          profile: seeded.profile,
          id: notes.notes[0]!.id,
          pinned: false,
        })
      ).pinned,
    ).toBe(false);
    const log = await allEvents(seeded.profile);
    expect(log.map((e) => e.action)).toEqual(expect.arrayContaining(['field_pinned', 'note_pinned', 'note_unpinned']));
  });

  it('edits the card, and a refused edit says why', async () => {
    const card = await data<{ tone: string; pronouns: string | null }>('personas.update', {
      profile: seeded.profile,
      card: { tone: 'calm', pronouns: 'she/her' },
    });
    expect(card).toMatchObject({ tone: 'calm', pronouns: 'she/her' });
    expect(
      (await data<{ pronouns: string | null }>('personas.update', { profile: seeded.profile, card: { pronouns: '' } }))
        .pronouns,
    ).toBeNull();
    const bad = await failure('personas.update', {
      profile: seeded.profile,
      card: { language: 'not a language tag!' },
    });
    expect(bad.message).toMatch(/^The persona store refused it: .*BCP 47/);
    expect((await allEvents(seeded.profile)).filter((e) => e.action === 'persona_updated')).toHaveLength(2);
  });

  it('exports the whole persona in the store\u2019s format, every page joined', async () => {
    const doc = await data<WholeExport>('personas.export', { profile: seeded.profile });
    expect(doc.format).toBe('persona-export/1');
    expect(doc.persona).toMatchObject({ profile: seeded.profile });
    expect(doc.fields.map((f) => f.key).sort()).toEqual([...seeded.fieldKeys].sort());
    expect(doc.notes.map((n) => n.content)).toEqual(seeded.noteContents);
    expect([doc.fields_next_after, doc.notes_next_after]).toEqual([null, null]);
  });

  it('forgets a field and a note with the outcome the store answers, logged', async () => {
    expect(
      await data('personas.forgetField', { profile: seeded.profile, key: 'ignore_previous_instructions' }),
    ).toEqual({ outcome: 'kept' });
    const notes = await data<{ notes: { id: string }[] }>('personas.notes', { profile: seeded.profile });
    expect(await data('personas.forgetNote', { profile: seeded.profile, id: notes.notes[1]!.id })).toEqual({
      outcome: 'kept',
    });
    const doc = await data<WholeExport>('personas.export', { profile: seeded.profile });
    expect(doc.fields.map((f) => f.key)).not.toContain('ignore_previous_instructions');
    expect(doc.notes).toHaveLength(1);
    const log = await allEvents(seeded.profile);
    expect(log).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: 'field_forgotten', target: 'ignore_previous_instructions' }),
        expect.objectContaining({ action: 'note_forgotten' }),
      ]),
    );
    const gone = await failure('personas.forgetField', {
      profile: seeded.profile,
      key: 'ignore_previous_instructions',
    });
    expect(gone.status).toBe(404);
  });

  it('deletes a persona only when its profile is typed exactly', async () => {
    const token = (
      (
        await http(`${identity()}/v1/auth/service-token`, {
          method: 'POST',
          authorization: `Bearer ${credential}`,
          body: { audience: 'persona' },
        })
      ).body as { token: string }
    ).token;
    expect(
      (
        await http(`${persona()}/v1/personas`, {
          method: 'POST',
          authorization: `Bearer ${token}`,
          body: { profile: 'scratch', display_name: 'Scratch' },
        })
      ).status,
    ).toBe(201);
    const wrong = await failure('personas.delete', { profile: 'scratch', confirm: 'Scratch' });
    expect(wrong).toEqual({
      status: 422,
      message: 'Type the profile "scratch" exactly to delete this persona; nothing was deleted.',
    });
    expect((await data<{ persona: unknown }>('personas.get', { profile: 'scratch' })).persona).toBeDefined();
    expect(await data('personas.delete', { profile: 'scratch', confirm: 'scratch' })).toEqual({ deleted: 'scratch' });
    expect((await failure('personas.get', { profile: 'scratch' })).status).toBe(404);
  });
});

describe('subscriptions in detail', () => {
  interface SubscriptionView {
    id: string;
    profile: string;
    state: string;
    event: string | null;
    signal: string;
    signal_attempts: number;
    signal_last_status: number | null;
    signal_last_error: string | null;
    signal_last_at: string | null;
    signal_next_at: string | null;
  }
  const gateway = () => stack.supervisor.url('repohost-gateway');

  it('reads one subscription without its signal URL: the profile it was opened under, no delivery yet', async () => {
    const sub = await data<SubscriptionView>('subscriptions.get', { id: seeded.subscriptionId });
    expect(sub).toEqual(
      expect.objectContaining({
        id: seeded.subscriptionId,
        kind: 'pull_merged',
        profile: seeded.connectionProfile,
        state: 'active',
        event: null,
        signal: 'none',
        signal_attempts: 0,
        signal_last_status: null,
        signal_last_error: null,
        signal_last_at: null,
        signal_next_at: null,
      }),
    );
    expect(sub).not.toHaveProperty('signal_url');
    expect((await failure('subscriptions.get', { id: 'sub_AAAAAAAAAAAAAAAA' })).status).toBe(404);
  });

  it('cancels under the profile it was opened with: it ends as cancelled and the hub gets one signal saying so', async () => {
    // A second connection that sorts after the first, so the profile the console names by default is not this one's.
    const side = 'zephyr';
    expect(
      (
        await http(`${identity()}/v1/connections/${side}`, {
          method: 'PUT',
          authorization: `Bearer ${credential}`,
          body: { kind: 'token', token: seeded.platformToken },
        })
      ).status,
    ).toBe(200);
    try {
      expect(
        (await data<{ connections: { profile: string }[] }>('connections.list')).connections.map((c) => c.profile),
      ).toEqual([seeded.connectionProfile, side]);
      const seededSub = await data<{ target: string }>('subscriptions.get', { id: seeded.subscriptionId });
      const token = (
        (
          await http(`${identity()}/v1/auth/service-token`, {
            method: 'POST',
            authorization: `Bearer ${credential}`,
            body: { audience: 'repohost-api' },
          })
        ).body as { token: string }
      ).token;
      // Opened as a hub opens one, under the second connection, with the signal going to the hub's endpoint.
      const res = await fetch(`${gateway()}/v1/subscriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-identity-profile': side },
        body: JSON.stringify({
          kind: 'review_landed',
          repo: 'octo/hello',
          pull: Number(seededSub.target.split('/')[1]),
          signal_url: receiver.url,
        }),
      });
      expect(res.status).toBe(201);
      const opened = (await res.json()) as { id: string; secret: string };
      const listed = await data<{ items: SubscriptionView[] }>('subscriptions.list');
      expect(listed.items.find((i) => i.id === opened.id)).toMatchObject({ profile: side, state: 'active' });

      // Under another profile the gateway does not find it, and it stays active; without one the console asks for it.
      const elsewhere = await failure('subscriptions.cancel', { id: opened.id, profile: seeded.connectionProfile });
      expect(elsewhere).toEqual({
        status: 404,
        message: `There is no subscription ${opened.id} under profile \u201c${seeded.connectionProfile}\u201d: the gateway cancels a subscription only under the connection it was opened with. Read the list again and cancel it from there.`,
      });
      expect((await failure('subscriptions.cancel', { id: opened.id })).message).toMatch(/: params\.profile: /);
      expect((await data<SubscriptionView>('subscriptions.get', { id: opened.id })).state).toBe('active');
      expect(receiver.of(opened.id)).toEqual([]);

      const cancelled = await data<SubscriptionView>('subscriptions.cancel', { id: opened.id, profile: side });
      expect(cancelled).toMatchObject({ id: opened.id, profile: side, state: 'cancelled', event: 'cancelled' });
      expect(cancelled).not.toHaveProperty('signal_url');

      // The hub's one signal, signed with the subscription's own secret, says cancelled.
      const [signal] = await receiver.arrived(opened.id);
      const payload = new Webhook(opened.secret).verify(signal!.body, signal!.headers as Record<string, string>) as {
        type: string;
        data: Record<string, unknown>;
      };
      expect(payload.type).toBe('subscription.ended');
      expect(payload.data).toMatchObject({
        subscription: opened.id,
        kind: 'review_landed',
        repo: 'octo/hello',
        state: 'cancelled',
        event: 'cancelled',
      });

      // The console shows the delivery once the gateway recorded the receiver's 200.
      await expect
        .poll(async () => (await data<SubscriptionView>('subscriptions.get', { id: opened.id })).signal, {
          timeout: 60_000,
          interval: 250,
        })
        .toBe('sent');
      const delivered = await data<SubscriptionView>('subscriptions.get', { id: opened.id });
      expect(delivered).toMatchObject({
        state: 'cancelled',
        event: 'cancelled',
        signal: 'sent',
        signal_attempts: 1,
        signal_last_status: 200,
        signal_last_error: null,
        signal_next_at: null,
      });
      expect(delivered.signal_last_at).toEqual(expect.any(String));

      // A second cancel answers it as it is, and nothing more is sent.
      expect(await data<SubscriptionView>('subscriptions.cancel', { id: opened.id, profile: side })).toMatchObject({
        state: 'cancelled',
        signal: 'sent',
        signal_attempts: 1,
      });
      const ids = async (state?: string) =>
        (await data<{ items: { id: string }[] }>('subscriptions.list', state ? { state } : undefined)).items.map(
          (i) => i.id,
        );
      expect(await ids('cancelled')).toEqual([opened.id]);
      expect(await ids('active')).not.toContain(opened.id);
      expect(receiver.of(opened.id)).toHaveLength(1);
    } finally {
      expect(
        (
          await http(`${identity()}/v1/connections/${side}`, {
            method: 'DELETE',
            authorization: `Bearer ${credential}`,
          })
        ).status,
      ).toBeLessThan(300);
    }
  });

  it('a signal no hub takes is retried: the console shows the last attempt\u2019s reason and when the next is due', async () => {
    const cancelled = await data<SubscriptionView>('subscriptions.cancel', {
      id: seeded.subscriptionId,
      profile: seeded.connectionProfile,
    });
    expect(cancelled).toMatchObject({ state: 'cancelled', event: 'cancelled' });
    // No hub answers at the seeded address (port 9, which fetch does not even try): the attempt fails, the next is scheduled.
    await expect
      .poll(
        async () =>
          (await data<SubscriptionView>('subscriptions.get', { id: seeded.subscriptionId })).signal_last_error,
        { timeout: 60_000, interval: 250 },
      )
      .toMatch(/^no answer from the receiver/);
    const retrying = await data<SubscriptionView>('subscriptions.get', { id: seeded.subscriptionId });
    expect(retrying).toMatchObject({ state: 'cancelled', signal: 'pending', signal_last_status: null });
    expect(retrying.signal_attempts).toBeGreaterThanOrEqual(1);
    expect(Date.parse(retrying.signal_next_at ?? '')).toBeGreaterThan(Date.parse(retrying.signal_last_at ?? ''));
    // While it retries, the overview already counts it as needing attention.
    const overview = await data<OverviewView>('overview.get');
    expect(overview.attention).toContainEqual({
      severity: 'warning',
      place: 'platform',
      text: 'One signal is failing to reach the hub and being tried again; see the subscriptions on the Platform page.',
    });
  });
});

describe('the overview when a service is down', () => {
  it('says which service needs what, and the counts it cannot read say why', async () => {
    await stack.supervisor.stop('persona-store');
    try {
      const view = await data<OverviewView>('overview.get');
      expect(view.services.find((s) => s.name === 'persona-store')).toMatchObject({
        state: 'stopped',
        advice: 'Start it (Services), or Start all.',
      });
      expect(view.attention).toContainEqual({
        severity: 'warning',
        place: 'services',
        text: 'Persona store: stopped. Start it (Services), or Start all.',
      });
      expect(view.headline).toEqual({
        state: 'degraded',
        text: 'Stopped: persona store. Start it on the Services page.',
      });
      expect(view.counts.personas).toEqual({
        error: 'The persona store is not answering (it is stopped). Start it in the Services panel, then try again.',
      });
      // The other services' counts are still read.
      expect(view.counts.connections).toEqual({ value: 1 });
      const activity = await data<ActivityView>('overview.activity');
      expect(activity.services['persona-store']!.reading).toMatchObject({ ok: false, reason: 'it is stopped' });
    } finally {
      await stack.supervisor.start('persona-store');
      await stack.supervisor.waitUntilSettled(undefined, SETTLE_MS);
    }
  });
});

describe('secrets', () => {
  it('no answer but the new hub credential\u2019s carried a token, the session credential or a platform secret', () => {
    const all = answers.filter((a) => !a.includes('"credential":"'));
    expect(all.length).toBeGreaterThan(10);
    for (const a of all) {
      expect(a).not.toContain(credential);
      expect(a).not.toContain(seeded.platformToken);
      expect(a).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\./);
    }
  });
});
