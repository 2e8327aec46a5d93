import { join } from 'node:path';
import { execa } from 'execa';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test/support/postgres.ts';
import { ROOT } from '../../test/support/process.ts';
import { startTestIdentity, type TestIdentity } from '../../test/support/identity.ts';
import { openPostgresEngine } from './engines/postgres.ts';
import { moveIn, readSource, sourceFile } from './move-in.ts';
import { startPersonaStore, type PersonaStore } from './service.ts';
import { Client, field, note, startTestbed, TestClock, type Testbed } from './test-support/harness.ts';

/**
 * Moving in, end to end: a SQLite persona database made by a real persona store (real identity, real
 * HTTP writes: revisions, kept and pending entries, a deleted persona, two accounts) is copied into a
 * PostgreSQL server the test starts, by the command line as a child process; then a persona store on
 * PostgreSQL answers every read as the SQLite one did.
 */

const skip = postgresUnavailable();
if (skip) console.warn(`move-in tests skipped: ${skip}`);

const CLI = join(ROOT, 'services', 'persona-store', 'cli.ts');
const LIMITS = { maxValueBytes: 16384, maxNoteChars: 8000, maxKeyLength: 64 };

/** The command line as a user runs it, in a child process, with no PERSONA_ setting of this test process. */
async function cli(args: string[], env: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PERSONA_')));
  return execa(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env: { ...clean, ...env },
    extendEnv: false,
    reject: false,
  });
}

const accountOf = (client: Client) =>
  JSON.parse(Buffer.from(client.token.split('.')[1]!, 'base64url').toString()).sub as string;

async function wholeExport(c: Client, profile: string) {
  const fields: unknown[] = [];
  const notes: unknown[] = [];
  let fieldsAfter: string | null | undefined;
  let notesAfter: string | null | undefined;
  let card: unknown;
  do {
    const query = new URLSearchParams({ fields_limit: '3', notes_limit: '3' });
    if (fieldsAfter) query.set('fields_after', fieldsAfter);
    if (notesAfter) query.set('notes_after', notesAfter);
    const page = await c.call<{
      persona: unknown;
      fields: unknown[];
      notes: unknown[];
      fields_next_after: string | null;
      notes_next_after: string | null;
    }>('GET', `/v1/personas/${profile}/export?${query}`);
    expect(page.status).toBe(200);
    card = page.body.persona;
    if (fieldsAfter !== null) fields.push(...page.body.fields);
    if (notesAfter !== null) notes.push(...page.body.notes);
    fieldsAfter = fieldsAfter === null ? null : page.body.fields_next_after;
    notesAfter = notesAfter === null ? null : page.body.notes_next_after;
  } while (fieldsAfter !== null || notesAfter !== null);
  return { persona: card, fields, notes };
}

async function allEvents(c: Client, profile: string) {
  const events: { id: number }[] = [];
  let after = 0;
  for (;;) {
    const page = await c.call<{ events: { id: number }[]; next_after: number | null }>(
      'GET',
      `/v1/personas/${profile}/events?after=${after}&limit=4`,
    );
    expect(page.status).toBe(200);
    events.push(...page.body.events);
    if (page.body.next_after === null) return events;
    after = page.body.next_after;
  }
}

const recallHits = async (c: Client, path: string, q: string) => {
  const r = await c.call<{ fields: { profile: string; key: string }[]; notes: { profile: string; id: string }[] }>(
    'GET',
    `${path}?q=${encodeURIComponent(q)}`,
  );
  expect(r.status).toBe(200);
  return {
    fields: r.body.fields.map((f) => `${f.profile}/${f.key}`).sort(),
    notes: r.body.notes.map((n) => `${n.profile}/${n.id}`).sort(),
  };
};

/** Everything a person can read of an account: its personas, each one's identity block, whole export and change log, and recall. */
async function everything(c: Client) {
  const list = await c.call<{ personas: { profile: string }[] }>('GET', '/v1/personas?limit=100');
  const profiles = list.body.personas.map((p) => p.profile);
  const personas: Record<string, unknown> = {};
  for (const profile of profiles) {
    personas[profile] = {
      block: (await c.call('GET', `/v1/personas/${profile}`)).body,
      schema: (await c.call('GET', `/v1/personas/${profile}/fields/_schema`)).body,
      export: await wholeExport(c, profile),
      events: await allEvents(c, profile),
      recall: await recallHits(c, `/v1/personas/${profile}/recall`, 'lighthouse'),
    };
  }
  return {
    list: list.body,
    personas,
    recallAll: await recallHits(c, '/v1/recall', 'lighthouse keeper'),
    kept: await recallHits(c, '/v1/recall', 'forgottenword'),
  };
}

