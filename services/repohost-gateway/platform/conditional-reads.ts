import type { Octokit } from '@octokit/core';
import { readWithRetry } from './retry.ts';
import { isTimeout } from './timed-fetch.ts';

/**
 * The request hook of every platform client: reads revalidated with ETags so a 304 costs no quota,
 * identical reads in flight at once made once, reads that fail in passing retried, and every request
 * counted.
 */

export interface PlatformCounters {
  requests: number;
  notModified: number;
  coalesced: number;
  /** Platform requests given up after REPOHOST_PLATFORM_TIMEOUT_MS. */
  timeouts: number;
}

interface CachedRead {
  etag: string;
  response: { status: number; url: string; headers: Record<string, string | number | undefined>; data: unknown };
}

/** Answers whose bodies are too large to keep for revalidation (blobs reach 100 MB): read, never cached. */
const UNCACHED_READ = /\/git\/blobs\//;

/** Hooks conditional reads into `octokit`, with its own ETag cache of at most `entries` (least recently used go first). */
export function revalidateReads(octokit: Octokit, counters: PlatformCounters, entries: number): void {
  const etags = new Map<string, CachedRead>();
  const inFlight = new Map<string, Promise<unknown>>();
  const countTimeout = async <T>(p: T | Promise<T>): Promise<T> => {
    try {
      return await p;
    } catch (err) {
      if (isTimeout(err)) counters.timeouts += 1;
      throw err;
    }
  };
  octokit.hook.wrap('request', async (request, options) => {
    if (options.method !== 'GET') {
      counters.requests += 1;
      return countTimeout(request(options));
    }
    const parsed = octokit.request.endpoint.parse(options);
    const key = `${parsed.url} ${String(parsed.headers.accept ?? '')}`;
    const running = inFlight.get(key);
    if (running) {
      counters.coalesced += 1;
      return running as ReturnType<typeof request>;
    }
    const keep = !UNCACHED_READ.test(parsed.url);
    const read = (async () => {
      const cached = keep ? etags.get(key) : undefined;
      counters.requests += 1;
      try {
        if (cached) {
          // Least recently used first out: a hit moves to the end.
          etags.delete(key);
          etags.set(key, cached);
        }
        return await readWithRetry(async () => {
          // before-after-hook binds the same options object to every inner hook: the header must be set on it.
          if (cached) options.headers['if-none-match'] = cached.etag;
          const res = await request(options);
          const etag = res.headers.etag;
          if (keep && res.status === 200 && typeof etag === 'string') {
            etags.delete(key);
            etags.set(key, { etag, response: res as CachedRead['response'] });
            while (etags.size > entries) etags.delete(etags.keys().next().value!);
          }
          return res;
        });
      } catch (err) {
        if ((err as { status?: number }).status === 304 && cached) {
          counters.notModified += 1;
          const headers = (err as { response?: { headers?: Record<string, string> } }).response?.headers ?? {};
          return { ...cached.response, headers: { ...cached.response.headers, ...headers, etag: cached.etag } };
        }
        if (isTimeout(err)) counters.timeouts += 1;
        throw err;
      }
    })().finally(() => inFlight.delete(key));
    inFlight.set(key, read);
    return read as ReturnType<typeof request>;
  });
}
