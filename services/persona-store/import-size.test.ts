import { randomBytes } from 'node:crypto';
import { closeSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { ROOT } from '../../test/support/process.ts';
import { openSqliteEngine } from './engines/sqlite.ts';
import { DATABASE_FILE } from './service.ts';

/**
 * Large export files, through the command line as a child process on a SQLite file: a string larger than
 * any member may hold is refused before anything reads it for credentials (it overflowed the stack), and a
 * file larger than the import reads is refused before it is read, naming the setting. Nothing is written.
 * The memory of a 300 MB import is measured by bench/persona-store/import-memory.ts.
 */

vi.setConfig({ testTimeout: 300_000 });
const folder = tempDir('persona-import-size');
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const at = '2026-11-01T00:00:00.000Z';
const exportOf = (notes: { content: string }[]) => ({
  format: 'persona-export/1',
  persona: {
    profile: 'big',
    display_name: 'Big',
    pronouns: null,
    language: null,
    tone: null,
    verbosity: null,
    speaking_style: null,
    created_at: at,
    updated_at: at,
  },
  fields: [],
  notes: notes.map((n, i) => ({
    id: `n${i}`,
    kind: 'lesson',
    content: n.content,
    source: 'owner',
    asserted_by: 'persona',
    pinned: false,
    revision: 1,
    written_at: at,
    revised_at: at,
  })),
  fields_next_after: null,
  notes_next_after: null,
});

async function importFile(file: string, env: Record<string, string> = {}, nodeOptions: string[] = []) {
  const dataDir = tempDir('persona-import-size-data');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PERSONA_')));
  const run = await execa(
    process.execPath,
    [
      ...nodeOptions,
      '--import',
      'tsx',
      join(ROOT, 'services', 'persona-store', 'cli.ts'),
      'import',
      file,
      '--account',
      'acct',
    ],
    {
      cwd: ROOT,
      env: { ...clean, PERSONA_DATA_DIR: dataDir, ...env },
      extendEnv: false,
      reject: false,
    },
  );
  const engine = await openSqliteEngine(join(dataDir, DATABASE_FILE));
  const personas = await engine.db.selectFrom('personas').select('id').execute();
  await engine.close();
  rmSync(dataDir, { recursive: true, force: true });
  return { ...run, personas: personas.length };
}

describe('importing a large export file', () => {
  it('a 10 MB note is refused naming it and the limit, without reading it for credentials', async () => {
    const file = join(folder, 'one-big-note.json');
    writeFileSync(
      file,
      JSON.stringify(exportOf([{ content: 'a short note' }, { content: randomBytes(7_500_000).toString('base64') }])),
    );
    const run = await importFile(file);
    expect(run.exitCode, run.stderr).toBe(1);
    // Larger than any entry may be: refused before the entry is parsed.
    expect(run.stderr).toContain('notes[1] takes');
    expect(run.stderr).toContain('PERSONA_MAX_NOTE_CHARS');
    expect(run.stderr).not.toMatch(/call stack/);
    expect(run.personas).toBe(0);
    // Small enough for an entry, too long for a note: refused naming the member, before its text is screened.
    writeFileSync(file, JSON.stringify(exportOf([{ content: 'a short note' }, { content: 'lamp '.repeat(20_000) }])));
    const long = await importFile(file);
    expect(long.exitCode, long.stderr).toBe(1);
    expect(long.stderr).toContain('notes[1].content is 100,000 characters long');
    expect(long.stderr).toContain('PERSONA_MAX_NOTE_CHARS');
    expect(long.personas).toBe(0);
  });

  it('a file larger than PERSONA_MAX_IMPORT_BYTES is refused before it is read, naming the setting and both sizes', async () => {
    const file = join(folder, 'many-notes.json');
    writeFileSync(
      file,
      JSON.stringify(
        exportOf(
          Array.from({ length: 3_000 }, (_, i) => ({
            content: `note ${i}: ${'the keeper lit the lamp. '.repeat(20)}`,
          })),
        ),
      ),
    );
    const size = statSync(file).size;
    expect(size).toBeGreaterThan(1_048_576);
    const refused = await importFile(file, { PERSONA_MAX_IMPORT_BYTES: '1048576' });
    expect(refused.exitCode, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('PERSONA_MAX_IMPORT_BYTES');
    expect(refused.stderr).toContain('1,048,576');
    expect(refused.stderr).toContain(size.toLocaleString('en-US'));
    expect(refused.personas).toBe(0);
    const imported = await importFile(file);
    expect(imported.exitCode, imported.stderr).toBe(0);
    expect(imported.stdout).toContain('3000 note(s)');
    expect(imported.personas).toBe(1);
  });

  /**
   * The audit's file: 59 MB, under PERSONA_MAX_IMPORT_BYTES, whose one field value has 5.5 million
   * members. It took 4 GB and 47 s to refuse; here the command runs with a heap of 512 MB, which the old
   * reading (the whole file parsed, then every member walked) could not stay under. What the import takes
   * in time and memory: bench/persona-store/import-memory.ts.
   */
  it.each([
    ['an array of 5.5 million strings', (i: number) => `"w${String(i).padStart(7, '0')}"`, '[', ']'],
    ['an object of 5.5 million members', (i: number) => `"${i.toString(36)}":0`, '{', '}'],
  ] as const)(
    'a field value of %s is refused naming the entry and the limits, before it is read, within a heap of 512 MB',
    async (_shape, member, open, close) => {
      const file = join(folder, 'wide-value.json');
      const [head, tail] = JSON.stringify({
        ...exportOf([]),
        fields: [
          {
            key: 'wide',
            description: 'one value, very wide',
            value: 'VALUE',
            source: 'owner',
            asserted_by: 'persona',
            pinned: false,
            revision: 1,
            created_at: at,
            updated_at: at,
          },
        ],
      }).split('"VALUE"') as [string, string];
      const fd = openSync(file, 'w');
      writeSync(fd, `${head}${open}`);
      for (let from = 0; from < 5_500_000; from += 100_000) {
        writeSync(
          fd,
          Array.from({ length: 100_000 }, (_, i) => member(from + i)).join(',') +
            (from + 100_000 < 5_500_000 ? ',' : ''),
        );
      }
      writeSync(fd, `${close}${tail}`);
      closeSync(fd);
      expect(statSync(file).size).toBeGreaterThan(50_000_000);
      expect(statSync(file).size).toBeLessThan(64 * 1024 * 1024);
      const run = await importFile(file, {}, ['--max-old-space-size=512']);
      expect(run.exitCode, run.stderr.slice(0, 2000)).toBe(1);
      expect(run.stderr).toContain('Nothing was imported: fields[0] takes');
      expect(run.stderr).toContain('PERSONA_MAX_VALUE_BYTES');
      expect(run.stderr).not.toMatch(/heap out of memory|call stack/);
      expect(run.personas).toBe(0);
      rmSync(file);
    },
  );
});
