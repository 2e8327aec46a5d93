/**
 * What a person trusts the console with, through the console API against the real services under the real
 * supervisor: forgetting they choose (kept at identity, applied by the persona store), no lost update (a
 * hub's write between the page's read and the person's pin is never reverted), a change log in words, a
 * token kept only once it works, and hub credentials that expire by default and say so a week ahead.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConnectionSaved, ConsoleApi, ForgetPolicy, OverviewView, SettingsView } from '../common/contract.ts';
import type { ChangeLogEntryView, HubView, NewHubCredential, PersonaView } from '../main/console/answers.ts';
import { createConsoleApi } from '../main/console/api.ts';
import { SETTLE_MS, recordingCalls, startConsoleStack, type ConsoleStack } from './support/console-stack.ts';

vi.setConfig({ testTimeout: 120_000, hookTimeout: SETTLE_MS + 60_000 });

let stack: ConsoleStack;
let api: ConsoleApi;
let hubToken: string;
const { data, failure } = recordingCalls(() => api);

async function hubWrite(method: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`${stack.supervisor.url('persona-store')}/v1/personas${path}`, {
    method,
    headers: { authorization: `Bearer ${hubToken}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

beforeAll(async () => {
  stack = await startConsoleStack();
  api = createConsoleApi({ supervisor: stack.supervisor, env: stack.env });
  // The hub: a hub credential made on the console's hub page, trading it for a persona token as a hub does.
  const made = await data<NewHubCredential>('hub.createCredential', { label: 'the hub' });
  const minted = await fetch(`${stack.supervisor.url('identity')}/v1/auth/service-token`, {
    method: 'POST',
    headers: { authorization: `Bearer ${made.credential}`, 'content-type': 'application/json' },
    body: JSON.stringify({ audience: 'persona' }),
  });
  hubToken = ((await minted.json()) as { token: string }).token;
  expect(await hubWrite('POST', '', { profile: 'ada', display_name: 'Ada' })).toBe(201);
});
afterAll(async () => {
  await stack?.close();
});

describe('forgetting the person chooses', () => {
  it('chosen on the Settings page, the persona store applies it: the Forget dialog says so, and a forget destroys', async () => {
    const before = await data<SettingsView>('settings.get');
    expect(before.forgetting).toMatchObject({ available: true, chosen: {}, defaults: { mode: 'keep' } });
    await data('settings.setForgetting', { mode: 'destroy_now' });
    expect(await data<ForgetPolicy>('personas.forgetPolicy', { profile: 'ada' })).toMatchObject({
      mode: 'destroy_now',
      decidedBy: 'persona-store',
    });
    expect(
      await hubWrite('PUT', '/ada/fields/secret_plan', { description: 'd', value: 'x', source: 'assistant' }),
    ).toBe(200);
    expect(await data('personas.forgetField', { profile: 'ada', key: 'secret_plan' })).toEqual({
      outcome: 'destroyed',
    });
    // A hub's forget follows the same choice: it is the person's, not the caller's.
    expect(await hubWrite('PUT', '/ada/fields/other', { description: 'd', value: 'y', source: 'assistant' })).toBe(200);
    expect(await hubWrite('DELETE', '/ada/fields/other')).toBe(200);
    expect(await data<{ fields: unknown[] }>('personas.forgotten', { profile: 'ada', kind: 'field' })).toMatchObject({
      fields: [],
    });
  });

  it('kept entries are listed, and destroyed on the person\u2019s word; a hub may not destroy against the setting', async () => {
    await data('settings.setForgetting', { mode: 'keep' });
    expect(await hubWrite('PUT', '/ada/fields/kept_one', { description: 'd', value: 'k', source: 'assistant' })).toBe(
      200,
    );
    expect(await data('personas.forgetField', { profile: 'ada', key: 'kept_one' })).toEqual({ outcome: 'kept' });
    const listed = await data<{ fields: { key: string; forgotten: { state: string } }[] }>('personas.forgotten', {
      profile: 'ada',
      kind: 'field',
    });
    expect(listed.fields.map((f) => [f.key, f.forgotten.state])).toEqual([['kept_one', 'kept']]);
    expect(await hubWrite('DELETE', '/ada/fields/kept_one?destroy=now')).toBe(403);
    expect(await data('personas.destroyField', { profile: 'ada', key: 'kept_one' })).toEqual({ outcome: 'destroyed' });
    expect((await data<{ fields: unknown[] }>('personas.forgotten', { profile: 'ada', kind: 'field' })).fields).toEqual(
      [],
    );
  });
});

describe('no lost update', () => {
  it('a pin after the hub rewrote the field is refused in words, and the hub\u2019s value stays', async () => {
    expect(await hubWrite('PUT', '/ada/fields/mood', { description: 'd', value: 'calm', source: 'assistant' })).toBe(
      200,
    );
    const shown = (
      await data<{ fields: { key: string; revision: number }[] }>('personas.fields', { profile: 'ada' })
    ).fields.find((f) => f.key === 'mood')!;
    // The hub writes while the page shows revision 1.
    expect(
      await hubWrite('PUT', '/ada/fields/mood', { description: 'd', value: 'cheerful', source: 'assistant' }),
    ).toBe(200);
    const refused = await failure('personas.pinField', {
      profile: 'ada',
      key: 'mood',
      pinned: true,
      revision: shown.revision,
    });
    expect(refused.status).toBe(412);
    expect(refused.message).toMatch(
      /^The field mood changed since this page showed it: value changed\. Nothing was written/,
    );
    expect(refused.message).not.toMatch(/\b412\b|If-Match/);
    const now = (
      await data<{ fields: { key: string; value: unknown; pinned: boolean }[] }>('personas.fields', {
        profile: 'ada',
      })
    ).fields.find((f) => f.key === 'mood');
    expect(now).toMatchObject({ value: 'cheerful', pinned: false });
    // Pinned as it is now, once the page shows it.
    expect(
      await data('personas.pinField', { profile: 'ada', key: 'mood', pinned: true, revision: shown.revision + 1 }),
    ).toMatchObject({ value: 'cheerful', pinned: true });
  });

  it('the card edited after the hub changed it is refused; a forget of a note revised meanwhile too', async () => {
    const read = await data<PersonaView>('personas.get', { profile: 'ada' });
    expect(read.etag).toMatch(/^"c/);
    expect(await hubWrite('PATCH', '/ada', { tone: 'dry' })).toBe(200);
    const card = await failure('personas.update', { profile: 'ada', card: { tone: 'warm' }, etag: read.etag });
    expect([card.status, card.message]).toEqual([
      412,
      expect.stringMatching(/^The card changed since this page showed it: tone changed/),
    ]);
    expect((await data<PersonaView>('personas.get', { profile: 'ada' })).persona.tone).toBe('dry');

    const noteRes = await fetch(`${stack.supervisor.url('persona-store')}/v1/personas/ada/notes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hubToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'We walked the dog by the river', kind: 'episode', source: 'assistant' }),
    });
    const note = (await noteRes.json()) as { id: string; revision: number };
    expect(await hubWrite('PATCH', `/ada/notes/${note.id}`, { content: 'We walked the dog by the sea' })).toBe(200);
    const forgot = await failure('personas.forgetNote', { profile: 'ada', id: note.id, revision: note.revision });
    expect([forgot.status, forgot.message]).toEqual([412, expect.stringMatching(/^The note changed since/)]);
  });
});

describe('a change log a person reads', () => {
  it('notes by their first words, who in words from the store\u2019s record, before \u2192 after when kept', async () => {
    await data('settings.setForgetting', { mode: 'keep', keepReplacedValues: true });
    expect(await hubWrite('PUT', '/ada/fields/colour', { description: 'd', value: 'teal', source: 'assistant' })).toBe(
      200,
    );
    expect(await hubWrite('PUT', '/ada/fields/colour', { description: 'd', value: 'navy', source: 'assistant' })).toBe(
      200,
    );
    await data('personas.pinField', { profile: 'ada', key: 'colour', pinned: true });
    const log = await data<{ events: ChangeLogEntryView[] }>('personas.events', { profile: 'ada', limit: 50 });
    const colour = log.events.filter((e) => e.target === 'colour');
    expect(colour.map((e) => [e.action, e.via])).toEqual([
      ['field_pinned', 'owner'],
      ['field_revised', 'hub'],
      ['field_set', 'hub'],
    ]);
    expect(colour[1]).toMatchObject({ replaced: { value: 'teal' }, after: { value: 'navy' } });
    const note = log.events.find((e) => e.action === 'note_added')!;
    expect(note.label).toBe('We walked the dog by the sea');
  });
});

describe('first run', () => {
  it('a token whose test fails is not kept unless the person says so; one that works is, with the test\u2019s time', async () => {
    const bad = await data<ConnectionSaved>('firstRun.saveConnection', {
      profile: 'work',
      token: 'github_pat_not_a_token_of_the_double_0000',
    });
    expect(bad).toMatchObject({ ok: false, kept: false, profile: 'work' });
    expect(bad.ok ? '' : bad.message).not.toMatch(/\b(401|502)\b/);
    const listed = await data<{ connections: { profile: string }[] }>('connections.list');
    expect(listed.connections.map((c) => c.profile)).not.toContain('work');
    expect(listed.connections.some((c) => c.profile.startsWith('trial-'))).toBe(false);

    const kept = await data<ConnectionSaved>('firstRun.saveConnection', {
      profile: 'work',
      token: 'github_pat_not_a_token_of_the_double_0000',
      keepIfFails: true,
    });
    expect(kept).toMatchObject({ ok: false, kept: true });
    expect(
      (await data<{ connections: { profile: string }[] }>('connections.list')).connections.map((c) => c.profile),
    ).toContain('work');
    await data('connections.remove', { profile: 'work' });

    stack.platform.addUser('octo');
    stack.platform.addToken('github_pat_a_token_the_double_takes_0001', 'octo');
    const good = await data<ConnectionSaved>('firstRun.saveConnection', {
      profile: 'work',
      token: 'github_pat_a_token_the_double_takes_0001',
    });
    expect(good).toMatchObject({ ok: true, kept: true, login: 'octo' });
    expect(Date.parse(good.at)).toBeGreaterThan(Date.now() - 600_000);
  });
});

describe('hub credentials expire by default', () => {
  it('made without a lifetime, one lives 90 days; never may still be chosen; a week before, the overview says so', async () => {
    expect((await data<SettingsView>('settings.get')).hubCredentialDays).toBe(90);
    const made = await data<NewHubCredential>('hub.createCredential', { label: 'default life' });
    const days = (Date.parse(made.expires_at!) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(89);
    expect(days).toBeLessThanOrEqual(90);
    expect(
      (await data<NewHubCredential>('hub.createCredential', { label: 'forever', expiresInDays: null })).expires_at,
    ).toBeNull();
    await data('settings.setHubCredentialDays', { days: null });
    expect((await data<HubView>('hub.get')).defaultDays).toBeNull();
    expect((await data<NewHubCredential>('hub.createCredential', { label: 'chosen never' })).expires_at).toBeNull();
    await data('settings.setHubCredentialDays', { days: 90 });

    await data('hub.createCredential', { label: 'soon gone', expiresInDays: 3 });
    const overview = await data<OverviewView>('overview.get');
    expect(overview.attention.map((a) => a.text)).toContainEqual(
      expect.stringMatching(/^The hub credential \u201csoon gone\u201d expires on .*: make a new one on Connect a hub/),
    );
  });
});
