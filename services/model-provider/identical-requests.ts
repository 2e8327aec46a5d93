import { createHash } from 'node:crypto';
import { ProviderError } from './errors.ts';
import { ClientGone } from './run-slots.ts';

/**
 * Client libraries retry a failed or slow completion blindly with the identical request (LangChain 6
 * times, the AI SDK twice), and only the official OpenAI clients obey `x-should-retry: false`. Two
 * things make such a retry cheap: identical requests in flight share one run, and an identical request
 * that just failed in a way another run would not change is answered from that failure for a while.
 *
 * A request's identity is the SHA-256 of the canonical JSON of its caller (the `Authorization` it
 * presents) and of everything its run depends on: the binary, the argv (model, system prompt, schema)
 * the prompt on stdin and the run's own variables (output limit, stop sequences, sampling). Only that digest
 * is kept, never the request's text or its key.
 */
export function requestKey(
  caller: string,
  binary: string,
  args: readonly string[],
  prompt: string,
  variables: Readonly<Record<string, string>> = {},
): string {
  return createHash('sha256')
    .update(JSON.stringify([caller, binary, args, prompt, variables]))
    .digest('hex');
}

/**
 * Failures another run of the identical request would repeat: remembered. Overload (`queue_full`,
 * `rate_limited`), a crash or a failed run (`cli_failed`), an empty reply and a shutdown can end
 * differently on the next try, so they are not. The README says why for each.
 */
export const REMEMBERED_CODES: ReadonlySet<string> = new Set([
  'timeout',
  'tool_call_reply',
  'cli_not_found',
  'not_logged_in',
  'context_length_exceeded',
]);

interface Remembered {
  status: number;
  code: string;
  message: string;
  options: ProviderError['options'];
  at: number;
  bytes: number;
}

/** Map overhead, the entry object, its 64-character key and numbers: a generous estimate per entry beside the message. */
const ENTRY_OVERHEAD_BYTES = 320;

/**
 * Recent failures by request digest, each for `seconds` after it happened. Bounded by bytes (the oldest
 * go first); expired entries are dropped whenever the table is touched. `seconds` 0 remembers nothing.
 */
export class FailureMemory {
  private readonly entries = new Map<string, Remembered>();
  private bytesHeld = 0;
  private readonly windowMs: number;
  private readonly maxBytes: number;
  private readonly now: () => number;

  constructor(options: { seconds: number; maxBytes?: number; now?: () => number }) {
    this.windowMs = options.seconds * 1000;
    this.maxBytes = options.maxBytes ?? 512 * 1024;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    this.expire();
    return this.entries.size;
  }

  get bytes(): number {
    this.expire();
    return this.bytesHeld;
  }

  /** Keeps `err` for `key` when it is a failure another run would repeat; true when it was kept. */
  remember(key: string, err: ProviderError): boolean {
    if (this.windowMs <= 0 || !REMEMBERED_CODES.has(err.code)) return false;
    this.forget(key);
    const entry: Remembered = {
      status: err.status,
      code: err.code,
      message: err.message,
      options: err.options,
      at: this.now(),
      bytes: ENTRY_OVERHEAD_BYTES + Buffer.byteLength(err.message),
    };
    if (entry.bytes > this.maxBytes) return false;
    this.entries.set(key, entry);
    this.bytesHeld += entry.bytes;
    this.expire();
    for (const oldest of this.entries.keys()) {
      if (this.bytesHeld <= this.maxBytes) break;
      this.forget(oldest);
    }
    return true;
  }

  /** The failure an identical request met within the window, as a new error that says it is remembered; else undefined. */
  recall(key: string): ProviderError | undefined {
    if (this.entries.size === 0) return undefined;
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const age = Math.max(0, this.now() - entry.at);
    if (age >= this.windowMs) {
      this.forget(key);
      return undefined;
    }
    const ago = Math.floor(age / 1000);
    const left = Math.max(1, Math.ceil((this.windowMs - age) / 1000));
    return new ProviderError(
      entry.status,
      entry.code,
      `${entry.message} (Answered from an identical request that failed this way ${ago} s ago, without running the CLI again; the same request runs again in ${left} s, a changed one at once.)`,
      entry.options,
    );
  }

  forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytesHeld -= entry.bytes;
  }

  /** Entries are in the order they were remembered, so the expired ones are at the front. */
  private expire(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (now - entry.at < this.windowMs) break;
      this.forget(key);
    }
  }
}

interface InFlight<T, P> {
  result: Promise<T>;
  /** What the run shows while it runs (its partial reply), the same for every request sharing it. */
  progress: P;
  /** Requests waiting for this run; when the last one leaves, the run is stopped (after the grace window). */
  waiting: number;
  stop: AbortController;
  /** The run answered while nobody waited: its answer is kept for the next identical request, once. */
  answered: boolean;
  /** Running while nobody waits: the run (or its answer) is dropped when it fires. */
  grace?: NodeJS.Timeout;
}

