/**
 * The console API against the real services: the real supervisor runs identity, the persona store, the
 * gateway (on the GitHub double) and the provider (its CLI the scripted stand-in) as child processes.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createConsoleApi } from '../main/console/api.ts';
import type { ConsoleApi, ServiceView } from '../common/contract.ts';
import type { LogLine, LogPage, ServiceStatus } from '../main/supervisor/types.ts';
import {
  SETTLE_MS,
  recordingCalls,
  seedConsoleData,
  startConsoleStack,
  type ConsoleStack,
  type Seeded,
} from './support/console-stack.ts';

// Tests that stop, start and restart real services wait for them to settle; the timeouts are backstops only.
vi.setConfig({ testTimeout: SETTLE_MS + 30_000, hookTimeout: SETTLE_MS + 60_000 });

let stack: ConsoleStack;
let seeded: Seeded;
let api: ConsoleApi;
let credential: string;

const { answers, data, failure } = recordingCalls(() => api);

beforeAll(async () => {
  stack = await startConsoleStack();
  expect(
    stack.settled.map((s) => [s.name, s.state]),
    JSON.stringify(stack.settled),
  ).toEqual([
    ['identity', 'ready'],
    ['persona-store', 'ready'],
    ['repohost-gateway', 'ready'],
    ['model-provider', 'ready'],
  ]);
  const { supervisor } = stack;
  credential = await supervisor.localCredential();
  seeded = await seedConsoleData({
    identityUrl: supervisor.url('identity'),
    personaUrl: supervisor.url('persona-store'),
    gatewayUrl: supervisor.url('repohost-gateway'),
    credential,
    platform: stack.platform,
  });
  api = createConsoleApi({ supervisor });
});

afterAll(async () => {
  await stack?.close();
});

describe('personas through the console API', () => {
  it('lists the local account\u2019s personas', async () => {
    const list = await data<{ personas: { profile: string; display_name: string }[] }>('personas.list');
    expect(list.personas.map((p) => [p.profile, p.display_name])).toEqual([[seeded.profile, seeded.displayName]]);
  });

  it('reads a persona\u2019s card with its pinned entries and counts', async () => {
    const block = await data<{
      persona: { tone: string };
      fields: { key: string }[];
      field_count: number;
      note_count: number;
    }>('personas.get', {
      profile: seeded.profile,
    });
    expect(block.persona.tone).toBe('warm, dry humour');
    expect(block.fields.map((f) => f.key)).toEqual(['favourite_tea']);
    expect([block.field_count, block.note_count]).toEqual([3, 2]);
  });

  it('lists fields with value, type, revision and provenance (asserted_by is the writer\u2019s audience)', async () => {
    const { fields } = await data<{ fields: Record<string, unknown>[] }>('personas.fields', {
      profile: seeded.profile,
    });
    const tea = fields.find((f) => f.key === 'favourite_tea')!;
    expect(tea).toMatchObject({
      value: 'Assam, strong',
      value_type: 'string',
      revision: 2,
      source: 'owner',
      asserted_by: 'persona',
      pinned: true,
    });
    const kids = fields.find((f) => f.key === 'kids_names')!;
    expect(kids).toMatchObject({
      value: ['Ada', 'Linus'],
      value_type: 'list',
      revision: 1,
      source: 'assistant',
      pinned: false,
    });
  });

  it('lists notes with their provenance, and pages them', async () => {
    const first = await data<{ notes: { content: string; asserted_by: string }[]; next_after: string | null }>(
      'personas.notes',
      { profile: seeded.profile, limit: 1 },
    );
    expect(first.notes.map((n) => n.content)).toEqual([seeded.noteContents[0]]);
    expect(first.notes[0]!.asserted_by).toBe('persona');
    expect(first.next_after).not.toBeNull();
    const second = await data<{ notes: { content: string }[] }>('personas.notes', {
      profile: seeded.profile,
      limit: 1,
      after: first.next_after,
    });
    expect(second.notes.map((n) => n.content)).toEqual([seeded.noteContents[1]]);
  });

  it('the change log is newest first by default: the last write leads, and next_after pages towards older entries', async () => {
    type Page = { events: { id: number; action: string }[]; next_after: number | null };
    const oldest: number[] = [];
    for (let after: number | null | undefined; after !== null;) {
      const page: Page = await data<Page>('personas.events', {
        profile: seeded.profile,
        order: 'oldest',
        limit: 2,
        ...(after === undefined ? {} : { after }),
      });
      oldest.push(...page.events.map((e) => e.id));
      after = page.next_after;
    }
    const newest: number[] = [];
    for (let after: number | null | undefined; after !== null;) {
      const page: Page = await data<Page>('personas.events', {
        profile: seeded.profile,
        limit: 2,
        ...(after === undefined ? {} : { after }),
      });
      newest.push(...page.events.map((e) => e.id));
      after = page.next_after;
    }
    expect(oldest.length).toBeGreaterThan(3);
    expect(newest).toEqual([...oldest].reverse());
    expect((await failure('personas.events', { profile: seeded.profile, order: 'random' })).message).toContain(
      'params.order',
    );
  });

  it('pages the change log with next_after and filters it by kind and action', async () => {
    const page1 = await data<{ events: { id: number; action: string }[]; next_after: number | null }>(
      'personas.events',
      { profile: seeded.profile, limit: 3, order: 'oldest' },
    );
    expect(page1.events.map((e) => e.action)).toEqual(['persona_created', 'field_set', 'field_set']);
    expect(page1.next_after).toBe(page1.events[2]!.id);
    const page2 = await data<{ events: { id: number; action: string }[] }>('personas.events', {
      profile: seeded.profile,
      limit: 3,
      after: page1.next_after!,
      order: 'oldest',
    });
    expect(page2.events[0]!.id).toBeGreaterThan(page1.next_after!);

    const notes = await data<{ events: { target_kind: string; action: string }[] }>('personas.events', {
      profile: seeded.profile,
      target_kind: 'note',
      order: 'oldest',
    });
    expect(notes.events.map((e) => e.action)).toEqual(['note_added', 'note_added']);
    const revised = await data<{ events: { target: string; changes: string[] }[] }>('personas.events', {
      profile: seeded.profile,
      action: 'field_revised',
    });
    expect(revised.events.map((e) => e.target)).toEqual(['favourite_tea']);
    // The log names what changed, never the values.
    expect(JSON.stringify(revised)).not.toContain('Assam');
    const future = await data<{ events: unknown[] }>('personas.events', {
      profile: seeded.profile,
      since: '2999-01-01T00:00:00Z',
    });
    expect(future.events).toEqual([]);
    const both = await data<{ events: { action: string }[] }>('personas.events', {
      profile: seeded.profile,
      action: 'persona_created,note_added',
      order: 'oldest',
    });
    expect(both.events.map((e) => e.action)).toEqual(['persona_created', 'note_added', 'note_added']);
    expect((await failure('personas.events', { profile: seeded.profile, since: 'yesterday' })).message).toContain(
      'params.since',
    );
  });

  it('recalls across every persona, or within one, as two separately ranked lists', async () => {
    const all = await data<{ fields: { key: string; profile: string }[]; notes: unknown[] }>('personas.recall', {
      q: 'tea',
    });
    expect(all.fields.map((f) => [f.profile, f.key])).toEqual([[seeded.profile, 'favourite_tea']]);
    expect(all.notes).toEqual([]);
    const one = await data<{ fields: unknown[]; notes: { content: string }[] }>('personas.recall', {
      q: 'walked river',
      profile: seeded.profile,
    });
    expect(one.notes.map((n) => n.content)).toEqual([seeded.noteContents[0]]);
  });

  it('a persona that does not exist answers with the persona store\u2019s own explanation', async () => {
    const error = await failure('personas.get', { profile: 'nobody' });
    expect(error.status).toBe(404);
    expect(error.message).toMatch(/^The persona store did not find it: /);
  });
});

describe('paging a persona with more notes and fields than one page holds', () => {
  const profile = 'notebook';
  const NOTES = 105; // the persona store's default page is 100
  const FIELDS = 30;

  beforeAll(async () => {
    const { supervisor } = stack;
    const minted = await fetch(`${supervisor.url('identity')}/v1/auth/service-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ audience: 'persona' }),
    });
    const headers = {
      authorization: `Bearer ${((await minted.json()) as { token: string }).token}`,
      'content-type': 'application/json',
    };
    const write = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${supervisor.url('persona-store')}/v1/personas${path}`, {
        method,
        headers,
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
    };
    await write('POST', '', { profile, display_name: 'Notebook' });
    for (let i = 1; i <= NOTES; i++)
      await write('POST', `/${profile}/notes`, {
        content: `Entry ${i} of the notebook.`,
        kind: 'observation',
        source: 'assistant',
      });
    for (let i = 1; i <= FIELDS; i++)
      await write('PUT', `/${profile}/fields/item_${String(i).padStart(2, '0')}`, {
        description: `Item ${i}`,
        value: i,
        source: 'assistant',
      });
  });

  /** Follows next_after, passed back exactly as it came, until the last page. */
  async function everyPage<T>(method: string, member: string, params: Record<string, unknown>): Promise<T[][]> {
    const pages: T[][] = [];
    let after: unknown;
    for (;;) {
      const page = await data<Record<string, unknown>>(method, after === undefined ? params : { ...params, after });
      pages.push(page[member] as T[]);
      if (page.next_after === null) return pages;
      after = page.next_after;
    }
  }

  it('pages every note at the store\u2019s default page size, with the cursor passed back as the store sent it', async () => {
    const pages = await everyPage<{ content: string }>('personas.notes', 'notes', { profile });
    expect(pages.map((p) => p.length)).toEqual([100, 5]);
    expect(pages.flat().map((n) => n.content)).toEqual(
      Array.from({ length: NOTES }, (_, i) => `Entry ${i + 1} of the notebook.`),
    );
  });

  it('pages notes and fields at a smaller page size', async () => {
    const notes = await everyPage<{ content: string }>('personas.notes', 'notes', { profile, limit: 40 });
    expect(notes.map((p) => p.length)).toEqual([40, 40, 25]);
    const fields = await everyPage<{ key: string }>('personas.fields', 'fields', { profile, limit: 12 });
    expect(fields.map((p) => p.length)).toEqual([12, 12, 6]);
    expect(fields.flat().map((f) => f.key)).toEqual(
      Array.from({ length: FIELDS }, (_, i) => `item_${String(i + 1).padStart(2, '0')}`),
    );
  });

  it('a page larger than the persona store allows comes at the store\u2019s page size, and still pages on', async () => {
    const pages = await everyPage<{ content: string }>('personas.notes', 'notes', { profile, limit: 150 });
    expect(pages.map((p) => p.length)).toEqual([100, 5]);
  });

  it('the persona store\u2019s other refusals are passed on with its own sentence', async () => {
    const error = await failure('personas.events', { profile, action: 'field_exploded' });
    expect(error.status).toBe(422);
    // The store's own sentence, whatever its words: the console passes it on after naming the store.
    expect(error.message).toMatch(/^The persona store refused it: query member action: .*(persona_created|field_set)/);
  });

  it('a notes cursor that is not a string is refused naming the member', async () => {
    expect((await failure('personas.notes', { profile, after: 100 })).message).toContain('params.after');
  });
});

