import { isTimeout } from './timed-fetch.ts';

/**
 * A read that failed in passing (5xx, network) is tried twice more, after 1 s and 4 s; nothing else is
 * retried — not a timeout either: a platform that does not answer is not asked again and again.
 */
export async function readWithRetry<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      const status = (err as { status?: number }).status;
      const transient =
        !isTimeout(err) &&
        (status === undefined || status === 500 || status === 502 || status === 503 || status === 504);
      if (!transient || attempt >= 2) throw err;
      await new Promise((r) => setTimeout(r, (attempt + 1) ** 2 * 1000));
    }
  }
}
