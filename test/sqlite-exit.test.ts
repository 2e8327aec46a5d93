/**
 * A Node process that opened a database with better-sqlite3 and prepared statements ends on its own with
 * exit code 0. better-sqlite3 12 on Node.js 24 aborted such processes at exit ("Assertion failed: (env)
 * != nullptr" in node::RemoveEnvironmentCleanupHook, from Statement::~Statement: its statements
 * unregistered a cleanup hook after Node's environment was gone), which killed services, command-line
 * runs and test workers; with 12.11.1 this very script aborted 12 times out of 12. better-sqlite3 13 is
 * a Node-API module and does not.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './support/process.ts';

const work = mkdtempSync(join(tmpdir(), 'sqlite-exit-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Opens a database file, prepares 5,000 statements (all but one left to the garbage collector), and ends on its own. */
const SCRIPT = `
const Database = require(process.argv[2]);
const db = new Database(process.argv[3]);
db.exec('CREATE TABLE IF NOT EXISTS notes (body TEXT)');
for (let i = 0; i < 5000; i++) db.prepare('SELECT ' + i + ' AS n, count(*) AS c FROM notes').get();
globalThis.kept = db.prepare('SELECT body FROM notes');
`;
const RUNS = 12;

function run(i: number): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  const script = join(work, 'exit.cjs');
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [script, join(ROOT, 'node_modules', 'better-sqlite3'), join(work, `run-${i}.db`)],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe('better-sqlite3 at the end of a Node process', () => {
  it(
    `lets a process that prepared statements exit with code 0, ${RUNS} times out of ${RUNS}`,
    { timeout: 240_000 },
    async () => {
      writeFileSync(join(work, 'exit.cjs'), SCRIPT);
      const results: Array<{ code: number | null; signal: string | null; stderr: string }> = [];
      // Three at a time: the machine running the suite has few cores.
      for (let first = 0; first < RUNS; first += 3) {
        results.push(...(await Promise.all([first, first + 1, first + 2].map(run))));
      }
      const aborted = results.filter((r) => r.code !== 0 || r.signal !== null);
      expect(
        aborted.map(
          (r) =>
            `${r.signal ?? `exit code ${r.code}`}: ${r.stderr.split('\n').find((l) => l.includes('Assertion')) ?? r.stderr.slice(0, 200)}`,
        ),
      ).toEqual([]);
      expect(results).toHaveLength(RUNS);
    },
  );
});
