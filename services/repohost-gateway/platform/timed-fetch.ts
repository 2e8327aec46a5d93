/** A platform request that got no (complete) answer within the timeout. */
export class PlatformTimeout extends Error {
  override name = 'PlatformTimeout';
  constructor(readonly ms: number) {
    super(`the platform did not answer within ${ms} ms`);
  }
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * fetch bounded by a timeout that covers the answer *and* its body: the body is read here, under the
 * same timer, because @octokit/request swallows a body that fails half-way (it would pass as "").
 */
export function timedFetch(ms: number): typeof fetch {
  return async (input, init = {}) => {
    const timer = AbortSignal.timeout(ms);
    const signal = init.signal ? AbortSignal.any([init.signal, timer]) : timer;
    try {
      const res = await fetch(input, { ...init, signal });
      const body = NULL_BODY.has(res.status) ? null : await res.arrayBuffer();
      const copy = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
      Object.defineProperty(copy, 'url', { value: res.url });
      return copy;
    } catch (err) {
      if (timer.aborted) throw new PlatformTimeout(ms);
      throw err;
    }
  };
}

/** Whether a failure is (or wraps) a platform timeout. */
export function isTimeout(err: unknown): boolean {
  return err instanceof PlatformTimeout || (err as { cause?: unknown } | undefined)?.cause instanceof PlatformTimeout;
}