describe('platform: subscriptions and connections', () => {
  it('shows the gateway\u2019s subscriptions with state and expiry, never their signal URL', async () => {
    const subs = await data<{ profile: string; total: number; items: Record<string, unknown>[] }>('subscriptions.list');
    expect(subs.profile).toBe(seeded.connectionProfile);
    expect(subs.items).toHaveLength(1);
    expect(subs.items[0]).toMatchObject({
      id: seeded.subscriptionId,
      kind: 'pull_merged',
      repo: 'octo/hello',
      state: 'active',
      signal: 'none',
    });
    expect(Date.parse(String(subs.items[0]!.expires_at))).toBeGreaterThan(Date.now());
    expect(subs.items[0]).not.toHaveProperty('signal_url');
    expect(subs.items[0]).not.toHaveProperty('secret');
  });

  it('adds a token to identity, lists the profile without the secret, and removes it', async () => {
    const token = `github_pat_${'Zz9'.repeat(10)}`;
    const saved = await data<Record<string, unknown>>('connections.put', { profile: 'side-project', token });
    expect(saved).toMatchObject({ profile: 'side-project', kind: 'token' });
    const { connections } = await data<{ connections: { profile: string; kind: string }[] }>('connections.list');
    expect(connections.map((c) => c.profile).sort()).toEqual(['side-project', seeded.connectionProfile]);
    expect(JSON.stringify(connections)).not.toContain(token);
    expect(await data('connections.remove', { profile: 'side-project' })).toEqual({ removed: 'side-project' });
    const again = await failure('connections.remove', { profile: 'side-project' });
    expect(again.status).toBe(404);
    expect(again.message).toContain('side-project');
    expect(answers.join('\n')).not.toContain(token);
  });

  it('a token that is too short is refused naming the member, without echoing it', async () => {
    const error = await failure('connections.put', { profile: 'work2', token: 'short-secret-xyz' });
    expect(error.status).toBe(422);
    expect(error.message).toContain('params.token');
    expect(error.message).not.toContain('short-secret-xyz');
  });
});

