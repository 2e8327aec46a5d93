import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { databaseAnswers, openDatabase, type Migration } from './sqlite.ts';

interface DB {
  things: { id: number; name: string };
}

const migrations: Migration[] = [
  (db) => db.exec('CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL)'),
  (db) => db.exec('CREATE TABLE parts (thing INTEGER NOT NULL REFERENCES things(id))'),
];

describe('the SQLite opener', () => {
  it('opens in WAL mode with foreign keys and a busy timeout, owner-only, and migrates once', async () => {
    const file = join(tempDir('sqlite'), 'deep', 'x.db');
    const first = openDatabase<DB>(file, migrations);
    expect(first.sqlite.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(first.sqlite.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(first.sqlite.pragma('busy_timeout', { simple: true })).toBe(5000);
    expect(first.sqlite.pragma('user_version', { simple: true })).toBe(2);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await first.db.insertInto('things').values({ id: 1, name: 'a' }).execute();
    // Its write-ahead log and shared-memory files are owner-only too.
    for (const beside of [`${file}-wal`, `${file}-shm`]) expect(statSync(beside).mode & 0o777, beside).toBe(0o600);
    expect(() => first.sqlite.prepare('INSERT INTO parts VALUES (99)').run()).toThrow(/FOREIGN KEY/);
    expect(databaseAnswers(first.sqlite)).toBe(true);
    await first.close();
    expect(databaseAnswers(first.sqlite)).toBe(false);

    const again = openDatabase<DB>(file, migrations);
    expect(await again.db.selectFrom('things').selectAll().execute()).toEqual([{ id: 1, name: 'a' }]);
    await again.close();
  });

  it('refuses a file made by a newer version instead of guessing', async () => {
    const file = join(tempDir('sqlite'), 'x.db');
    await openDatabase<DB>(file, migrations).close();
    expect(() => openDatabase<DB>(file, migrations.slice(0, 1))).toThrow(/newer version/);
  });

  it('rolls a failing migration back whole', async () => {
    const file = join(tempDir('sqlite'), 'x.db');
    const broken: Migration[] = [
      ...migrations,
      (db) => {
        db.exec('CREATE TABLE extra (x)');
        db.exec('THIS IS NOT SQL');
      },
    ];
    expect(() => openDatabase<DB>(file, broken)).toThrow();
    const ok = openDatabase<DB>(file, migrations);
    expect(ok.sqlite.pragma('user_version', { simple: true })).toBe(2);
    expect(ok.sqlite.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'extra'").get()).toEqual({ n: 0 });
    await ok.close();
  });
});
