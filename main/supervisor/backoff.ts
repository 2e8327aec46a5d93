/** Restart policy: capped exponential backoff, and a give-up after too many crashes in a window. */
export interface RestartPolicy {
  /** Delay before the first restart. */
  baseDelayMs: number;
  /** The delay doubles per crash up to this cap. */
  maxDelayMs: number;
  /** This many crashes inside `windowMs` means giving up. */
  maxCrashes: number;
  windowMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = {
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  maxCrashes: 5,
  windowMs: 120_000,
};

/** Delay before restart number `attempt` (1 for the first restart after a crash). */
export function backoffDelay(attempt: number, policy: RestartPolicy): number {
  const exponent = Math.max(0, attempt - 1);
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(exponent, 30));
}

/** Remembers crash times and answers whether the service crashed too often to try again. */
export class CrashHistory {
  private times: number[] = [];
  constructor(private readonly policy: RestartPolicy) {}

  /** Records a crash at `now` and returns how many crashes fall inside the window, this one included. */
  record(now: number): number {
    this.times = this.times.filter((t) => now - t < this.policy.windowMs);
    this.times.push(now);
    return this.times.length;
  }

  tooMany(count: number): boolean {
    return count >= this.policy.maxCrashes;
  }

  clear(): void {
    this.times = [];
  }
}
