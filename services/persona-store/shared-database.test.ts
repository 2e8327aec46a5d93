import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { decodeJwt } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIdentity, tempDir, type TestIdentity } from '../../test/support/identity.ts';
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test/support/postgres.ts';
import { freePort, spawnService, type ServiceProcess } from '../../test/support/process.ts';
import { propertyOptions, reportSeedOnFailure } from '../../test/support/seed.ts';
import { startPersonaStore, type PersonaStore } from './service.ts';
import { Client, field, note } from './test-support/harness.ts';

reportSeedOnFailure();

/**
 * Several copies of the app on one PostgreSQL database: what a person with two computers does. Each
 * "machine" is a real identity service of its own (whose account is "local", as on every machine, with an
 * id of its own) and a real persona-store process (`npm run service -- persona-store`'s program) pointed at
 * the same database with the same login, each naming its local account's id in PERSONA_SHARED_ACCOUNTS
 * under one shared name.
 * PostgreSQL only: a SQLite file belongs to the one process that opened it.
 */
const skip = postgresUnavailable();
if (skip) console.warn(`persona store shared-database tests skipped: ${skip}`);

interface Machine {
  identity: TestIdentity;
  /** The machine's persona store, holding a token of the machine's local account. */
  c: Client;
  close(): Promise<void>;
}

