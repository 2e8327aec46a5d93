/**
 * main/supervisor/parent-watch.mjs, the orphan protection of every service in the desktop app (Electron's
 * utility processes have no IPC channel whose closing would stop them): a real parent process starts a
 * real Node child with `--import parent-watch.mjs`; the test SIGKILLs the parent and reads the process
 * table until the child is gone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './support/identity.ts';
import { ROOT } from './support/process.ts';
import { waitFor } from './support/wait-for.ts';

const PARENT_WATCH = join(ROOT, 'main', 'supervisor', 'parent-watch.mjs');

/**
 * The child: a service stand-in that stops gracefully on SIGTERM (writing how it stopped) and otherwise
 * runs forever. Its script runs after the `--import`ed watch, so its "started" file says the watch is on.
 * Unwatched, it writes ORPHANED_FILE once it sees it has been re-parented, the moment a watch would act.
 */
const CHILD = `
const { writeFileSync } = require('node:fs');
process.on('SIGTERM', () => { writeFileSync(process.env.STOPPED_FILE, 'SIGTERM'); process.exit(0); });
writeFileSync(process.env.STARTED_FILE, String(process.pid));
const firstParent = process.ppid;
if (process.env.ORPHANED_FILE) {
  const look = setInterval(() => { if (process.ppid !== firstParent) { clearInterval(look); writeFileSync(process.env.ORPHANED_FILE, String(process.ppid)); } }, 50);
}
setInterval(() => {}, 60000);
`;

/**
 * Preloaded (`--require`, which runs before `--import`) into a watched child to count the watch's looks:
 * every timer callback that runs adds one to TICKS_FILE. The child's own timers never fire within a test.
 */
const TICK_COUNTER = `
const { writeFileSync } = require('node:fs');
let ticks = 0;
const counted = (fn) => function (...args) { const r = fn.apply(this, args); writeFileSync(process.env.TICKS_FILE, String(++ticks)); return r; };
const { setInterval: si, setTimeout: st } = globalThis;
globalThis.setInterval = (fn, ...rest) => si(counted(fn), ...rest);
globalThis.setTimeout = (fn, ...rest) => st(counted(fn), ...rest);
`;

/** The parent: starts the child without an IPC channel (as a utility process has none), prints its pid, then waits. */
const PARENT = `
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, JSON.parse(process.env.CHILD_ARGS), { stdio: 'ignore', env: process.env });
process.stdout.write(child.pid + '\\n');
setInterval(() => {}, 60000);
`;

/** A parent like the desktop app's launcher, which names itself in HUB_PARENT_PID, and dies right after the spawn. */
const SHORT_LIVED_PARENT = `
const { spawn } = require('node:child_process');
const child = spawn(process.execPath, JSON.parse(process.env.CHILD_ARGS), { stdio: 'ignore', env: { ...process.env, HUB_PARENT_PID: String(process.pid) } });
process.stdout.write(child.pid + '\\n', () => process.kill(process.pid, 'SIGKILL'));
`;

