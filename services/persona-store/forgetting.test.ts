import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { DATABASE_FILE } from './service.ts';
import { field, note, startTestbed, type Client, type Testbed } from './test-support/harness.ts';

let bed: Testbed | undefined;
afterEach(async () => {
  await bed?.close();
  bed = undefined;
});

const newMarker = () => `qqz${randomBytes(8).toString('hex')}`;

/** Where the marker's bytes are: the database file, its WAL, and the terms of both full-text indexes. */
function traces(dataDir: string, marker: string): string[] {
  const found: string[] = [];
  for (const suffix of ['', '-wal', '-journal']) {
    const file = join(dataDir, DATABASE_FILE + suffix);
    if (existsSync(file) && readFileSync(file).includes(Buffer.from(marker))) found.push(`file${suffix || ' (main)'}`);
  }
  const rw = new Database(':memory:');
  try {
    rw.exec(`ATTACH '${join(dataDir, DATABASE_FILE)}' AS store`);
    for (const fts of ['fields_fts', 'notes_fts']) {
      rw.exec(`CREATE VIRTUAL TABLE temp.vocab_${fts} USING fts5vocab(store, ${fts}, 'row')`);
      const terms = rw.prepare(`SELECT term FROM temp.vocab_${fts}`).pluck().all() as string[];
      if (terms.some((t) => t.includes(marker))) found.push(`${fts} terms`);
      const shadow = rw.prepare(`SELECT block FROM store.${fts}_data`).pluck().all() as Buffer[];
      if (shadow.some((b) => b && Buffer.from(b).includes(Buffer.from(marker)))) found.push(`${fts}_data`);
    }
  } finally {
    rw.close();
  }
  return found;
}

/** Writes the marker into every place content goes: a field's key, description and value, a note, and (kept) replaced values. */
async function writeMarker(c: Client, profile: string, marker: string): Promise<{ key: string; noteId: string }> {
  await c.call('POST', '/v1/personas', { profile, display_name: 'Forgetful' });
  await c.call('PUT', `/v1/personas/${profile}/fields/unrelated`, field('an unrelated value that stays'));
  await c.call('POST', `/v1/personas/${profile}/notes`, note('an unrelated note that stays'));
  const key = `${marker}_key`;
  await c.call('PUT', `/v1/personas/${profile}/fields/${key}`, field({ first: `${marker} one` }, { description: `about ${marker}` }));
  await c.call('PUT', `/v1/personas/${profile}/fields/${key}`, field({ second: `${marker} two` }, { description: `about ${marker}` }));
  const n = await c.call('POST', `/v1/personas/${profile}/notes`, note(`first words ${marker}`));
  await c.call('PATCH', `/v1/personas/${profile}/notes/${n.body.id as string}`, { content: `revised words ${marker} again` });
  const log = await c.call('GET', `/v1/personas/${profile}/events`);
  expect(log.text).toContain(marker); // the replaced values are in the change log before destruction
  return { key, noteId: n.body.id as string };
}

async function expectGone(b: Testbed, profile: string, marker: string): Promise<void> {
  expect(traces(b.dataDir, marker)).toEqual([]);
  const exported = await b.owner.call('GET', `/v1/personas/${profile}/export`);
  const log = await b.owner.call('GET', `/v1/personas/${profile}/events?limit=1000`);
  expect(exported.text).not.toContain(marker);
  expect(log.text).not.toContain(marker);
}

