import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { reportSeedOnFailure, seededRandom } from '../../test/support/seed.ts';
import { createLogger } from '../kit/logger.ts';
import { DATABASE_FILE } from './service.ts';
import {
  field,
  forEachEngine,
  note,
  postgresServer,
  startTestbed,
  type Client,
  type Testbed,
} from './test-support/harness.ts';

reportSeedOnFailure();

let bed: Testbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

/**
 * A unique word: "qqz", 20 random hex digits and a final digit, drawn from the file's seed. Ending in a
 * digit, the porter stemmer leaves it whole (a word ending in "e" would be indexed without it).
 */
const random = seededRandom(1);
const newMarker = () => `qqz${Array.from({ length: 20 }, () => random(16).toString(16)).join('')}${random(10)}`;

/**
 * What is searched for in bytes: the marker's last 16 characters. FTS5 leaf pages store a term as the
 * part after the prefix it shares with the term before it, so the whole marker need not be there
 * even when the term is; the random tail always is (no other term shares 8 random hex digits).
 */
const tailOf = (marker: string) => marker.slice(-16);

/** Where content can be, per engine: each is searched byte by byte (and the full-text terms as the index reports them). */
const PLACES = {
  sqlite: [
    'database file',
    'WAL',
    'fields_fts shadow tables',
    'notes_fts shadow tables',
    'fields_fts terms',
    'notes_fts terms',
  ],
  postgres: ['database files', 'tables', 'full-text index', 'full-text terms'],
} as const;
type Place = (typeof PLACES)[keyof typeof PLACES][number];

/** The places of each kind on the testbed's engine, for the tests that name one. */
const placesOf = (b: Testbed) =>
  b.engine === 'sqlite'
    ? ({
        file: 'database file',
        fieldsIndex: 'fields_fts shadow tables',
        notesIndex: 'notes_fts shadow tables',
        fieldsTerms: 'fields_fts terms',
        notesTerms: 'notes_fts terms',
      } as const)
    : ({
        file: 'database files',
        fieldsIndex: 'full-text index',
        notesIndex: 'full-text index',
        fieldsTerms: 'full-text terms',
        notesTerms: 'full-text terms',
      } as const);

/**
 * Where any of the words is, byte for byte: the database file and its WAL as they are on disk, the
 * blobs of both full-text indexes' shadow tables (segment pages in `_data`, leaf keys in `_idx`), and
 * the terms each index reports (fts5vocab).
 */
function sqliteTraces(dataDir: string, words: string[]): Place[] {
  const tails = words.map((w) => Buffer.from(tailOf(w)));
  const holds = (bytes: Buffer) => tails.some((t) => bytes.includes(t));
  const found = new Set<Place>();
  const main = join(dataDir, DATABASE_FILE);
  if (holds(readFileSync(main))) found.add('database file');
  for (const suffix of ['-wal', '-journal'])
    if (existsSync(main + suffix) && holds(readFileSync(main + suffix))) found.add('WAL');
  const db = new Database(':memory:');
  try {
    db.exec(`ATTACH '${main}' AS store`);
    for (const fts of ['fields_fts', 'notes_fts'] as const) {
      const blobs = [
        ...(db.prepare(`SELECT block FROM store.${fts}_data`).pluck().all() as (Buffer | null)[]),
        ...(db.prepare(`SELECT term FROM store.${fts}_idx`).pluck().all() as (Buffer | string)[]),
      ];
      if (blobs.some((b) => b !== null && holds(Buffer.from(b)))) found.add(`${fts} shadow tables`);
      db.exec(`CREATE VIRTUAL TABLE temp.vocab_${fts} USING fts5vocab(store, ${fts}, 'row')`);
      const terms = db.prepare(`SELECT term FROM temp.vocab_${fts}`).pluck().all() as string[];
      if (terms.some((t) => holds(Buffer.from(t)))) found.add(`${fts} terms`);
    }
  } finally {
    db.close();
  }
  return PLACES.sqlite.filter((p) => found.has(p));
}