describe('the provider and the services', () => {
  it('shows whether the CLI was found, the login, the lockdown lists and the models', async () => {
    const status = await data<{
      ready: {
        ready: boolean;
        checks: {
          cli: { ok: boolean };
          login: { state: string };
          lockdown: { ok: boolean; tools: string[]; mcp_servers: string[] };
        };
      };
      models: { data: { id: string }[] };
    }>('provider.status');
    expect(status.ready.ready).toBe(true);
    expect(status.ready.checks.cli.ok).toBe(true);
    expect(status.ready.checks.login.state).toBe('signed_in');
    expect(status.ready.checks.lockdown).toMatchObject({ ok: true, tools: [], mcp_servers: [] });
    expect(status.models.data.map((m) => m.id)).toContain('sonnet');
  });

  it('lists every service with state, port, uptime and memory', async () => {
    const list = await data<ServiceStatus[]>('services.list');
    expect(list.map((s) => s.name)).toEqual(['identity', 'persona-store', 'repohost-gateway', 'model-provider']);
    for (const s of list) {
      expect(s.state).toBe('ready');
      expect(s.port).toBe(
        Number(
          stack.env[
            {
              identity: 'IDENTITY_PORT',
              'persona-store': 'PERSONA_PORT',
              'repohost-gateway': 'REPOHOST_PORT',
              'model-provider': 'MODELPROV_PORT',
            }[s.name]
          ],
        ),
      );
      expect(s.uptimeMs).toBeGreaterThan(0);
      expect(s.memoryBytes).toBeGreaterThan(1024 * 1024);
    }
  });

  it('tails a service\u2019s log and filters it', async () => {
    await data('personas.events', { profile: seeded.profile });
    const lines = await data<LogLine[]>('services.logs', {
      name: 'persona-store',
      filter: '/v1/personas/{profile}/events',
      limit: 50,
    });
    expect(lines.length).toBeGreaterThan(0);
    // The route as declared: a profile, a key or a note id never goes into a log line.
    for (const l of lines) expect(l.text).toContain('"path":"/v1/personas/{profile}/events"');
    const none = await data<LogLine[]>('services.logs', { name: 'persona-store', filter: 'no line says this 7f3a' });
    expect(none).toEqual([]);
  });

  it('a log page is newest first without the probes’ lines unless asked, pages back, and follows new lines', async () => {
    const first = await data<LogPage>('services.logPage', { name: 'persona-store', limit: 5 });
    expect(first.lines).toHaveLength(5);
    expect(first.lines.map((l) => l.seq)).toEqual([...first.lines.map((l) => l.seq)].sort((a, b) => b - a));
    expect(first.lines.some((l) => l.probe)).toBe(false);
    const older = await data<LogPage>('services.logPage', {
      name: 'persona-store',
      limit: 5,
      before: first.next_before!,
    });
    expect(older.lines[0]!.seq).toBeLessThan(first.lines[4]!.seq);
    // The supervisor probes /ready every few seconds: asked for, those lines are there, marked.
    const probes = await data<LogPage>('services.logPage', { name: 'persona-store', limit: 500, probes: true });
    expect(probes.lines.filter((l) => l.probe).map((l) => JSON.parse(l.text).path)).toEqual(
      expect.arrayContaining(['/ready']),
    );
    // Follow: one request of ours after the newest seen is the (only) new line that is not a probe.
    const ours = (l: LogLine) =>
      l.service === 'persona-store' && l.text.includes('"method":"GET","path":"/v1/personas/{profile}"');
    const logged = new Promise<void>((resolve) => {
      const on = (l: LogLine) => {
        if (!ours(l)) return;
        stack.supervisor.off('log', on);
        resolve();
      };
      stack.supervisor.on('log', on);
    });
    await data('personas.get', { profile: seeded.profile });
    await logged;
    const follow = await data<LogPage>('services.logPage', { name: 'persona-store', after: first.newest });
    expect(follow.lines.filter(ours)).toHaveLength(1);
    for (const l of follow.lines) expect(l.seq).toBeGreaterThan(first.newest);
    expect(follow.newest).toBeGreaterThanOrEqual(follow.lines[0]!.seq);
    const both = await failure('services.logPage', { name: 'persona-store', before: 10, after: 5 });
    expect(both.message).toContain('not both');
  });

  it('a stopped persona store gives an error that says to start it, and starting it from the console brings it back', async () => {
    const stopped = await data<ServiceStatus>('services.stop', { name: 'persona-store' });
    expect(stopped.state).toBe('stopped');
    const error = await failure('personas.list');
    expect(error.message).toBe(
      'The persona store is not answering (it is stopped). Start it in the Services panel, then try again.',
    );
    await data('services.start', { name: 'persona-store' });
    await stack.supervisor.waitUntilSettled(['persona-store'], SETTLE_MS);
    const list = await data<{ personas: { profile: string }[] }>('personas.list');
    expect(list.personas.map((p) => p.profile)).toContain(seeded.profile);
  });
});