/**
 * Identical requests in flight share one run: the first starts it, the others wait for its answer.
 * A request whose client goes away leaves; when no request waits any more, the run goes on for
 * `graceMs` (MODELPROV_RETRY_GRACE_SECONDS), so that a client's retry of the same request joins it
 * instead of starting another: a client whose timeout is shorter than the run gets its answer at the
 * attempt after the run has ended. A run that answers while nobody waits keeps that answer for the
 * rest of the window, for the next identical request, once (a failure is not kept: the failure memory
 * keeps those another run would repeat). When the window ends with nobody back, the run is stopped and
 * forgotten; with 0 that happens as soon as the last request leaves. Entries live only while their run
 * or window does, so the table is as small as the runs in flight, the queue and the recent windows.
 */
export class SharedRuns<T, P = undefined> {
  private readonly inFlight = new Map<string, InFlight<T, P>>();

  constructor(
    private readonly options: {
      graceMs?: number;
      /** Told when the last request of a run left and the run goes on for the window. */
      onLeftAlone?: () => void;
    } = {},
  ) {}

  /** Runs (or kept answers) waiting for an identical retry, for the readiness body and tests. */
  get alone(): number {
    let n = 0;
    for (const entry of this.inFlight.values()) if (entry.waiting === 0) n++;
    return n;
  }

  /**
   * Answers with the run for `key` in flight (or its answer kept for a retry), or starts `work` for it with
   * a fresh `progress()`; `onJoin` is told when the run was already there, `follow` (at once) the progress
   * of the run this request waits for.
   */
  run(
    key: string,
    signal: AbortSignal,
    work: (signal: AbortSignal, progress: P) => Promise<T>,
    options: { progress: () => P; onJoin?: (kept: boolean) => void; follow?: (progress: P) => void },
  ): Promise<T> {
    let entry = this.inFlight.get(key);
    if (entry) {
      clearTimeout(entry.grace);
      entry.grace = undefined;
      options.onJoin?.(entry.answered);
      // A kept answer goes to one retry (and whoever joins at the same moment), not to every later request.
      if (entry.answered) this.inFlight.delete(key);
    } else {
      const stop = new AbortController();
      const progress = options.progress();
      const started: InFlight<T, P> = {
        result: work(stop.signal, progress),
        progress,
        waiting: 0,
        stop,
        answered: false,
      };
      started.result.then(
        () => {
          if (this.inFlight.get(key) !== started) return;
          // Answered with nobody waiting: kept until the window that is running ends.
          if (started.waiting === 0 && started.grace !== undefined) started.answered = true;
          else this.inFlight.delete(key);
        },
        // A run every request left ends with nobody to tell.
        () => {
          if (this.inFlight.get(key) === started) this.inFlight.delete(key);
          clearTimeout(started.grace);
        },
      );
      this.inFlight.set(key, started);
      entry = started;
    }
    options.follow?.(entry.progress);
    return this.follow(key, entry, signal);
  }

  /** The last request of `entry` left: the run goes on for the window, or stops now. */
  private leftAlone(key: string, entry: InFlight<T, P>): void {
    const end = () => {
      // Nobody may join a run that is being stopped.
      if (this.inFlight.get(key) === entry) this.inFlight.delete(key);
      entry.stop.abort();
    };
    const graceMs = this.options.graceMs ?? 0;
    if (graceMs <= 0 || this.inFlight.get(key) !== entry) {
      end();
      return;
    }
    this.options.onLeftAlone?.();
    entry.grace = setTimeout(() => {
      entry.grace = undefined;
      if (entry.waiting === 0) end();
    }, graceMs);
    entry.grace.unref();
  }

  private follow(key: string, entry: InFlight<T, P>, signal: AbortSignal): Promise<T> {
    entry.waiting++;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = () => {
        if (settled) return false;
        settled = true;
        entry.waiting--;
        signal.removeEventListener('abort', leave);
        return true;
      };
      const leave = () => {
        if (!settle()) return;
        reject(new ClientGone('client went away while its run was in flight'));
        if (entry.waiting === 0) this.leftAlone(key, entry);
      };
      if (signal.aborted) {
        leave();
        return;
      }
      signal.addEventListener('abort', leave, { once: true });
      entry.result.then(
        (value) => {
          if (settle()) resolve(value);
        },
        (err: unknown) => {
          if (settle()) reject(err);
        },
      );
    });
  }

  /** Stops every run kept for a retry (the service is stopping). */
  close(): void {
    for (const [key, entry] of this.inFlight) {
      if (entry.waiting > 0) continue;
      clearTimeout(entry.grace);
      this.inFlight.delete(key);
      entry.stop.abort();
    }
  }
}
