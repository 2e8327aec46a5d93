import { randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { execa } from 'execa';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir, startTestIdentity, type TestIdentity } from '../../test/support/identity.ts';
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test/support/postgres.ts';
import { ROOT } from '../../test/support/process.ts';
import { openPostgresEngine } from './engines/postgres.ts';
import { moveIn, MoveInRefused, readSource } from './move-in.ts';
import { DATABASE_FILE, startPersonaStore } from './service.ts';
import { Client, field, note, startTestbed } from './test-support/harness.ts';

/**
 * Move-in screens every row of the SQLite file as import screens an export: a file made by a real store,
 * then altered as a hostile program on this computer could alter it, is refused naming the row, with
 * nothing written to PostgreSQL; the file as the store left it moves in, and the store there answers.
 */

vi.setConfig({ testTimeout: 300_000 });
const skip = postgresUnavailable();
if (skip) console.warn(`move-in screening tests skipped: ${skip}`);

const LIMITS = { maxValueBytes: 16384, maxNoteChars: 8000, maxKeyLength: 64 };
let server: PostgresServer;
let identity: TestIdentity;
let clean: string;
let noteId: string;
let owner: Client;
const folder = tempDir('persona-move-in-screen');

/** A copy of the clean file, changed by `alter` (plain SQL on the file, as another program could). */
function hostile(alter: (db: Database.Database) => void): string {
  const file = join(tempDir('persona-hostile'), DATABASE_FILE);
  copyFileSync(clean, file);
  const db = new Database(file);
  alter(db);
  db.close();
  return file;
}

