import { describe, expect, it, vi } from 'vitest';
import { providerError, type ProviderError } from './errors.ts';
import { FailureMemory, REMEMBERED_CODES, requestKey, SharedRuns } from './identical-requests.ts';
import { ClientGone } from './run-slots.ts';

/** The memory's clock, moved by the test: no real time passes. */
function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

const key = (n: number) => requestKey('Bearer k', '/bin/claude', ['-p', '--model', 'sonnet'], `prompt ${n}`);

describe('the identity of a request', () => {
  it('is the same for the same caller, binary, argv, prompt and run variables, and differs when any of them differs', () => {
    const base = requestKey('Bearer a', '/bin/claude', ['-p', '--model', 'sonnet'], 'hello');
    expect(requestKey('Bearer a', '/bin/claude', ['-p', '--model', 'sonnet'], 'hello')).toBe(base);
    expect(requestKey('Bearer a', '/bin/claude', ['-p', '--model', 'sonnet'], 'hello', {})).toBe(base);
    // An output limit or stop sequences change the run: another request.
    expect(
      requestKey('Bearer a', '/bin/claude', ['-p', '--model', 'sonnet'], 'hello', {
        CLAUDE_CODE_MAX_OUTPUT_TOKENS: '3',
      }),
    ).not.toBe(base);
    expect(requestKey('Bearer b', '/bin/claude', ['-p', '--model', 'sonnet'], 'hello')).not.toBe(base);
    expect(requestKey('Bearer a', '/usr/bin/claude', ['-p', '--model', 'sonnet'], 'hello')).not.toBe(base);
    expect(requestKey('Bearer a', '/bin/claude', ['-p', '--model', 'opus'], 'hello')).not.toBe(base);
    expect(requestKey('Bearer a', '/bin/claude', ['-p', '--model', 'sonnet'], 'hello!')).not.toBe(base);
  });

  it('cannot be made alike by moving text between the parts', () => {
    expect(requestKey('', '/bin/claude', ['a', 'b'], '')).not.toBe(requestKey('', '/bin/claude', ['a,b'], ''));
    expect(requestKey('', '/bin/claude', ['a'], 'b')).not.toBe(requestKey('', '/bin/claude', ['a', 'b'], ''));
    expect(requestKey('x', '', [], '')).not.toBe(requestKey('', 'x', [], ''));
  });

  it('is a digest that holds none of the request text', () => {
    const k = requestKey('Bearer secret-key', '/bin/claude', ['--system-prompt', 'be brief'], 'my private question');
    expect(k).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('the failure memory', () => {
  it('keeps timeout, tool_call_reply, cli_not_found, not_logged_in and context_length_exceeded, and nothing a retry could change', () => {
    const kept: ProviderError[] = [
      providerError.timeout(300),
      providerError.toolCallReply(),
      providerError.cliNotFound('The CLI binary could not be started (not found).'),
      providerError.notLoggedIn(),
      providerError.contextLengthExceeded('Prompt is too long'),
    ];
    const notKept: ProviderError[] = [
      providerError.queueFull(2, 16),
      providerError.rateLimited('limit.'),
      providerError.cliFailed('it exited with code 1 without a result.'),
      providerError.emptyReply(),
      providerError.shuttingDown(),
      providerError.notLockedDown('pending', true),
    ];
    const memory = new FailureMemory({ seconds: 60, now: clock().now });
    kept.forEach((err, i) => expect(memory.remember(key(i), err)).toBe(true));
    notKept.forEach((err, i) => expect(memory.remember(key(100 + i), err)).toBe(false));
    expect(memory.size).toBe(kept.length);
    expect([...REMEMBERED_CODES].sort()).toEqual(kept.map((e) => e.code).sort());
    kept.forEach((err, i) => expect(memory.recall(key(i))?.code).toBe(err.code));
    notKept.forEach((_err, i) => expect(memory.recall(key(100 + i))).toBeUndefined());
  });

  it('answers with the same status, code and headers, and a message that says it was remembered and when the request runs again', () => {
    const c = clock();
    const memory = new FailureMemory({ seconds: 60, now: c.now });
    const original = providerError.timeout(300);
    memory.remember(key(1), original);
    c.advance(12_500);
    const again = memory.recall(key(1))!;
    expect([again.status, again.code, again.type, again.options]).toEqual([
      504,
      'timeout',
      'timeout_error',
      original.options,
    ]);
    expect(again.options.retry).toBe(false);
    expect(again.message).toContain(original.message);
    expect(again.message).toContain(
      'failed this way 12 s ago, without running the CLI again; the same request runs again in 48 s, a changed one at once',
    );
  });

  it('forgets a failure once its window has passed', () => {
    const c = clock();
    const memory = new FailureMemory({ seconds: 5, now: c.now });
    memory.remember(key(1), providerError.toolCallReply());
    c.advance(4_999);
    expect(memory.recall(key(1))).toBeDefined();
    c.advance(1);
    expect(memory.recall(key(1))).toBeUndefined();
    expect(memory.size).toBe(0);
    expect(memory.bytes).toBe(0);
  });

  it('with 0 seconds remembers nothing', () => {
    const memory = new FailureMemory({ seconds: 0, now: clock().now });
    expect(memory.remember(key(1), providerError.timeout(1))).toBe(false);
    expect(memory.recall(key(1))).toBeUndefined();
  });

  it('is bounded by bytes: the oldest failures go first, and a long prompt costs no more than a short one', () => {
    const c = clock();
    const maxBytes = 16 * 1024;
    const memory = new FailureMemory({ seconds: 3600, maxBytes, now: c.now });
    memory.remember(key(0), providerError.timeout(300));
    const one = memory.bytes;
    expect(one).toBeLessThan(1024);
    const long = requestKey('Bearer k', '/bin/claude', ['-p'], 'x'.repeat(4 * 1024 * 1024));
    memory.remember(long, providerError.timeout(300));
    expect(memory.bytes).toBe(2 * one);

    for (let i = 1; i <= 1000; i++) {
      memory.remember(key(i), providerError.timeout(300));
      c.advance(1);
    }
    expect(memory.bytes).toBeLessThanOrEqual(maxBytes);
    expect(memory.size).toBe(Math.floor(maxBytes / one));
    expect(memory.recall(key(0))).toBeUndefined();
    expect(memory.recall(key(1000))).toBeDefined();
    expect(memory.recall(key(1000 - memory.size + 1))).toBeDefined();
    expect(memory.recall(key(1000 - memory.size))).toBeUndefined();
  });

  it('remembering a request again restarts its window and counts its bytes once', () => {
    const c = clock();
    const memory = new FailureMemory({ seconds: 10, now: c.now });
    memory.remember(key(1), providerError.toolCallReply());
    const bytes = memory.bytes;
    c.advance(8_000);
    memory.remember(key(1), providerError.toolCallReply());
    expect(memory.bytes).toBe(bytes);
    c.advance(8_000);
    expect(memory.recall(key(1))).toBeDefined();
  });
});

describe('identical requests in flight, and the window for a retry', () => {
  /** A run the test ends: `end` answers it, `fail` fails it; `stopped` says whether the run was told to stop. */
  function work() {
    let end: (v: string) => void = () => {};
    let fail: (e: Error) => void = () => {};
    const state = { stopped: false, started: 0 };
    const start = (signal: AbortSignal) => {
      state.started++;
      signal.addEventListener('abort', () => (state.stopped = true));
      return new Promise<string>((resolve, reject) => {
        end = resolve;
        fail = reject;
      });
    };
    return { start, end: (v: string) => end(v), fail: (e: Error) => fail(e), state };
  }
  const opts = { progress: () => undefined };

  it('keeps a run its last request left for the window; a retry within it joins; after it the run is stopped', async () => {
    vi.useFakeTimers();
    try {
      const runs = new SharedRuns<string>({ graceMs: 10_000 });
      const w = work();
      const first = new AbortController();
      const a = runs.run('k', first.signal, w.start, opts).catch((e: unknown) => e);
      first.abort();
      expect(await a).toBeInstanceOf(ClientGone);
      expect([w.state.stopped, runs.alone]).toEqual([false, 1]);
      await vi.advanceTimersByTimeAsync(9_000);
      const b = runs.run('k', new AbortController().signal, w.start, opts);
      w.end('answer');
      expect(await b).toBe('answer');
      expect(w.state.started).toBe(1);

      const w2 = work();
      const gone = new AbortController();
      const c = runs.run('k2', gone.signal, w2.start, opts).catch(() => undefined);
      gone.abort();
      await c;
      await vi.advanceTimersByTimeAsync(10_000);
      expect([w2.state.stopped, runs.alone]).toEqual([true, 0]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives an answer that came while nobody waited to one retry; keeps no failure; with 0 stops at once', async () => {
    vi.useFakeTimers();
    try {
      const runs = new SharedRuns<string>({ graceMs: 10_000 });
      const w = work();
      const gone = new AbortController();
      const a = runs.run('k', gone.signal, w.start, opts).catch(() => undefined);
      gone.abort();
      await a;
      w.end('kept');
      await vi.advanceTimersByTimeAsync(1);
      expect(await runs.run('k', new AbortController().signal, w.start, opts)).toBe('kept');
      // Given once: the next identical request starts its own run.
      const next = work();
      void runs.run('k', new AbortController().signal, next.start, opts);
      expect(next.state.started).toBe(1);

      const f = work();
      const left = new AbortController();
      const b = runs.run('f', left.signal, f.start, opts).catch(() => undefined);
      left.abort();
      await b;
      f.fail(new Error('crashed'));
      await vi.advanceTimersByTimeAsync(1);
      expect(runs.alone).toBe(0);
      const again = work();
      void runs.run('f', new AbortController().signal, again.start, opts);
      expect(again.state.started).toBe(1);

      const none = new SharedRuns<string>({ graceMs: 0 });
      const z = work();
      const quit = new AbortController();
      const c = none.run('z', quit.signal, z.start, opts).catch(() => undefined);
      quit.abort();
      await c;
      expect([z.state.stopped, none.alone]).toEqual([true, 0]);
    } finally {
      vi.useRealTimers();
    }
  });
});