async function rowCounts(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const out: Record<string, number> = {};
    for (const table of ['personas', 'fields', 'notes', 'events']) {
      out[table] = Number((await client.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
    }
    return out;
  } finally {
    await client.end();
  }
}

// Child processes on a loaded machine: a generous backstop per test, never a window anything waits for.
describe.skipIf(skip)('moving in from SQLite to PostgreSQL', { timeout: 300_000 }, () => {
  let identity: TestIdentity;
  let source: Testbed;
  let server: PostgresServer;
  let owner: Client;
  let other: Client;
  let before: { owner: Awaited<ReturnType<typeof everything>>; other: Awaited<ReturnType<typeof everything>> };
  const stores: PersonaStore[] = [];

  /** A persona store on `url` (PostgreSQL), with the same identity; its clients. */
  async function storeOn(url: string, clock = new TestClock()) {
    const store = await startPersonaStore(
      {
        PERSONA_DATA_DIR: source.dataDir,
        PERSONA_PORT: '0',
        ...identity.trust('PERSONA_'),
        PERSONA_LOG_LEVEL: 'silent',
        PERSONA_DATABASE_URL: url,
        PERSONA_FORGET_MODE: 'destroy_after_grace',
        PERSONA_GRACE_PERIOD_SECONDS: '3600',
      },
      undefined,
      { clock: clock.now },
    );
    stores.push(store);
    return { store, owner: new Client(store.url, owner.token), other: new Client(store.url, other.token), clock };
  }

  beforeAll(async () => {
    identity = await startTestIdentity();
    server = await startPostgres();
    source = await startTestbed({ PERSONA_KEEP_REPLACED_VALUES: 'true' }, identity);
    owner = source.owner;
    other = await source.account('other');
    const ok = (r: { status: number; text: string }) => expect(r.status, r.text).toBeLessThan(300);
    const tick = () => source.clock.advance(5);

    ok(
      await owner.call('POST', '/v1/personas', {
        profile: 'atlas',
        display_name: 'Atlas',
        pronouns: 'it/its',
        language: 'en',
        tone: 'calm',
        verbosity: 'terse',
        speaking_style: 'Short sentences.',
      }),
    );
    ok(await owner.call('PUT', '/v1/personas/atlas/fields/home_town', field('Lighthouse point', { pinned: true })));
    tick();
    ok(
      await owner.call(
        'PUT',
        '/v1/personas/atlas/fields/home_town',
        field('Lighthouse point, north side', { pinned: true }),
      ),
    );
    tick();
    ok(
      await owner.call(
        'PUT',
        '/v1/personas/atlas/fields/favouriteColour',
        field({ main: 'teal', also: ['amber', 3] }, { description: 'colours the keeper likes' }),
      ),
    );
    ok(await owner.call('PUT', '/v1/personas/atlas/fields/old_habit', field('a forgottenword habit')));
    ok(await owner.call('DELETE', '/v1/personas/atlas/fields/old_habit'));
    ok(await owner.call('PUT', '/v1/personas/atlas/fields/revived', field('first')));
    ok(await owner.call('DELETE', '/v1/personas/atlas/fields/revived'));
    tick();
    ok(await owner.call('PUT', '/v1/personas/atlas/fields/revived', field('second')));
    for (let i = 0; i < 7; i++) ok(await owner.call('PUT', `/v1/personas/atlas/fields/extra_${i}`, field(i)));
    const first = await owner.call<{ id: string }>(
      'POST',
      '/v1/personas/atlas/notes',
      note('The lighthouse keeper waved at dawn.', { pinned: true }),
      { 'idempotency-key': 'dawn-1' },
    );
    ok(first);
    tick();
    const revised = await owner.call<{ id: string }>(
      'POST',
      '/v1/personas/atlas/notes',
      note('A storm came.', { kind: 'episode' }),
    );
    ok(
      await owner.call('PATCH', `/v1/personas/atlas/notes/${revised.body.id}`, {
        content: 'A storm came over the lighthouse.',
      }),
    );
    const kept = await owner.call<{ id: string }>('POST', '/v1/personas/atlas/notes', note('A forgottenword note.'));
    ok(await owner.call('DELETE', `/v1/personas/atlas/notes/${kept.body.id}`));
    for (let i = 0; i < 6; i++)
      ok(
        await owner.call('POST', '/v1/personas/atlas/notes', note(`Lesson ${i}: check the lamp.`, { kind: 'lesson' })),
      );
    ok(await owner.call('PATCH', '/v1/personas/atlas', { tone: 'calm, dry' }));
    ok(await owner.call('POST', '/v1/personas', { profile: 'beacon', display_name: 'Beacon' }));
    ok(await owner.call('PUT', '/v1/personas/beacon/fields/signal', field('lighthouse keeper code')));
    ok(await owner.call('POST', '/v1/personas', { profile: 'scratch', display_name: 'Scratch' }));
    ok(await owner.call('DELETE', '/v1/personas/scratch'));
    ok(await other.call('POST', '/v1/personas', { profile: 'atlas', display_name: 'Other Atlas' }));
    ok(await other.call('POST', '/v1/personas/atlas/notes', note('Another account\u2019s lighthouse.')));
    // Pending destruction: forgotten under destroy_after_grace, due an hour later.
    await source.restart({ PERSONA_FORGET_MODE: 'destroy_after_grace', PERSONA_GRACE_PERIOD_SECONDS: '3600' });
    owner = source.owner;
    other = new Client(source.store.url, other.token);
    ok(await owner.call('PUT', '/v1/personas/beacon/fields/pending_one', field('soon gone')));
    ok(await owner.call('DELETE', '/v1/personas/beacon/fields/pending_one'));
    before = { owner: await everything(owner), other: await everything(other) };
  });

  afterAll(async () => {
    for (const store of stores) await store.close();
    await source?.close();
    await server?.stop();
    await identity?.close();
  });

  it('copies every persona of every account, and reads the same on PostgreSQL (exports, change logs, identity blocks, recall)', async () => {
    const url = await server.createDatabase();
    const run = await cli(['move-in', '--from', source.dataDir, '--to', url]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain('copied "atlas"');
    expect(run.stdout).toContain('copied "beacon"');
    expect(run.stdout).toContain('change-log entries of 1 deleted persona');
    expect(run.stdout).not.toContain(new URL(url).password);

    const target = await storeOn(url);
    expect(await everything(target.owner)).toEqual(before.owner);
    expect(await everything(target.other)).toEqual(before.other);
    // Sanity of the comparison itself: the data is there, recall found the live entries and not the kept ones.
    expect(before.owner.recallAll.notes.length).toBeGreaterThan(0);
    expect(before.owner.recallAll.fields).toContain('beacon/signal');
    expect(before.owner.kept).toEqual({ fields: [], notes: [] });
  });

  it('brings kept and pending entries as they were: a kept field revives at its next revision, a pending one is destroyed when its grace period ends', async () => {
    const url = await server.createDatabase();
    expect((await cli(['move-in', '--from', source.dataDir], { PERSONA_DATABASE_URL: url })).exitCode).toBe(0);
    const target = await storeOn(url);
    const revived = await target.owner.call<{ revision: number }>(
      'PUT',
      '/v1/personas/atlas/fields/old_habit',
      field('a forgottenword habit'),
    );
    expect(revived.status).toBe(200);
    expect(revived.body.revision).toBe(2);
    const events = await allEvents(target.owner, 'atlas');
    expect(events.at(-1)).toMatchObject({ action: 'field_revived', target: 'old_habit' });
    expect(await recallHits(target.owner, '/v1/recall', 'forgottenword')).toEqual({
      fields: ['atlas/old_habit'],
      notes: [],
    });

    expect(await target.store.sweep()).toBe(0);
    target.clock.advance(3_600_000 + 1000);
    expect(await target.store.sweep()).toBe(1);
    const log = await allEvents(target.owner, 'beacon');
    expect(log.at(-1)).toMatchObject({ action: 'field_destroyed', asserted_by: 'persona-store' });

    // A deleted persona's log came too: made again on PostgreSQL, its log starts with the deletion made in SQLite.
    expect(
      (await target.owner.call('POST', '/v1/personas', { profile: 'scratch', display_name: 'Scratch again' })).status,
    ).toBe(201);
    const scratch = await allEvents(target.owner, 'scratch');
    expect(scratch.map((e) => (e as unknown as { action: string }).action)).toEqual([
      'persona_deleted',
      'persona_created',
    ]);
  });

  it('run again after a success, says everything is already there and changes nothing', async () => {
    const url = await server.createDatabase();
    expect((await cli(['move-in', '--from', source.dataDir, '--to', url])).exitCode).toBe(0);
    const counts = await rowCounts(url);
    const again = await cli(['move-in', '--from', join(source.dataDir, 'persona-store.db'), '--to', url]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toContain('Everything is already there; nothing was changed.');
    expect(again.stdout).toContain('already there, left as it is: "atlas"');
    expect(await rowCounts(url)).toEqual(counts);
    const target = await storeOn(url);
    expect(await everything(target.owner)).toEqual(before.owner);
  });

  it('refuses when the target has another persona of the same account and profile, saying what to do, and writes nothing (also when run again)', async () => {
    const url = await server.createDatabase();
    const target = await storeOn(url);
    expect(
      (
        await target.owner.call('POST', '/v1/personas', {
          profile: 'beacon',
          display_name: 'Made on the other computer',
        })
      ).status,
    ).toBe(201);
    const counts = await rowCounts(url);
    for (let run = 0; run < 2; run++) {
      const refused = await cli(['move-in', '--from', source.dataDir, '--to', url]);
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toContain('Nothing was copied');
      expect(refused.stderr).toContain('"beacon"');
      expect(refused.stderr).toMatch(/delete or rename the profile/);
      expect(await rowCounts(url)).toEqual(counts);
    }
    expect((await target.owner.call('GET', '/v1/personas/atlas')).status).toBe(404);
  });

  it('gives the rows to another account with --account, one source account at a time', async () => {
    const url = await server.createDatabase();
    const data = await readSource(sourceFile(source.dataDir));
    const laptopToken = await identity.mint(await identity.addAccount('laptop'), 'persona');
    const laptopAccount = JSON.parse(Buffer.from(laptopToken.split('.')[1]!, 'base64url').toString()).sub as string;
    const engine = await openPostgresEngine({ url, poolSize: 2, ssl: false, connectTimeoutMs: 10_000 });
    try {
      // The file holds two accounts: giving both to one would merge two people's personas.
      await expect(moveIn(data, engine, { account: laptopAccount, limits: LIMITS })).rejects.toThrow(
        /--source-account/,
      );
      expect(await rowCounts(url)).toEqual({ personas: 0, fields: 0, notes: 0, events: 0 });
      const report = await moveIn(data, engine, {
        sourceAccount: accountOf(owner),
        account: laptopAccount,
        limits: LIMITS,
      });
      expect(report.copied.map((p) => p.profile).sort()).toEqual(['atlas', 'beacon']);
    } finally {
      await engine.close();
    }
    const target = await storeOn(url);
    const laptop = new Client(target.store.url, laptopToken);
    const moved = await everything(laptop);
    expect(moved.personas).toEqual(before.owner.personas);
    expect((await target.owner.call('GET', '/v1/personas')).body).toEqual({ personas: [], next_after: null });
    expect((await target.other.call('GET', '/v1/personas')).body).toEqual({ personas: [], next_after: null });
  });

  it('puts the rows under the name PERSONA_SHARED_ACCOUNTS gives the account, where the person\u2019s other machine finds them', async () => {
    const url = await server.createDatabase();
    const run = await cli(['move-in', '--from', source.dataDir, '--to', url], {
      PERSONA_SHARED_ACCOUNTS: `${accountOf(owner)}=alice`,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/copied "atlas" \(account [^)]*alice\)/);
    // The other machine: an identity service of its own, whose local account has another id, given the same shared name.
    const desktop = await startTestIdentity();
    try {
      const token = await desktop.mint(desktop.localCredential, 'persona');
      const store = await startPersonaStore(
        {
          PERSONA_DATA_DIR: source.dataDir,
          PERSONA_PORT: '0',
          ...desktop.trust('PERSONA_'),
          PERSONA_LOG_LEVEL: 'silent',
          PERSONA_DATABASE_URL: url,
          PERSONA_FORGET_MODE: 'destroy_after_grace',
          PERSONA_GRACE_PERIOD_SECONDS: '3600',
          PERSONA_SHARED_ACCOUNTS: `${accountOf(new Client('', token))}=alice`,
        },
        undefined,
      );
      stores.push(store);
      expect(await everything(new Client(store.url, token))).toEqual(before.owner);
    } finally {
      await desktop.close();
    }
    const again = await cli(['move-in', '--from', source.dataDir, '--to', url], {
      PERSONA_SHARED_ACCOUNTS: `${accountOf(owner)}=alice`,
    });
    expect(again.stdout).toContain('Everything is already there; nothing was changed.');
  });

  it('says what is wrong with --from and --to, and --help says how to use it', async () => {
    const missing = await cli([
      'move-in',
      '--from',
      join(source.dataDir, 'nothing-here'),
      '--to',
      'postgres://u:p@127.0.0.1:1/x',
    ]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain('--from takes the persona store');
    const noTarget = await cli(['move-in', '--from', source.dataDir]);
    expect(noTarget.exitCode).toBe(2);
    expect(noTarget.stderr).toContain('--to postgres://... or PERSONA_DATABASE_URL');
    const badTarget = await cli(['move-in', '--from', source.dataDir, '--to', 'mysql://x']);
    expect(badTarget.exitCode).toBe(2);
    expect(badTarget.stderr).toContain('--to takes a postgres://');
    const help = await cli(['--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('move-in [--from <data folder or file>]');
    expect(help.stdout).toContain('import <export.json>');
  });
});
