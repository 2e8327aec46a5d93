/**
 * Per-credential request pacing for @octokit/plugin-throttling, without Bottleneck's scheduler: the
 * plugin accepts its limiter groups as options, and Bottleneck's timer-driven queue alone adds
 * ~10 ms to every call. These keep the same contract (a group keyed by credential; at most N at once;
 * at least minTime between starts) with plain promises and no timer when nothing waits.
 */

type Job = () => Promise<unknown>;

class Limiter {
  private running = 0;
  private nextStart = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly maxConcurrent: number,
    private readonly minTime: number,
    private readonly onIdle: () => void,
  ) {}

  /** Called by the plugin as schedule(jobOptions, fn, ...args) or schedule(fn, ...args). */
  schedule(...input: unknown[]): Promise<unknown> {
    const withOptions = typeof input[0] !== 'function';
    const fn = input[withOptions ? 1 : 0] as (...a: unknown[]) => Promise<unknown>;
    const args = input.slice(withOptions ? 2 : 1);
    return this.run(() => fn(...args));
  }

  private async run(job: Job): Promise<unknown> {
    if (this.running >= this.maxConcurrent) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running += 1;
    try {
      if (this.minTime > 0) {
        const wait = this.nextStart - Date.now();
        this.nextStart = Math.max(Date.now(), this.nextStart) + this.minTime;
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      return await job();
    } finally {
      this.running -= 1;
      const next = this.waiting.shift();
      if (next) next();
      else if (this.running === 0 && this.nextStart <= Date.now()) this.onIdle();
    }
  }
}

/** A group of limiters keyed by credential fingerprint, as `Bottleneck.Group` is used by the plugin. */
export class CredentialGroup {
  private readonly limiters = new Map<string, Limiter>();

  constructor(private readonly options: { maxConcurrent: number; minTime?: number }) {}

  key(id: string): Limiter {
    let l = this.limiters.get(id);
    if (!l) {
      l = new Limiter(this.options.maxConcurrent, this.options.minTime ?? 0, () => this.limiters.delete(id));
      this.limiters.set(id, l);
    }
    return l;
  }
}

/**
 * The plugin's retry limiter: runs the request at once and asks the plugin's "failed" handler whether
 * to try again. Our rate-limit handlers always say no (the caller gets 429 with Retry-After), so
 * nothing waits here.
 */
export class ImmediateRetryLimiter {
  private failed:
    | ((
        error: unknown,
        info: { args: unknown[]; retryCount: number },
      ) => Promise<number | undefined> | number | undefined)
    | undefined;

  on(event: string, handler: NonNullable<ImmediateRetryLimiter['failed']>): void {
    if (event === 'failed') this.failed = handler;
  }

  async schedule(fn: (...a: unknown[]) => Promise<unknown>, ...args: unknown[]): Promise<unknown> {
    for (let retryCount = 0; ; retryCount++) {
      try {
        return await fn(...args);
      } catch (err) {
        const wait = await this.failed?.(err, { args, retryCount });
        if (typeof wait !== 'number' || retryCount >= 2) throw err;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