/**
 * The same on PostgreSQL, in the data folder of the server the test started, after a CHECKPOINT (so the
 * files hold every page the tables hold): every file of the database (`base/<oid>/`: its tables, indexes,
 * TOAST and catalogs, pg_statistic among them, and files a rewrite left behind), the files of the four
 * tables with their TOAST, the files of the two GIN full-text indexes, and the lexemes the tsvector
 * columns hold (ts_stat). The WAL (`pg_wal/`) is not searched: it is the server's log of changes, the
 * operator's to keep or recycle (see the README).
 */
async function postgresTraces(b: Testbed, words: string[]): Promise<Place[]> {
  const server = await postgresServer();
  await server.checkpoint();
  const tails = words.map((w) => Buffer.from(tailOf(w)));
  const holds = (bytes: Buffer) => tails.some((t) => bytes.includes(t));
  const client = new pg.Client({ connectionString: b.databaseUrl, options: '-c search_path="$user"' });
  await client.connect();
  try {
    const found = new Set<Place>();
    const { rows: db } = await client.query<{ oid: string }>(
      'SELECT oid::text FROM pg_database WHERE datname = current_database()',
    );
    const base = join(server.dataDir, 'base', db[0]!.oid);
    if (readdirSync(base).some((f) => holds(readFileSync(join(base, f))))) found.add('database files');
    /** The files of a relation: its path and further 1 GB segments (`path.1`, ...). */
    const filesOf = (path: string) => {
      const [dir, name] = [join(server.dataDir, path, '..'), path.split('/').pop()!];
      return readdirSync(dir)
        .filter((f) => f === name || new RegExp(`^${name}\\.\\d+$`).test(f))
        .map((f) => join(dir, f));
    };
    const relations = async (names: string[], withToast: boolean) => {
      const { rows } = await client.query<{ path: string }>(
        `SELECT pg_relation_filepath(c.oid) AS path FROM pg_class c WHERE c.oid = ANY($1::regclass[])
         ${withToast ? 'UNION SELECT pg_relation_filepath(t.oid) FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid WHERE c.oid = ANY($1::regclass[])' : ''}`,
        [names],
      );
      return rows.flatMap((r) => filesOf(r.path));
    };
    if ((await relations(['personas', 'fields', 'notes', 'events'], true)).some((f) => holds(readFileSync(f))))
      found.add('tables');
    if ((await relations(['fields_search', 'notes_search'], false)).some((f) => holds(readFileSync(f))))
      found.add('full-text index');
    const { rows: lexemes } = await client.query<{ word: string }>(
      "SELECT word FROM ts_stat('SELECT search FROM fields WHERE search IS NOT NULL') UNION ALL SELECT word FROM ts_stat('SELECT search FROM notes WHERE search IS NOT NULL')",
    );
    if (lexemes.some((l) => holds(Buffer.from(l.word)))) found.add('full-text terms');
    return PLACES.postgres.filter((p) => found.has(p));
  } finally {
    await client.end();
  }
}

const traces = (b: Testbed, words: string[]): Promise<Place[]> =>
  b.engine === 'sqlite' ? Promise.resolve(sqliteTraces(b.dataDir, words)) : postgresTraces(b, words);

/**
 * Makes what the engine holds in memory or in its log reach its files, so that a control finds content
 * in every place: on SQLite a PASSIVE checkpoint (the WAL keeps what it copies into the file); on
 * PostgreSQL traces checkpoints anyway.
 */
function checkpoint(b: Testbed): void {
  if (b.engine !== 'sqlite') return;
  const db = new Database(join(b.dataDir, DATABASE_FILE));
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } finally {
    db.close();
  }
}

/** The control: before destruction, every check finds the marker, so an empty answer afterwards means something. */
async function expectEverywhere(b: Testbed, marker: string): Promise<void> {
  checkpoint(b);
  expect(await traces(b, [marker])).toEqual([...PLACES[b.engine]]);
}

interface Written {
  keys: string[];
  noteIds: string[];
}

/**
 * Writes the marker into every place content goes: two fields (key, description, value, a replaced
 * value), two notes (one revised, so a replaced content), and the change log's replaced values.
 */
