/**
 * How the subscription detail reads each state the gateway can answer, beyond the active and cancelled
 * ones the browser test drives: ended by its event, expired, a signal given up, a delivery refused, and
 * what a cancel says when the event or the expiry came first.
 */
import { describe, expect, it } from 'vitest';
import { cancelOutcome, endedBy, lastDelivery, nextAttempt, signalWords, stateWords } from './src/platform.ts';
import { formatTime } from './src/states.ts';

const at = '2026-03-01T10:00:00.000Z';
const next = '2026-03-01T10:00:20.000Z';

describe('a subscription in detail', () => {
  it('one ended by its event says which, and that the hub was told it ended', () => {
    const s = { state: 'ended', event: 'pull_closed_unmerged', ended_at: at, signal: 'sent' } as const;
    expect(stateWords(s)).toBe(`ended at ${formatTime(at)}`);
    expect(endedBy(s)).toBe('the pull request was closed without a merge');
    expect(signalWords(s)).toBe('delivered: the hub was told that it ended');
  });

  it('an expired one says so, and that the hub was told it expired', () => {
    const s = { state: 'expired', event: null, ended_at: at, signal: 'sent', signal_next_at: null } as const;
    expect(endedBy(s)).toBe('its expiry: no one cancelled it and its event did not happen in time');
    expect(signalWords(s)).toBe('delivered: the hub was told that it expired');
    expect(nextAttempt(s)).toBe('\u2014');
    // One that expired before expiries were signalled has none.
    expect(signalWords({ state: 'expired', signal: 'none' })).toBe('none: it expired without a signal');
  });

  it('a refused delivery shows the receiver\u2019s status and the gateway\u2019s reason, then when it is tried again', () => {
    const refused = {
      signal: 'pending',
      signal_attempts: 2,
      signal_last_status: 503,
      signal_last_error: 'the receiver asked to be called again later (Retry-After)',
      signal_last_at: at,
      signal_next_at: next,
    } as const;
    expect(lastDelivery(refused)).toBe(
      `HTTP 503: the receiver asked to be called again later (Retry-After) at ${formatTime(at)}`,
    );
    expect(nextAttempt(refused)).toBe(formatTime(next));
    expect(lastDelivery({ ...refused, signal_last_status: null, signal_last_error: null })).toBe(
      `no answer at ${formatTime(at)}`,
    );
    expect(nextAttempt({ ...refused, signal_next_at: null })).toBe('being sent now');
  });

  it('a signal given up (even without an attempt, when its address is no longer allowed) says the hub was not told', () => {
    const s = {
      state: 'cancelled',
      signal: 'failed',
      signal_attempts: 0,
      signal_last_status: null,
      signal_last_error:
        'its address is no longer allowed (REPOHOST_SIGNAL_URL_PREFIXES, REPOHOST_SIGNAL_REFUSED_PORTS): not sent',
      signal_last_at: at,
      signal_next_at: null,
    } as const;
    expect(signalWords(s)).toBe('given up after every attempt: the hub was not told that it was cancelled');
    expect(lastDelivery(s)).toBe(
      `its address is no longer allowed (REPOHOST_SIGNAL_URL_PREFIXES, REPOHOST_SIGNAL_REFUSED_PORTS): not sent at ${formatTime(at)}`,
    );
    expect(nextAttempt(s)).toBe('none: given up');
    expect(
      lastDelivery({ signal_attempts: 0, signal_last_status: null, signal_last_error: null, signal_last_at: null }),
    ).toBe('none yet');
  });

  it('a cancel says what the gateway answered: cancelled, or that the event or the expiry came first', () => {
    expect(cancelOutcome({ state: 'cancelled', event: 'cancelled' })).toBe(
      'Cancelled: it is no longer watched, and the hub gets one signal saying it was cancelled.',
    );
    expect(cancelOutcome({ state: 'ended', event: 'pull_merged' })).toBe(
      'It had already ended (the pull request was merged) before the cancel: the hub gets its one signal about that, and nothing more.',
    );
    expect(cancelOutcome({ state: 'expired', event: null })).toBe(
      'It had already expired before the cancel: it is no longer watched, and the hub gets its one signal about that, and nothing more.',
    );
  });
});