describe.skipIf(skip !== undefined)(
  `several copies of the app on one PostgreSQL database${skip ? ` (skipped: ${skip})` : ''}`,
  () => {
    let server: PostgresServer;
    let databaseUrl: string;
    const machines: Machine[] = [];

    /** A machine whose persona store is a real child process on `url`. */
    async function processMachine(url: string, sharedName: string): Promise<Machine> {
      const identity = await startTestIdentity();
      const token = await identity.mint(identity.localCredential, 'persona');
      const dataDir = tempDir('persona-shared');
      const port = await freePort();
      const child: ServiceProcess = await spawnService(
        'persona-store',
        {
          PERSONA_PORT: String(port),
          PERSONA_DATA_DIR: dataDir,
          ...identity.trust('PERSONA_'),
          PERSONA_LOG_LEVEL: 'warn',
          PERSONA_DATABASE_URL: url,
          PERSONA_SHARED_ACCOUNTS: `${decodeJwt(token).sub!}=${sharedName}`,
          PERSONA_PIN_CAP_FIELDS: '1000',
          PERSONA_PIN_CAP_NOTES: '1000',
        },
        port,
      );
      const machine = {
        identity,
        c: new Client(child.url, token),
        async close() {
          expect(await child.stop('SIGTERM')).toBe(0);
          await identity.close();
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
      machines.push(machine);
      return machine;
    }

    /** A machine whose persona store runs in this process (cheaper; the same startPersonaStore the program calls). */
    async function inProcessMachine(url: string, sharedName?: string): Promise<Machine> {
      const identity = await startTestIdentity();
      const token = await identity.mint(identity.localCredential, 'persona');
      const dataDir = tempDir('persona-shared');
      const shared: Record<string, string> = sharedName
        ? { PERSONA_SHARED_ACCOUNTS: `${decodeJwt(token).sub!}=${sharedName}` }
        : {};
      const store: PersonaStore = await startPersonaStore({
        PERSONA_PORT: '0',
        PERSONA_DATA_DIR: dataDir,
        ...identity.trust('PERSONA_'),
        PERSONA_LOG_LEVEL: 'silent',
        PERSONA_DATABASE_URL: url,
        ...shared,
      });
      const machine = {
        identity,
        c: new Client(store.url, token),
        async close() {
          await store.close();
          await identity.close();
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
      machines.push(machine);
      return machine;
    }

    let laptop: Machine;
    let desktop: Machine;

    beforeAll(async () => {
      server = await startPostgres();
      databaseUrl = await server.createDatabase();
      [laptop, desktop] = await Promise.all([
        processMachine(databaseUrl, 'ada-home'),
        processMachine(databaseUrl, 'ada-home'),
      ]);
    });
    afterAll(async () => {
      for (const m of machines) await m.close();
      await server?.stop();
    });

    interface Event {
      id: number;
      action: string;
      target_kind: string;
      target: string;
    }

    async function allEvents(c: Client, profile: string): Promise<Event[]> {
      const out: Event[] = [];
      let after = 0;
      for (;;) {
        const page = await c.call<{ events: Event[]; next_after: number | null }>(
          'GET',
          `/v1/personas/${profile}/events?after=${after}`,
        );
        expect(page.status).toBe(200);
        out.push(...page.body.events);
        if (page.body.next_after === null) return out;
        after = page.body.next_after;
      }
    }

    describe('two processes writing the same fields and notes at once', () => {
      const KEYS = ['city', 'mood', 'plan'];
      type Op =
        | { op: 'put'; key: string; pinned: boolean }
        | { op: 'revise'; note: number }
        | { op: 'add'; idempotency: number };
      const opArb: fc.Arbitrary<Op> = fc.oneof(
        fc.record({ op: fc.constant('put' as const), key: fc.constantFrom(...KEYS), pinned: fc.boolean() }),
        fc.record({ op: fc.constant('revise' as const), note: fc.nat(1) }),
        fc.record({ op: fc.constant('add' as const), idempotency: fc.nat(2) }),
      );
      let run = 0;

      it('lose no update, give every change its own revision, one above the last, and write exactly one change-log entry per change', async () => {
        await fc.assert(
          fc.asyncProperty(
            fc.array(opArb, { minLength: 1, maxLength: 12 }),
            fc.array(opArb, { minLength: 1, maxLength: 12 }),
            async (laptopOps, desktopOps) => {
              const profile = `shared${++run}`;
              // Both machines create the persona at once: one wins, the other is told it exists.
              const created = await Promise.all(
                [laptop, desktop].map((m) => m.c.call('POST', '/v1/personas', { profile, display_name: 'Shared' })),
              );
              expect(created.map((r) => r.status).sort()).toEqual([201, 409]);
              const notes: string[] = [];
              for (const m of [laptop, desktop])
                notes.push(
                  (await m.c.call('POST', `/v1/personas/${profile}/notes`, note(`a note from ${notes.length}`))).body
                    .id as string,
                );

              // Every write carries a value no other write carries, so each one is a change.
              const fieldRevisions = new Map<string, { revision: number; value: string }[]>();
              const noteRevisions = new Map<string, { revision: number; content: string }[]>();
              const added = new Map<string, string[]>();
              const send = async (m: Machine, name: string, ops: Op[]) => {
                // Each machine sends its writes three at a time, so writes interleave within a machine as well as across.
                const queue = ops.map((op, i) => ({ op, i }));
                const worker = async () => {
                  for (let next = queue.shift(); next; next = queue.shift()) {
                    const { op, i } = next;
                    const unique = `${name}-${run}-${i}`;
                    if (op.op === 'put') {
                      const r = await m.c.call(
                        'PUT',
                        `/v1/personas/${profile}/fields/${op.key}`,
                        field(unique, { pinned: op.pinned }),
                      );
                      expect(r.status, r.text).toBe(200);
                      fieldRevisions.set(op.key, [
                        ...(fieldRevisions.get(op.key) ?? []),
                        { revision: r.body.revision as number, value: unique },
                      ]);
                    } else if (op.op === 'revise') {
                      const id = notes[op.note]!;
                      const r = await m.c.call('PATCH', `/v1/personas/${profile}/notes/${id}`, { content: unique });
                      expect(r.status, r.text).toBe(200);
                      noteRevisions.set(id, [
                        ...(noteRevisions.get(id) ?? []),
                        { revision: r.body.revision as number, content: unique },
                      ]);
                    } else {
                      const key = `idem-${run}-${op.idempotency}`;
                      // Every sender of a key sends the same note, as a retry does (another note under it is refused).
                      const r = await m.c.call('POST', `/v1/personas/${profile}/notes`, note(`a note sent as ${key}`), {
                        'idempotency-key': key,
                      });
                      expect([200, 201], r.text).toContain(r.status);
                      added.set(key, [...(added.get(key) ?? []), r.body.id as string]);
                    }
                  }
                };
                await Promise.all([worker(), worker(), worker()]);
              };
              await Promise.all([send(laptop, 'laptop', laptopOps), send(desktop, 'desktop', desktopOps)]);

              const events = await allEvents(laptop.c, profile);
              expect(await allEvents(desktop.c, profile)).toEqual(events); // one persona, one change log
              const ids = events.map((e) => e.id);
              expect(ids).toEqual([...ids].sort((a, b) => a - b));
              for (const [key, writes] of fieldRevisions) {
                // Revisions 1..n, each given to exactly one write: none lost, none given twice.
                const revisions = writes.map((w) => w.revision).sort((a, b) => a - b);
                expect(revisions, key).toEqual(revisions.map((_, i) => i + 1));
                const stored = await desktop.c.call('GET', `/v1/personas/${profile}/fields/${key}`);
                const last = writes.find((w) => w.revision === writes.length)!;
                expect(stored.body, key).toMatchObject({ revision: writes.length, value: last.value });
                expect(events.filter((e) => e.target_kind === 'field' && e.target === key)).toHaveLength(writes.length);
              }
              for (const [id, writes] of noteRevisions) {
                const revisions = writes.map((w) => w.revision).sort((a, b) => a - b);
                expect(revisions, id).toEqual(revisions.map((_, i) => i + 2));
                const stored = await laptop.c.call('GET', `/v1/personas/${profile}/notes/${id}`);
                expect(stored.body).toMatchObject({
                  revision: writes.length + 1,
                  content: writes.find((w) => w.revision === writes.length + 1)!.content,
                });
                expect(events.filter((e) => e.target === id).map((e) => e.action)).toEqual([
                  'note_added',
                  ...writes.map(() => 'note_revised'),
                ]);
              }
              // An Idempotency-Key sent by both machines at once made one note, answered to every sender.
              for (const [key, answers] of added) {
                expect(new Set(answers).size, key).toBe(1);
                expect(events.filter((e) => e.target === answers[0]).map((e) => e.action)).toEqual(['note_added']);
              }
              const block = await laptop.c.call('GET', `/v1/personas/${profile}`);
              expect(block.body).toMatchObject({
                field_count: fieldRevisions.size,
                note_count: notes.length + added.size,
              });
              expect(events.filter((e) => e.action === 'persona_created')).toHaveLength(1);
              expect(events).toHaveLength(
                1 +
                  notes.length +
                  added.size +
                  [...fieldRevisions.values(), ...noteRevisions.values()].reduce((n, w) => n + w.length, 0),
              );
            },
          ),
          propertyOptions({ numRuns: 12 }),
        );
        // Twelve rounds of up to 24 writes and their checks: a generous backstop for a loaded machine, not a window.
      }, 300_000);
    });

    describe('accounts across machines', () => {
      it('a person\u2019s two machines, one login, each naming its local account under one shared name, see one persona', async () => {
        expect((await laptop.c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' })).status).toBe(201);
        const written = await laptop.c.call(
          'POST',
          '/v1/personas/ada/notes',
          note('written on the laptop about the harbour'),
        );
        expect(written.status).toBe(201);
        // The desktop's token comes from another identity service, with other keys, for an account of the same name.
        expect(desktop.identity.url).not.toBe(laptop.identity.url);
        const seen = await desktop.c.call<{ notes: { id: string }[] }>('GET', '/v1/personas/ada/notes');
        expect(seen.body.notes.map((n) => n.id)).toEqual([written.body.id]);
        expect((await desktop.c.call<{ notes: unknown[] }>('GET', '/v1/recall?q=harbour')).body.notes).toHaveLength(1);
        // A laptop token is not accepted by the desktop: each store trusts its own machine's identity service.
        expect((await new Client(desktop.c.url, laptop.c.token).call('GET', '/v1/personas/ada')).status).toBe(401);
      });

      it('a machine on the same login that names no shared account keeps its account apart (its account id is its own)', async () => {
        const unshared = await inProcessMachine(databaseUrl);
        expect((await unshared.c.call<{ personas: unknown[] }>('GET', '/v1/personas')).body.personas).toEqual([]);
        expect((await unshared.c.call('GET', '/v1/personas/ada')).status).toBe(404);
        expect((await unshared.c.call<{ notes: unknown[] }>('GET', '/v1/recall?q=harbour')).body.notes).toEqual([]);
      });

      it('two people sharing the server, each with a login of their own, never see each other\u2019s rows, though both accounts are "local" and both chose the same shared name', async () => {
        const other = await inProcessMachine(await server.createLogin(databaseUrl), 'ada-home');
        await laptop.c.call('PUT', '/v1/personas/ada/fields/secret_garden', field('behind the shed'));
        // The other person has no persona, finds nothing, and may create a persona of the same profile, which stays theirs.
        expect((await other.c.call<{ personas: unknown[] }>('GET', '/v1/personas')).body.personas).toEqual([]);
        expect((await other.c.call('GET', '/v1/personas/ada')).status).toBe(404);
        expect(
          (await other.c.call<{ fields: unknown[]; notes: unknown[] }>('GET', '/v1/recall?q=harbour')).body,
        ).toEqual({ fields: [], notes: [] });
        expect(
          (await other.c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Another Ada' })).status,
        ).toBe(201);
        expect(
          (await other.c.call('POST', '/v1/personas/ada/notes', note('the other person\u2019s harbour'))).status,
        ).toBe(201);
        expect(
          (await laptop.c.call<{ persona: { display_name: string } }>('GET', '/v1/personas/ada')).body.persona
            .display_name,
        ).toBe('Ada');
        expect((await laptop.c.call<{ notes: unknown[] }>('GET', '/v1/recall?q=harbour')).body.notes).toHaveLength(1);
        expect((await other.c.call<{ notes: unknown[] }>('GET', '/v1/recall?q=harbour')).body.notes).toHaveLength(1);
        expect(
          (await other.c.call<{ events: { action: string }[] }>('GET', '/v1/personas/ada/events')).body.events.map(
            (e) => e.action,
          ),
        ).toEqual(['persona_created', 'note_added']);

        // And PostgreSQL itself keeps them apart: the other login may not read the first one's tables.
        const firstLogin = decodeURIComponent(new URL(databaseUrl).username);
        const peer = new pg.Client({ connectionString: await server.createLogin(databaseUrl) });
        await peer.connect();
        try {
          await expect(peer.query(`SELECT content FROM "${firstLogin}".notes`)).rejects.toThrow(
            /permission denied for schema/,
          );
        } finally {
          await peer.end();
        }
      });
    });
  },
);