describe('errors that say which service to start', () => {
  it('with identity stopped, personas, connections and subscriptions each say to start the identity service', async () => {
    await data('services.stop', { name: 'identity' });
    try {
      // A console that has no token yet, as after a launch: the persona store's token must be minted first.
      const fresh = createConsoleApi({ supervisor: stack.supervisor });
      for (const method of ['personas.list', 'connections.list', 'subscriptions.list']) {
        const result = await fresh.call({ method });
        answers.push(JSON.stringify(result));
        expect(result).toEqual({
          ok: false,
          error: {
            status: 503,
            message:
              'The identity service is not answering (it is stopped). Start it in the Services panel, then try again.',
          },
        });
      }
    } finally {
      await data('services.start', { name: 'identity' });
      await stack.supervisor.waitUntilSettled(['identity'], SETTLE_MS);
    }
  });

  it('a stopped persona store\u2019s port stays the app\u2019s: another program cannot take it, and the console still says to start it', async () => {
    await data('services.stop', { name: 'persona-store' });
    try {
      const squatter = createServer((_req, res) => res.end('not ours'));
      const refused = await new Promise<string>((resolve) => {
        squatter.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
        squatter.listen(Number(stack.env.PERSONA_PORT), '127.0.0.1', () => resolve('listening'));
      });
      if (squatter.listening) await new Promise<void>((resolve) => squatter.close(() => resolve()));
      expect(refused).toBe('EADDRINUSE');
      expect((await failure('personas.list')).message).toBe(
        'The persona store is not answering (it is stopped). Start it in the Services panel, then try again.',
      );
    } finally {
      await data('services.start', { name: 'persona-store' });
      await stack.supervisor.waitUntilSettled(['persona-store'], SETTLE_MS);
    }
  });
});