/** Alive in the process table: /proc has it and it is not a zombie waiting to be reaped. */
function inProcessTable(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

const started: { parent: ChildProcess; child: number; dir: string }[] = [];
afterEach(() => {
  for (const { parent, child, dir } of started.splice(0)) {
    for (const pid of [parent.pid, child]) {
      try {
        if (pid && inProcessTable(pid)) process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A parent process with one child that runs `CHILD`, with parent-watch loaded (and its looks counted) or not. */
async function family(watched: boolean) {
  const dir = tempDir('parent-watch');
  const files = {
    stopped: join(dir, 'stopped'),
    started: join(dir, 'started'),
    ticks: join(dir, 'ticks'),
    orphaned: join(dir, 'orphaned'),
  };
  const counter = join(dir, 'tick-counter.cjs');
  writeFileSync(counter, TICK_COUNTER);
  const childArgs = [...(watched ? ['--require', counter, '--import', PARENT_WATCH] : []), '-e', CHILD];
  const parent = spawn(process.execPath, ['-e', PARENT], {
    env: {
      PATH: process.env.PATH ?? '',
      CHILD_ARGS: JSON.stringify(childArgs),
      STOPPED_FILE: files.stopped,
      STARTED_FILE: files.started,
      ...(watched ? { TICKS_FILE: files.ticks } : { ORPHANED_FILE: files.orphaned }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const child = await new Promise<number>((resolve, reject) => {
    let out = '';
    parent.stdout!.setEncoding('utf8');
    parent.stdout!.on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    parent.once('exit', (code) => reject(new Error(`the parent exited (${code}) before starting its child`)));
  });
  started.push({ parent, child, dir });
  // The parent must outlive the child's start: parent-watch takes the parent it watches from process.ppid at import.
  await waitFor('the child to start', () => existsSync(files.started));
  expect(inProcessTable(child)).toBe(true);
  return {
    parent,
    child,
    stoppedFile: files.stopped,
    ticks: () => (existsSync(files.ticks) ? Number(readFileSync(files.ticks, 'utf8')) : 0),
    orphanedFile: files.orphaned,
  };
}

async function killParent(parent: ChildProcess): Promise<void> {
  const exited = new Promise((r) => parent.once('exit', r));
  parent.kill('SIGKILL');
  await exited;
}

describe.skipIf(process.platform === 'win32')('a service whose parent dies stops itself (parent-watch.mjs)', () => {
  it('when the parent is SIGKILLed, the child leaves the process table within seconds, through its own SIGTERM handler', async () => {
    const { parent, child, stoppedFile } = await family(true);
    await killParent(parent);
    await waitFor('the child to stop', () => !inProcessTable(child));
    // It stopped through SIGTERM, so a service runs its graceful stop (closes its database) rather than being cut off.
    expect(readFileSync(stoppedFile, 'utf8')).toBe('SIGTERM');
  });

  it('a parent that dies before the child has loaded the watch is noticed too, because the launcher names it', async () => {
    const dir = tempDir('parent-watch');
    const stoppedFile = join(dir, 'stopped');
    const startedFile = join(dir, 'started');
    const parent = spawn(process.execPath, ['-e', SHORT_LIVED_PARENT], {
      env: {
        PATH: process.env.PATH ?? '',
        CHILD_ARGS: JSON.stringify(['--import', PARENT_WATCH, '-e', CHILD]),
        STOPPED_FILE: stoppedFile,
        STARTED_FILE: startedFile,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    parent.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    const [, signal] = await new Promise<[number | null, string | null]>((r) =>
      parent.once('exit', (code, sig) => r([code, sig])),
    );
    const child = Number(out.trim());
    started.push({ parent, child, dir });
    expect(signal).toBe('SIGKILL');
    expect(child).toBeGreaterThan(0);
    // The child starts after its parent is already gone, then stops itself through its SIGTERM handler.
    await waitFor('the child to start', () => existsSync(startedFile));
    await waitFor('the child to stop', () => !inProcessTable(child));
    expect(readFileSync(stoppedFile, 'utf8')).toBe('SIGTERM');
  });

  it('while the parent lives, the watched child keeps running, however many times the watch looks', async () => {
    const { child, stoppedFile, ticks } = await family(true);
    const looked = ticks();
    await waitFor('the watch to look three more times', () => ticks() >= looked + 3);
    expect(inProcessTable(child)).toBe(true);
    expect(existsSync(stoppedFile)).toBe(false);
  });

  it('without parent-watch the same child outlives its SIGKILLed parent (what the watch is for)', async () => {
    const { parent, child, stoppedFile, orphanedFile } = await family(false);
    await killParent(parent);
    // The child itself sees that it has a new parent: the moment a watch would have stopped it.
    await waitFor('the child to see its new parent', () => existsSync(orphanedFile));
    expect(inProcessTable(child)).toBe(true);
    expect(existsSync(stoppedFile)).toBe(false);
  });
});