describe('destroyed means gone', () => {
  it('destroy at once leaves no trace in the database file, its WAL, the full-text index, the change log or exports', async () => {
    bed = await startTestbed({ PERSONA_FORGET_MODE: 'destroy_now', PERSONA_KEEP_REPLACED_VALUES: 'true' });
    const marker = newMarker();
    const { key, noteId } = await writeMarker(bed.owner, 'ada', marker);
    expect(traces(bed.dataDir, marker).length).toBeGreaterThan(0);
    expect((await bed.owner.call('DELETE', `/v1/personas/ada/fields/${key}`)).body).toEqual({ outcome: 'destroyed' });
    expect((await bed.owner.call('DELETE', `/v1/personas/ada/notes/${noteId}`)).body).toEqual({ outcome: 'destroyed' });
    await expectGone(bed, 'ada', marker);
    const exported = await bed.owner.call<{ fields: unknown[]; notes: unknown[] }>('GET', '/v1/personas/ada/export');
    expect([exported.body.fields.length, exported.body.notes.length]).toEqual([1, 1]);
    const log = await bed.owner.call<{ events: { action: string }[] }>('GET', '/v1/personas/ada/events?action=field_destroyed,note_destroyed');
    expect(log.body.events.map((e) => e.action)).toEqual(['field_destroyed', 'note_destroyed']);
  });

  it('destroy after the grace period: pending entries leave every answer, and the sweeper destroys them when it ends', async () => {
    bed = await startTestbed({
      PERSONA_FORGET_MODE: 'destroy_after_grace',
      PERSONA_GRACE_PERIOD_SECONDS: '1',
      PERSONA_SWEEP_INTERVAL_SECONDS: '1',
      PERSONA_KEEP_REPLACED_VALUES: 'true',
    });
    const marker = newMarker();
    const { key, noteId } = await writeMarker(bed.owner, 'ada', marker);
    expect((await bed.owner.call('DELETE', `/v1/personas/ada/fields/${key}`)).body).toEqual({ outcome: 'pending' });
    expect((await bed.owner.call('DELETE', `/v1/personas/ada/notes/${noteId}`)).body).toEqual({ outcome: 'pending' });
    expect((await bed.owner.call('GET', `/v1/personas/ada/notes/${noteId}`)).status).toBe(404);
    expect((await bed.owner.call<{ notes: unknown[] }>('GET', `/v1/personas/ada/recall?q=${marker}`)).body.notes).toEqual([]);
    for (let i = 0; i < 100; i++) {
      const log = await bed.owner.call<{ events: unknown[] }>('GET', '/v1/personas/ada/events?action=field_destroyed,note_destroyed');
      if (log.body.events.length === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const log = await bed.owner.call<{ events: { asserted_by: string }[] }>('GET', '/v1/personas/ada/events?action=field_destroyed,note_destroyed');
    expect(log.body.events.map((e) => e.asserted_by)).toEqual(['persona-store', 'persona-store']);
    await expectGone(bed, 'ada', marker);
  });

  it('deleting a persona destroys it with everything in it even when the setting is keep', async () => {
    bed = await startTestbed({ PERSONA_FORGET_MODE: 'keep', PERSONA_KEEP_REPLACED_VALUES: 'true' });
    const marker = newMarker();
    const { noteId } = await writeMarker(bed.owner, 'ada', marker);
    // A kept note is in the file until the persona goes.
    expect((await bed.owner.call('DELETE', `/v1/personas/ada/notes/${noteId}`)).body).toEqual({ outcome: 'kept' });
    expect(traces(bed.dataDir, marker).length).toBeGreaterThan(0);
    expect((await bed.owner.call('DELETE', '/v1/personas/ada')).status).toBe(204);
    expect(traces(bed.dataDir, marker)).toEqual([]);
    expect((await bed.owner.call('GET', '/v1/personas/ada')).status).toBe(404);
    // Re-created, the profile's change log starts with the deletion and holds nothing of before.
    await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'Again' });
    const log = await bed.owner.call<{ events: { action: string }[] }>('GET', '/v1/personas/ada/events');
    expect(log.body.events.map((e) => e.action)).toEqual(['persona_deleted', 'persona_created']);
  });

  it('a PUT of a key pending destruction destroys the old field and starts the key afresh', async () => {
    bed = await startTestbed({ PERSONA_FORGET_MODE: 'destroy_after_grace', PERSONA_GRACE_PERIOD_SECONDS: '3600' });
    const marker = newMarker();
    await bed.owner.call('POST', '/v1/personas', { profile: 'ada', display_name: 'A' });
    await bed.owner.call('PUT', '/v1/personas/ada/fields/city', field(`${marker} town`));
    await bed.owner.call('DELETE', '/v1/personas/ada/fields/city');
    const again = await bed.owner.call('PUT', '/v1/personas/ada/fields/city', field('Lisbon'));
    expect(again.body).toMatchObject({ revision: 1, value: 'Lisbon' });
    expect(traces(bed.dataDir, marker)).toEqual([]);
  });
});
