import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processAlive, standInBinary, type StandInRun } from './test-support/stand-in.ts';
import { waitFor } from '../../test/support/wait-for.ts';

/**
 * The stand-in CLI counts the runs alive when it starts (the concurrency tests read that). A run killed
 * by a signal must not be counted by later runs: SIGKILL leaves its entry behind, so an entry counts only
 * while its pid is a live process that started when the entry says.
 */
function startRun(binary: string, prompt: string) {
  const child = spawn(binary, ['-p', '--output-format', 'stream-json', '--verbose'], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  child.stdin.end(prompt);
  return { pid: child.pid!, exited };
}

function setUp() {
  const dir = mkdtempSync(join(tmpdir(), 'modelprov-standin-'));
  const standIn = standInBinary(dir);
  const aliveDir = join(standIn.recordDir, 'alive');
  const finished = (marker: string) => standIn.runs().find((r) => r.stdin.includes(marker));
  return { standIn, aliveDir, finished };
}

async function hangingRun(standIn: { binary: string; runs(): StandInRun[] }, marker: string) {
  const run = startRun(standIn.binary, `${marker} [stand-in:hang]`);
  const record = await waitFor('the hanging run to start its child', () =>
    standIn.runs().find((r) => r.stdin.includes(marker) && r.grandchildPid),
  );
  return { ...run, record };
}

describe('the stand-in CLI counts only runs that are alive', () => {
  it('does not count a run whose group was killed with SIGKILL, and removes its entry', async () => {
    const { standIn, aliveDir, finished } = setUp();
    const killed = await hangingRun(standIn, 'killed hard');
    expect(readdirSync(aliveDir)).toEqual([String(killed.pid)]);
    process.kill(-killed.pid, 'SIGKILL');
    expect((await killed.exited).signal).toBe('SIGKILL');
    await waitFor(
      'the killed run and its child to be gone',
      () => !processAlive(killed.pid) && !processAlive(killed.record.grandchildPid!),
    );

    const next = startRun(standIn.binary, 'after the kill');
    expect((await next.exited).code).toBe(0);
    expect(finished('after the kill')!.concurrentAtStart).toBe(1);
    expect(readdirSync(aliveDir)).toEqual([]);
  });

  it('removes its own entry when its group gets SIGTERM, and still dies of that signal', async () => {
    const { standIn, aliveDir } = setUp();
    const stopped = await hangingRun(standIn, 'stopped politely');
    process.kill(-stopped.pid, 'SIGTERM');
    expect((await stopped.exited).signal).toBe('SIGTERM');
    expect(readdirSync(aliveDir)).toEqual([]);
  });

  it('counts a run that is alive, and not an entry whose pid now belongs to another process', async () => {
    const { standIn, aliveDir, finished } = setUp();
    const running = await hangingRun(standIn, 'still running');
    // This test process is alive but is not a stand-in run that started when the entry says.
    writeFileSync(join(aliveDir, String(process.pid)), 'not-this-start-time');
    const next = startRun(standIn.binary, 'beside a live run');
    expect((await next.exited).code).toBe(0);
    expect(finished('beside a live run')!.concurrentAtStart).toBe(2);
    expect(readdirSync(aliveDir)).toEqual([String(running.pid)]);
    process.kill(-running.pid, 'SIGKILL');
    await running.exited;
  });
});