describe('a crash stays visible after the restart that follows it', () => {
  it('a SIGKILLed persona store is restarted, and services.list still names its last crash and when the restart was due', async () => {
    const before = (await data<ServiceView[]>('services.list')).find((s) => s.name === 'persona-store')!;
    expect(before.lastCrash).toBeUndefined();
    // The supervisor passes through crashed and backing-off to ready again; the console looks only at the end.
    const back = new Promise<void>((resolve) => {
      const on = (s: ServiceStatus) => {
        if (s.name === 'persona-store' && s.state === 'ready' && s.pid !== before.pid) {
          stack.supervisor.off('status', on);
          resolve();
        }
      };
      stack.supervisor.on('status', on);
    });
    process.kill(before.pid!, 'SIGKILL');
    await back;
    const after = (await data<ServiceView[]>('services.list')).find((s) => s.name === 'persona-store')!;
    expect(after.state).toBe('ready');
    expect(after.restarts).toBe(before.restarts + 1);
    expect(after.lastError).toBeUndefined();
    expect(after.lastCrash!.reason).toMatch(/persona store was ended by SIGKILL/i);
    expect(Date.parse(after.lastCrash!.restartAt!)).toBeGreaterThan(Date.parse(after.lastCrash!.at));
    expect((await data<{ personas: { profile: string }[] }>('personas.list')).personas.map((p) => p.profile)).toContain(
      seeded.profile,
    );
  });
});

