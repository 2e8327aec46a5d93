/**
 * The services panel's "Last problem" sentence, from what services.list answers: a crash while the
 * restart is pending, the last crash once the service is back, and otherwise the supervisor's words.
 */
import { describe, expect, it } from 'vitest';
import type { ServiceView } from '../common/contract.ts';
import { problemText } from './src/services.ts';
import { formatTime } from './src/states.ts';

const at = '2026-03-01T10:00:00.000Z';
const crash = {
  at,
  reason: 'the persona store exited with code 1: Error: disk full',
  restartAt: '2026-03-01T10:00:04.000Z',
};
const view = (extra: Partial<ServiceView>): ServiceView => ({
  name: 'persona-store',
  state: 'ready',
  port: 8004,
  url: 'http://127.0.0.1:8004',
  restarts: 0,
  ...extra,
});

describe('the services panel says what happened to a service', () => {
  it('while a crashed service waits, it names the crash and counts down to the restart', () => {
    const waiting = view({
      state: 'backing-off',
      restarts: 1,
      lastError: 'the persona store exited with code 1: Error: disk full. Restarting in 4.0 s.',
      lastCrash: crash,
    });
    expect(problemText(waiting, Date.parse(at) + 1_000)).toBe(
      `Crashed at ${formatTime(at)}: ${crash.reason}. Restarting in 3 s (restart 2).`,
    );
    expect(problemText(waiting, Date.parse(at) + 5_000)).toBe(
      `Crashed at ${formatTime(at)}: ${crash.reason}. Restarting now (restart 2).`,
    );
  });

  it('once it runs again, the last crash stays in view', () => {
    expect(problemText(view({ restarts: 1, lastCrash: crash }))).toBe(
      `Last crash at ${formatTime(at)}: ${crash.reason}. Restarted once since the app started.`,
    );
    expect(problemText(view({ state: 'starting', restarts: 3, lastCrash: crash }))).toMatch(
      /Restarted 3 times since the app started\.$/,
    );
  });

  it('a service that gave up, or is not ready, shows the supervisor\u2019s own sentence', () => {
    const gaveUp =
      'Gave up after 5 crashes within 120 s. Last: the persona store was ended by SIGKILL. Look at its log, then start it again.';
    expect(problemText(view({ state: 'gave-up', lastError: gaveUp, lastCrash: crash }))).toBe(gaveUp);
    expect(problemText(view({ state: 'live', lastError: 'Not ready: login (not signed in).' }))).toBe(
      'Not ready: login (not signed in).',
    );
    expect(problemText(view({}))).toBe('');
  });

  it('a crash the console did not see (it started later) falls back to the supervisor\u2019s sentence', () => {
    const said = 'the persona store was ended by SIGKILL. Restarting in 0.5 s.';
    expect(problemText(view({ state: 'backing-off', restarts: 1, lastError: said }))).toBe(said);
  });
});
