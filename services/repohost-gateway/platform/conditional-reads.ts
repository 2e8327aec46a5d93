import type { Octokit } from '@octokit/core';
import type { EtagCache } from './etag-cache.ts';
import { readWithRetry } from './retry.ts';
import { isTimeout } from './timed-fetch.ts';

/**
 * Conditional reads for every platform client: the request hook makes identical reads in flight at
 * once one read, retries reads that fail in passing and counts every request; the client's fetch
 * revalidates each read with the ETag of the answer kept for it (a 304 costs no quota) and keeps new
 * answers in the byte-bounded `EtagCache`.
 */

export interface PlatformCounters {
  requests: number;
  notModified: number;
  coalesced: number;
  /** Platform requests given up after REPOHOST_PLATFORM_TIMEOUT_MS. */
  timeouts: number;
}

/** Answers whose bodies are too large to keep for revalidation (blobs reach 100 MB): read, never kept. */
const UNCACHED_READ = /\/git\/blobs\//;

/** Headers of a 304 that do not describe the kept body, so they do not replace the kept answer's. */
const BODY_HEADERS = new Set(['content-length', 'content-type', 'content-encoding', 'transfer-encoding']);

/** Hooks in-flight de-duplication, retries of reads and counting into `octokit`. */
export function coalesceReads(octokit: Octokit, counters: PlatformCounters): void {
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
    // Lives only while the read runs: at most one entry per distinct read in flight.
    const key = `${parsed.url} ${String(parsed.headers.accept ?? '')}`;
    const running = inFlight.get(key);
    if (running) {
      counters.coalesced += 1;
      return running as ReturnType<typeof request>;
    }
    const read = (async () => {
      counters.requests += 1;
      return countTimeout(readWithRetry(async () => request(options)));
    })().finally(() => inFlight.delete(key));
    inFlight.set(key, read);
    return read as ReturnType<typeof request>;
  });
}

/**
 * The fetch of one credential's client: a GET is sent with `If-None-Match` when an answer is kept for
 * it, and a 304 is answered with the kept answer (a fresh copy each time, so no caller shares another's
 * object); a 200 with an ETag is kept (within the budget). Errors are never kept.
 */
export function revalidatingFetch(
  inner: typeof fetch,
  answers: EtagCache,
  credential: string,
  counters: PlatformCounters,
): typeof fetch {
  return async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers = new Headers(init.headers);
    if ((init.method ?? 'GET').toUpperCase() !== 'GET' || UNCACHED_READ.test(url) || headers.has('if-none-match'))
      return inner(input, init);
    const key = `${url} ${headers.get('accept') ?? ''}`;
    const kept = answers.get(credential, key);
    if (kept) headers.set('if-none-match', kept.etag);
    const res = await inner(input, { ...init, headers });
    if (res.status === 304 && kept) {
      counters.notModified += 1;
      const merged = new Headers(kept.headers as [string, string][]);
      res.headers.forEach((value, name) => {
        if (!BODY_HEADERS.has(name)) merged.set(name, value);
      });
      merged.set('etag', kept.etag);
      return answer(kept.body, 200, merged, kept.url);
    }
    if (res.status !== 200) return res;
    const etag = res.headers.get('etag');
    if (!etag) {
      // A newer answer without an ETag: the kept one is stale.
      answers.forget(credential, key);
      return res;
    }
    const body = await res.arrayBuffer();
    const answerUrl = res.url || url;
    const pairs: [string, string][] = [];
    res.headers.forEach((value, name) => void pairs.push([name, value]));
    answers.keep(credential, key, { etag, url: answerUrl, headers: pairs, body });
    return answer(body, 200, res.headers, answerUrl);
  };
}

/** A Response of `body` (copied by the constructor: the kept bytes are never handed out) whose `url` is the answer's. */
function answer(body: ArrayBuffer, status: number, headers: Headers, url: string): Response {
  const res = new Response(body, { status, headers });
  Object.defineProperty(res, 'url', { value: url });
  return res;
}