async function writeMarker(c: Client, profile: string, marker: string): Promise<Written> {
  await c.call('POST', '/v1/personas', { profile, display_name: 'Forgetful' });
  await c.call('PUT', `/v1/personas/${profile}/fields/unrelated`, field('an unrelated value that stays'));
  await c.call('POST', `/v1/personas/${profile}/notes`, note('an unrelated note that stays'));
  const keys = [`${marker}_key`, `other_${marker}`];
  await c.call(
    'PUT',
    `/v1/personas/${profile}/fields/${keys[0]}`,
    field({ first: `${marker} one` }, { description: `about ${marker}` }),
  );
  await c.call(
    'PUT',
    `/v1/personas/${profile}/fields/${keys[0]}`,
    field({ second: `${marker} two` }, { description: `about ${marker}` }),
  );
  await c.call('PUT', `/v1/personas/${profile}/fields/${keys[1]}`, field([marker], { description: 'a second field' }));
  const first = await c.call('POST', `/v1/personas/${profile}/notes`, note(`first words ${marker}`));
  await c.call('PATCH', `/v1/personas/${profile}/notes/${first.body.id as string}`, {
    content: `revised words ${marker} again`,
  });
  const second = await c.call('POST', `/v1/personas/${profile}/notes`, note(`another note about ${marker}`));
  const log = await c.call('GET', `/v1/personas/${profile}/events`);
  expect(log.text).toContain(marker); // the replaced values are in the change log before destruction
  return { keys, noteIds: [first.body.id as string, second.body.id as string] };
}

async function forgetAll(c: Client, profile: string, w: Written, outcome: string): Promise<void> {
  for (const key of w.keys)
    expect((await c.call('DELETE', `/v1/personas/${profile}/fields/${key}`)).body).toEqual({ outcome });
  for (const id of w.noteIds)
    expect((await c.call('DELETE', `/v1/personas/${profile}/notes/${id}`)).body).toEqual({ outcome });
}

async function expectGone(b: Testbed, profile: string, words: string[]): Promise<void> {
  expect(await traces(b, words)).toEqual([]);
  const exported = await b.owner.call('GET', `/v1/personas/${profile}/export`);
  const log = await b.owner.call('GET', `/v1/personas/${profile}/events`);
  for (const w of words) {
    expect(exported.text).not.toContain(tailOf(w));
    expect(log.text).not.toContain(tailOf(w));
  }
}

/** A logger whose lines a test can wait for: the sweeper says when it destroyed something. */
function watchedLogger() {
  let lines = '';
  const waiting: { pattern: RegExp; resolve: () => void }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines += chunk.toString();
      for (const w of waiting.filter((w) => w.pattern.test(lines))) w.resolve();
      done();
    },
  });
  return {
    logger: createLogger('persona-store', 'info', sink),
    text: () => lines,
    /** Resolves once a line matching `pattern` has been logged (the test's own timeout is the backstop). */
    line: (pattern: RegExp) =>
      new Promise<void>((resolve) => (pattern.test(lines) ? resolve() : waiting.push({ pattern, resolve }))),
  };
}