describe('restarts', () => {
  it('after identity restarts, the console still reads personas and connections', async () => {
    const restarted = await data<ServiceStatus>('services.restart', { name: 'identity' });
    expect(['starting', 'live', 'ready']).toContain(restarted.state);
    await stack.supervisor.waitUntilSettled(['identity'], SETTLE_MS);
    expect((await data<{ fields: unknown[] }>('personas.fields', { profile: seeded.profile })).fields).toHaveLength(3);
    expect(
      (await data<{ connections: { profile: string }[] }>('connections.list')).connections.map((c) => c.profile),
    ).toEqual([seeded.connectionProfile]);
  });
});

describe('requests the console refuses', () => {
  it('an unknown method names the methods there are', async () => {
    const error = await failure('personas.drop_all');
    expect(error.status).toBe(404);
    expect(error.message).toContain('personas.list');
    expect(error.message).toContain('services.restart');
  });

  it('a request that is not {method, params} is refused with what to send', async () => {
    const result = await api.call('nonsense' as never);
    expect(result).toEqual({
      ok: false,
      error: { status: 400, message: expect.stringContaining('{"method": "...", "params": {...}}') },
    });
  });

  it('params are checked per method: a service name must be one of ours, a profile well formed, extra members refused', async () => {
    expect((await failure('services.stop', { name: 'sshd' })).message).toContain('params.name');
    expect((await failure('personas.get', { profile: '../etc' })).message).toContain('params.profile');
    expect((await failure('personas.list', { everything: true })).status).toBe(422);
  });
});

describe('tokens stay on the main side', () => {
  it('no answer carried a JWT, the session credential or a platform token', async () => {
    expect(answers.length).toBeGreaterThan(20);
    const all = answers.join('\n');
    expect(all).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\.eyJ/);
    expect(all).not.toContain(credential);
    expect(all).not.toContain(seeded.platformToken);
  });
});