async function rowsOn(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT (SELECT count(*) FROM personas) + (SELECT count(*) FROM fields) + (SELECT count(*) FROM notes) + (SELECT count(*) FROM events) AS n`,
    );
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

describe.skipIf(skip)('move-in screens every row it copies', () => {
  let target: string;

  beforeAll(async () => {
    server = await startPostgres();
    identity = await startTestIdentity();
    const bed = await startTestbed({}, identity);
    owner = bed.owner;
    const ok = (r: { status: number; text: string }) => expect(r.status, r.text).toBeLessThan(300);
    ok(await owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Ada' }));
    ok(await owner.call('PUT', '/v1/personas/ada/fields/colour', field('teal')));
    noteId = (await owner.call<{ id: string }>('POST', '/v1/personas/ada/notes', note('The lamp was lit at dusk.')))
      .body.id;
    // A random Idempotency-Key, as a client makes one: kept by the store, so moved in too.
    ok(
      await owner.call('POST', '/v1/personas/ada/notes', note('The second lamp, at dawn.'), {
        'idempotency-key': randomBytes(32).toString('base64url'),
      }),
    );
    await bed.store.close();
    clean = join(folder, DATABASE_FILE);
    copyFileSync(join(bed.dataDir, DATABASE_FILE), clean);
    await bed.close();
    target = await server.createDatabase();
    // The target's tables exist before the first case, so that "nothing written" reads them.
    await (await openPostgresEngine({ url: target, poolSize: 1, ssl: false, connectTimeoutMs: 10_000 })).close();
  });

  afterAll(async () => {
    await identity?.close();
    await server?.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  const credential = () => identity.localCredential;
  const cases: [string, (db: Database.Database) => void, RegExp[]][] = [
    [
      'a note holding this app\u2019s session credential',
      (db) => db.prepare('UPDATE notes SET content = ? WHERE id = ?').run(`keep ${credential()}`, noteId),
      [/note [0-9a-f-]{36}/, /session credential/],
    ],
    [
      'a note holding a GitHub token',
      (db) => db.prepare('UPDATE notes SET content = ?').run(`token ghp_${'a1B2c3D4'.repeat(5)}`),
      [/note [0-9a-f-]{36}/, /GitHub token/],
    ],
    [
      'a note whose Idempotency-Key is this app\u2019s session credential',
      (db) => db.prepare('UPDATE notes SET idempotency_key = ? WHERE id = ?').run(credential(), noteId),
      [/note [0-9a-f-]{36}/, /session credential/],
    ],
    [
      'a note of an unknown kind',
      (db) => db.prepare(`UPDATE notes SET kind = 'rumour'`).run(),
      [/note [0-9a-f-]{36}/, /kind/],
    ],
    [
      'a field of a negative revision',
      (db) => db.prepare(`UPDATE fields SET revision = -3`).run(),
      [/field "colour"/, /revision/],
    ],
    [
      'a field value nested 5,000 deep',
      (db) => db.prepare('UPDATE fields SET value = ?').run('['.repeat(5000) + ']'.repeat(5000)),
      [/field "colour"/, /64 levels/],
    ],
    [
      'a note of 20 MB',
      (db) => db.prepare('UPDATE notes SET content = ?').run('lamp '.repeat(4_000_000)),
      [/note [0-9a-f-]{36}/, /PERSONA_MAX_NOTE_CHARS/],
    ],
    [
      'a field key no write makes',
      (db) => db.prepare(`UPDATE fields SET key = 'Colour Name'`).run(),
      [/field "Colour Name"/, /key/],
    ],
    [
      'a card with a display name too long',
      (db) => db.prepare('UPDATE personas SET display_name = ?').run('A'.repeat(300)),
      [/persona "ada"/, /display_name/],
    ],
    [
      'a change-log entry keeping a credential as a replaced value',
      (db) =>
        db
          .prepare('UPDATE events SET replaced = ? WHERE id = (SELECT max(id) FROM events)')
          .run(JSON.stringify({ content: `was ${credential()}` })),
      [/change-log entry \d+/, /session credential/],
    ],
    [
      'a change-log entry of an unknown action',
      (db) => db.prepare(`UPDATE events SET action = 'field_stolen'`).run(),
      [/change-log entry \d+/, /action/],
    ],
  ];

  it.each(cases)('%s is refused naming the row, with nothing written', async (_name, alter, says) => {
    const source = await readSource(hostile(alter));
    const engine = await openPostgresEngine({ url: target, poolSize: 2, ssl: false, connectTimeoutMs: 10_000 });
    try {
      const refused = await moveIn(source, engine, { limits: LIMITS }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(MoveInRefused);
      const message = (refused as Error).message;
      for (const pattern of says) expect(message).toMatch(pattern);
      expect(message).toMatch(/^Nothing was copied/);
      expect(message).not.toContain(credential());
      expect(message.length).toBeLessThan(2000);
    } finally {
      await engine.close();
    }
    expect(await rowsOn(target)).toBe(0);
  });

  it('screens a batch of rows before it sends any of them: a credential in a later batch never reaches the server', async () => {
    const secret = `ghp_${randomBytes(27).toString('base64url').replace(/[-_]/g, 'x')}`;
    // More notes than move-in writes at once, the credential in a later batch than the first.
    const source = await readSource(
      hostile((db) => {
        const copy = db.prepare(
          `INSERT INTO notes (id, persona_id, kind, content, revision, source, asserted_by, pinned, state, written_at, revised_at)
           SELECT ?, persona_id, kind, ?, revision, source, asserted_by, pinned, state, written_at, revised_at FROM notes WHERE id = ?`,
        );
        for (let i = 0; i < 1500; i++) copy.run(randomUUID(), i === 1200 ? `keep ${secret}` : `lamp ${i}`, noteId);
      }),
    );
    const engine = await openPostgresEngine({ url: target, poolSize: 2, ssl: false, connectTimeoutMs: 10_000 });
    try {
      const refused = await moveIn(source, engine, { limits: LIMITS }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(MoveInRefused);
      expect((refused as Error).message).toMatch(/note [0-9a-f-]{36}.*GitHub token/);
    } finally {
      await engine.close();
    }
    // The control: a row a rolled-back transaction sent is in the server's files, where the search below finds it.
    const marker = `harbourlight${randomBytes(6).toString('hex')}`;
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO events (account, profile, at, action, target_kind, target, asserted_by, changes) VALUES ('a', 'p', 't', 'note_added', 'note', $1, 'x', '[]')`,
        [marker],
      );
      await client.query('ROLLBACK');
    } finally {
      await client.end();
    }
    expect(await rowsOn(target)).toBe(0);
    await server.checkpoint();
    const held = (text: string) => {
      const bytes = Buffer.from(text);
      return readdirSync(server.dataDir, { recursive: true, withFileTypes: true })
        .filter((f) => f.isFile())
        .some((f) => readFileSync(join(f.parentPath, f.name)).includes(bytes));
    };
    expect(held(marker)).toBe(true);
    expect(held(secret)).toBe(false);
  });

  it('the command line refuses a hostile file (exit 1) and moves the file as the store left it; the store there answers', async () => {
    const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PERSONA_'))) };
    const run = (from: string) =>
      execa(
        process.execPath,
        [
          '--import',
          'tsx',
          join(ROOT, 'services', 'persona-store', 'cli.ts'),
          'move-in',
          '--from',
          from,
          '--to',
          target,
        ],
        { cwd: ROOT, env, extendEnv: false, reject: false },
      );
    const refused = await run(hostile((db) => db.prepare(`UPDATE notes SET kind = 'rumour'`).run()));
    expect(refused.exitCode, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/note [0-9a-f-]{36}/);
    expect(await rowsOn(target)).toBe(0);
    const moved = await run(clean);
    expect(moved.exitCode, moved.stderr).toBe(0);
    const store = await startPersonaStore({
      PERSONA_DATABASE_URL: target,
      PERSONA_PORT: '0',
      PERSONA_DATA_DIR: folder,
      ...identity.trust('PERSONA_'),
      PERSONA_LOG_LEVEL: 'silent',
    });
    try {
      const there = new Client(store.url, owner.token);
      expect((await there.call('GET', '/v1/personas/ada')).status).toBe(200);
      expect((await there.call('GET', `/v1/personas/ada/notes/${noteId}`)).status).toBe(200);
    } finally {
      await store.close();
    }
  });
});
