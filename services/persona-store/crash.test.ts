import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIdentity, tempDir, type TestIdentity } from '../../test/support/identity.ts';
import { freePort, spawnService, type ServiceProcess } from '../../test/support/process.ts';
import { DATABASE_FILE } from './service.ts';
import { Client, field, forEachEngine, note, postgresServer } from './test-support/harness.ts';

let identity: TestIdentity;
let dataDir: string;
let child: ServiceProcess | undefined;

beforeAll(async () => {
  identity = await startTestIdentity();
  dataDir = tempDir('persona-crash');
});
afterAll(async () => {
  if (child?.child.exitCode === null) await child.stop('SIGKILL');
  await identity?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(database: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  return spawnService(
    'persona-store',
    {
      PERSONA_PORT: String(port),
      PERSONA_DATA_DIR: dataDir,
      ...identity.trust('PERSONA_'),
      PERSONA_LOG_LEVEL: 'warn',
      ...database,
    },
    port,
  );
}

// On both engines every answered write survives the kill. The file checks (the WAL as the kill left it,
// integrity_check) are SQLite's: on PostgreSQL the app holds no file, a commit is the server's, and what is
// checked there instead is that the live counts the triggers keep agree with the rows.
forEachEngine((engine) =>
  describe('crash durability', () => {
    it('keeps every write answered 2xx when the process is killed with SIGKILL mid-stream, and the file passes integrity_check', async () => {
      const token = await identity.mint(identity.localCredential, 'persona');
      const database: Record<string, string> =
        engine.name === 'postgres' ? { PERSONA_DATABASE_URL: await (await postgresServer()).createDatabase() } : {};
      child = await start(database);
      const c = new Client(child.url, token);
      expect((await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' })).status).toBe(201);

      const ackedNotes = new Map<string, string>();
      const ackedFields = new Map<string, number>();
      let stop = false;
      let sent = 0;
      // The kill comes when 300 writes have been answered: an event the writers report, not a moment on the clock.
      let reached300!: () => void;
      const acked300 = new Promise<void>((resolve) => (reached300 = resolve));
      const acked = () => {
        if (ackedNotes.size + ackedFields.size >= 300) reached300();
      };
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          sent++;
          try {
            if (i % 2 === 0) {
              const content = `writer ${w} note ${i} about durable storage`;
              const r = await c.call('POST', '/v1/personas/ada/notes', note(content));
              if (r.status === 201) ackedNotes.set(r.body.id as string, content);
              acked();
            } else {
              const key = `w${w}_k${i % 20}`;
              const r = await c.call('PUT', `/v1/personas/ada/fields/${key}`, field(i));
              if (r.status === 200) ackedFields.set(key, i);
              acked();
            }
          } catch {
            return; // the connection died with the process: this write was never answered
          }
        }
      };
      const writers = [0, 1, 2, 3].map(writer);
      await acked300;
      expect(await child.stop('SIGKILL')).toBe('SIGKILL');
      stop = true;
      await Promise.all(writers);
      expect(sent).toBeGreaterThan(300);

      // The file as SIGKILL left it, before any restart: the WAL the process left is there to be read.
      // Read-only, so that this check neither checkpoints that WAL nor removes it: the restart below
      // recovers from exactly what the kill left.
      const file = join(dataDir, DATABASE_FILE);
      if (engine.name === 'sqlite') {
        expect(existsSync(`${file}-wal`)).toBe(true);
        const walBefore = readFileSync(`${file}-wal`);
        expectIntact(new Database(file, { readonly: true, fileMustExist: true }), { ftsCommands: false });
        expect(readFileSync(`${file}-wal`).equals(walBefore)).toBe(true);
      }

      child = await start(database);
      const after = new Client(child.url, token);
      const notes: Record<string, string> = {};
      let cursor = '0';
      for (;;) {
        const page = await after.call<{ notes: { id: string; content: string }[]; next_after: string | null }>(
          'GET',
          `/v1/personas/ada/notes?after=${cursor}&limit=100`,
        );
        for (const n of page.body.notes) notes[n.id] = n.content;
        if (!page.body.next_after) break;
        cursor = page.body.next_after;
      }
      for (const [id, content] of ackedNotes) expect(notes[id], id).toBe(content);
      for (const [key, value] of ackedFields) {
        const r = await after.call('GET', `/v1/personas/ada/fields/${key}`);
        // A later write to the same key may have landed without its answer arriving: never an older value.
        expect(r.body.value as number, key).toBeGreaterThanOrEqual(value);
      }
      expect(
        (await after.call<{ notes: unknown[] }>('GET', '/v1/personas/ada/recall?q=durable&limit=5')).body.notes.length,
      ).toBe(5);
      const fields = await after.call<{ fields: unknown[] }>('GET', '/v1/personas/ada/fields?limit=100');
      expect((await after.call('GET', '/v1/personas/ada')).body).toMatchObject({
        note_count: Object.keys(notes).length,
        field_count: fields.body.fields.length,
      });
      expect(await child.stop('SIGTERM')).toBe(0);

      if (engine.name === 'sqlite') expectIntact(new Database(file), { ftsCommands: true });
      // Two service starts and 300 writes: a generous backstop for a loaded machine, not a window.
    }, 300_000);
  }),
);

/**
 * PRAGMA integrity_check (which also runs each FTS5 table's own check) is ok, and the notes the file
 * holds can be read. FTS5's 'integrity-check' command is a write, so it runs only on a writable handle.
 */
function expectIntact(db: Database.Database, { ftsCommands }: { ftsCommands: boolean }): void {
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect((db.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n).toBeGreaterThan(0);
    if (ftsCommands) {
      expect(() => db.exec("INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 0)")).not.toThrow();
      expect(() => db.exec("INSERT INTO fields_fts (fields_fts, rank) VALUES ('integrity-check', 0)")).not.toThrow();
    }
  } finally {
    db.close();
  }
}