// Every test on both engines: the byte checks are each engine's own (PLACES).
forEachEngine(() => {
  describe('destroyed means gone', () => {
    it('destroy at once leaves no trace in the database file, its WAL, the full-text index, the change log, exports or the log lines', async () => {
      const lines = watchedLogger();
      bed = await startTestbed(
        { PERSONA_FORGET_MODE: 'destroy_now', PERSONA_KEEP_REPLACED_VALUES: 'true' },
        undefined,
        lines.logger,
      );
      const marker = newMarker();
      const written = await writeMarker(bed.owner, 'ada', marker);
      await expectEverywhere(bed, marker);
      await forgetAll(bed.owner, 'ada', written, 'destroyed');
      await expectGone(bed, 'ada', [marker]);
      // Every request was logged (its route named), and no line names the keys that held the marker.
      await lines.line(/"path":"\/v1\/personas\/\{profile\}\/fields\/\{key\}"/);
      expect(lines.text()).not.toContain(tailOf(marker));
      const exported = await bed.owner.call<{ fields: unknown[]; notes: unknown[] }>('GET', '/v1/personas/ada/export');
      expect([exported.body.fields.length, exported.body.notes.length]).toEqual([1, 1]);
      const log = await bed.owner.call<{ events: { action: string }[] }>(
        'GET',
        '/v1/personas/ada/events?action=field_destroyed,note_destroyed',
      );
      expect(log.body.events.map((e) => e.action)).toEqual([
        'field_destroyed',
        'field_destroyed',
        'note_destroyed',
        'note_destroyed',
      ]);
    });

    it('destroy after the grace period: pending entries leave every answer, and the sweeper destroys them when it ends', async () => {
      const log = watchedLogger();
      // The sweeper looks every second; the grace period is an hour of the store's clock, which the test moves on.
      bed = await startTestbed(
        {
          PERSONA_FORGET_MODE: 'destroy_after_grace',
          PERSONA_GRACE_PERIOD_SECONDS: '3600',
          PERSONA_SWEEP_INTERVAL_SECONDS: '1',
          PERSONA_KEEP_REPLACED_VALUES: 'true',
        },
        undefined,
        log.logger,
      );
      const marker = newMarker();
      const written = await writeMarker(bed.owner, 'ada', marker);
      await expectEverywhere(bed, marker);
      await forgetAll(bed.owner, 'ada', written, 'pending');
      expect((await bed.owner.call('GET', `/v1/personas/ada/notes/${written.noteIds[0]!}`)).status).toBe(404);
      expect(
        (await bed.owner.call<{ notes: unknown[]; fields: unknown[] }>('GET', `/v1/personas/ada/recall?q=${marker}`))
          .body,
      ).toEqual({ fields: [], notes: [] });
      expect(await traces(bed, [marker])).not.toEqual([]); // pending: not destroyed yet
      bed.clock.advance(3_600_000);
      await log.line(/"destroyed":4,.*grace period ended; entries destroyed/);
      const destroyed = await bed.owner.call<{ events: { asserted_by: string }[] }>(
        'GET',
        '/v1/personas/ada/events?action=field_destroyed,note_destroyed',
      );
      expect(destroyed.body.events.map((e) => e.asserted_by)).toEqual([
        'persona-store',
        'persona-store',
        'persona-store',
        'persona-store',
      ]);
      await expectGone(bed, 'ada', [marker]);
    });

    it('deleting a persona destroys it with everything in it even when the setting is keep', async () => {
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'keep', PERSONA_KEEP_REPLACED_VALUES: 'true' });
      const marker = newMarker();
      const written = await writeMarker(bed.owner, 'ada', marker);
      // A kept field and a kept note stay in the file until the persona goes; the others are live.
      expect((await bed.owner.call('DELETE', `/v1/personas/ada/fields/${written.keys[0]!}`)).body).toEqual({
        outcome: 'kept',
      });
      expect((await bed.owner.call('DELETE', `/v1/personas/ada/notes/${written.noteIds[0]!}`)).body).toEqual({
        outcome: 'kept',
      });
      await expectEverywhere(bed, marker);
      expect((await bed.owner.call('DELETE', '/v1/personas/ada')).status).toBe(204);
      expect(await traces(bed, [marker])).toEqual([]);
      expect((await bed.owner.call('GET', '/v1/personas/ada')).status).toBe(404);
      // Re-created, the profile's change log starts with the deletion and holds nothing of before.
      await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Again' });
      const log = await bed.owner.call<{ events: { action: string }[] }>('GET', '/v1/personas/ada/events');
      expect(log.body.events.map((e) => e.action)).toEqual(['persona_deleted', 'persona_created']);
      expect(log.text).not.toContain(tailOf(marker));
    });

    it('a PUT of a key pending destruction destroys the old field and starts the key afresh', async () => {
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'destroy_after_grace', PERSONA_GRACE_PERIOD_SECONDS: '3600' });
      const marker = newMarker();
      await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'A' });
      await bed.owner.call('PUT', '/v1/personas/ada/fields/city', field(`${marker} town`));
      checkpoint(bed);
      expect(await traces(bed, [marker])).toEqual(
        bed.engine === 'sqlite'
          ? ['database file', 'WAL', 'fields_fts shadow tables', 'fields_fts terms']
          : [...PLACES.postgres],
      );
      await bed.owner.call('DELETE', '/v1/personas/ada/fields/city');
      const again = await bed.owner.call('PUT', '/v1/personas/ada/fields/city', field('Lisbon'));
      expect(again.body).toMatchObject({ revision: 1, value: 'Lisbon' });
      expect(await traces(bed, [marker])).toEqual([]);
    });
  });

  describe('earlier revisions', () => {
    it('destroying a field or note removes the words of every earlier revision from the index, which ordinary updates leave in older segments', async () => {
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'destroy_now' });
      const c = bed.owner;
      const place = placesOf(bed);
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'A' });
      for (let i = 0; i < 30; i++)
        await c.call('POST', '/v1/personas/ada/notes', note(`filler note ${i} about the weather`));
      const fieldWords = Array.from({ length: 6 }, newMarker);
      const noteWords = Array.from({ length: 6 }, newMarker);
      // Each revision carries its own word; after each one, is the word it replaced still in the index's bytes?
      const leftBehind = { fields: [] as string[], notes: [] as string[] };
      await c.call(
        'PUT',
        '/v1/personas/ada/fields/diary',
        field({ today: fieldWords[0] }, { description: `entry ${fieldWords[0]}` }),
      );
      const n = await c.call('POST', '/v1/personas/ada/notes', note(`day ${noteWords[0]}`));
      for (let r = 1; r < 6; r++) {
        await c.call(
          'PUT',
          '/v1/personas/ada/fields/diary',
          field({ today: fieldWords[r] }, { description: `entry ${fieldWords[r]}` }),
        );
        await c.call('PATCH', `/v1/personas/ada/notes/${n.body.id as string}`, { content: `day ${noteWords[r]}` });
        const replaced = await traces(bed, [fieldWords[r - 1]!, noteWords[r - 1]!]);
        // A replaced word is never a live term, whatever its bytes do.
        expect(replaced).not.toContain(place.fieldsTerms);
        expect(replaced).not.toContain(place.notesTerms);
        if ((await traces(bed, [fieldWords[r - 1]!])).includes(place.fieldsIndex))
          leftBehind.fields.push(fieldWords[r - 1]!);
        if ((await traces(bed, [noteWords[r - 1]!])).includes(place.notesIndex))
          leftBehind.notes.push(noteWords[r - 1]!);
      }
      // The control: ordinary updates did leave replaced words in the index's bytes, and the checks see them.
      expect(leftBehind.fields.length).toBeGreaterThan(0);
      expect(leftBehind.notes.length).toBeGreaterThan(0);
      checkpoint(bed);
      expect(await traces(bed, [...leftBehind.fields, ...leftBehind.notes])).toEqual(
        bed.engine === 'sqlite'
          ? ['database file', 'WAL', 'fields_fts shadow tables', 'notes_fts shadow tables']
          : ['database files', 'tables', 'full-text index'],
      );

      expect((await c.call('DELETE', '/v1/personas/ada/fields/diary')).body).toEqual({ outcome: 'destroyed' });
      expect((await c.call('DELETE', `/v1/personas/ada/notes/${n.body.id as string}`)).body).toEqual({
        outcome: 'destroyed',
      });
      expect(await traces(bed, [...fieldWords, ...noteWords])).toEqual([]);
      // What stays is still found.
      expect(
        (await c.call<{ notes: unknown[] }>('GET', '/v1/personas/ada/recall?q=weather&limit=50')).body.notes,
      ).toHaveLength(30);
    });
  });

  describe('forgetting an entry already forgotten applies the person\u2019s current setting', () => {
    it('kept entries are destroyed once the person chooses destroy_now, and scheduled under destroy_after_grace; under keep a second DELETE answers 404', async () => {
      // The sweeper's own timer is left to its default (a minute): the test sweeps when it has moved the clock on.
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'keep', PERSONA_GRACE_PERIOD_SECONDS: '3600' });
      const c = bed.owner;
      await c.call('POST', '/v1/personas', { profile: 'ada', display_name: 'A' });
      const words = { f1: newMarker(), f2: newMarker(), n1: newMarker(), n2: newMarker() };
      await c.call('PUT', '/v1/personas/ada/fields/first', field(`${words.f1} one`));
      await c.call('PUT', '/v1/personas/ada/fields/second', field(`${words.f2} two`));
      const n1 = (await c.call('POST', '/v1/personas/ada/notes', note(`note ${words.n1}`))).body.id as string;
      const n2 = (await c.call('POST', '/v1/personas/ada/notes', note(`note ${words.n2}`))).body.id as string;
      for (const path of ['fields/first', 'fields/second', `notes/${n1}`, `notes/${n2}`]) {
        expect((await c.call('DELETE', `/v1/personas/ada/${path}`)).body).toEqual({ outcome: 'kept' });
        expect((await c.call('DELETE', `/v1/personas/ada/${path}`)).status).toBe(404); // keep: nothing more to do
      }
      checkpoint(bed);
      expect(await traces(bed, Object.values(words))).toContain(placesOf(bed).file);

      await bed.restart({ PERSONA_FORGET_MODE: 'destroy_now' });
      expect((await bed.owner.call('DELETE', '/v1/personas/ada/fields/first')).body).toEqual({ outcome: 'destroyed' });
      expect((await bed.owner.call('DELETE', `/v1/personas/ada/notes/${n1}`)).body).toEqual({ outcome: 'destroyed' });
      expect((await bed.owner.call('DELETE', '/v1/personas/ada/fields/first')).status).toBe(404);
      expect(await traces(bed, [words.f1, words.n1])).toEqual([]);
      expect(await traces(bed, [words.f2, words.n2])).toContain(placesOf(bed).file);

      await bed.restart({ PERSONA_FORGET_MODE: 'destroy_after_grace' });
      expect((await bed.owner.call('DELETE', '/v1/personas/ada/fields/second')).body).toEqual({ outcome: 'pending' });
      expect((await bed.owner.call('DELETE', `/v1/personas/ada/notes/${n2}`)).body).toEqual({ outcome: 'pending' });
      expect(await bed.store.sweep()).toBe(0); // the grace period has not ended
      bed.clock.advance(3_600_000);
      expect(await bed.store.sweep()).toBe(2);
      await expectGone(bed, 'ada', Object.values(words));

      const log = await bed.owner.call<{
        events: { action: string; target_kind: string; changes: string[]; asserted_by: string }[];
      }>('GET', '/v1/personas/ada/events?target_kind=note');
      const byNote = log.body.events.map((e) => `${e.action}:${e.changes.join('+')}:${e.asserted_by}`);
      expect(byNote).toEqual([
        'note_added:content+kind+source+pinned:persona',
        'note_added:content+kind+source+pinned:persona',
        'note_forgotten:kept:persona',
        'note_forgotten:kept:persona',
        'note_destroyed:destroyed:persona',
        'note_forgotten:pending_destruction:persona',
        'note_destroyed:destroyed:persona-store',
      ]);
    });

    it('an entry pending destruction is destroyed at once when the person switches to destroy_now; under destroy_after_grace its schedule is not moved', async () => {
      bed = await startTestbed({ PERSONA_FORGET_MODE: 'destroy_after_grace', PERSONA_GRACE_PERIOD_SECONDS: '3600' });
      const marker = newMarker();
      await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'A' });
      await bed.owner.call('PUT', '/v1/personas/ada/fields/plan', field(`${marker} plan`));
      expect((await bed.owner.call('DELETE', '/v1/personas/ada/fields/plan')).body).toEqual({ outcome: 'pending' });
      expect((await bed.owner.call('DELETE', '/v1/personas/ada/fields/plan')).status).toBe(404);
      await bed.restart({ PERSONA_FORGET_MODE: 'destroy_now' });
      expect((await bed.owner.call('DELETE', '/v1/personas/ada/fields/plan')).body).toEqual({ outcome: 'destroyed' });
      await expectGone(bed, 'ada', [marker]);
      const log = await bed.owner.call<{ events: { action: string; target: string }[] }>(
        'GET',
        '/v1/personas/ada/events?target_kind=field',
      );
      expect(log.body.events.map((e) => `${e.action} ${e.target}`)).toEqual([
        'field_set (destroyed field)',
        'field_forgotten (destroyed field)',
        'field_destroyed (destroyed field)',
      ]);
    });
  });
});
