import { providerError } from './errors.ts';

export class ClientGone extends Error {
  override name = 'ClientGone';
}

/**
 * A cap on CLI runs at once with a bounded queue behind it: a request past the queue is refused with
 * 429 at once rather than left to hang; a waiting request whose client went away leaves the queue.
 */
export class RunSlots {
  private active = 0;
  private readonly waiting: { grant: () => void; signal?: AbortSignal; onAbort: () => void }[] = [];

  constructor(
    readonly cap: number,
    readonly maxQueue: number,
  ) {}

  get running(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with a release function once a slot is free. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new ClientGone('client went away while queued'));
    if (this.active < this.cap) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.maxQueue)
      return Promise.reject(providerError.queueFull(this.active, this.waiting.length));
    return new Promise((resolve, reject) => {
      const entry = {
        signal,
        grant: () => {
          signal?.removeEventListener('abort', entry.onAbort);
          resolve(this.releaser());
        },
        onAbort: () => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(new ClientGone('client went away while queued'));
        },
      };
      signal?.addEventListener('abort', entry.onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.active--;
    };
  }
}
