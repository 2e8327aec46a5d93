import { Octokit as OctokitCore } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import { throttling, type ThrottlingOptions } from '@octokit/plugin-throttling';
import type { Logger } from '../kit/logger.ts';
import { Problem, problem } from '../kit/problem.ts';
import { dropUnusable, type Credential, type CredentialResolver } from './credentials.ts';
import { CredentialGroup, ImmediateRetryLimiter } from './throttle.ts';

/**
 * The one way this service talks to the platform: one Octokit per credential (kept with it, in
 * memory, and dropped with its ETag cache once the credential is no longer usable), throttled per
 * credential, every request bounded by a timeout, reads revalidated with ETags so a 304 costs no
 * quota, and identical reads in flight at once made once.
 */

interface CachedRead {
  etag: string;
  response: { status: number; url: string; headers: Record<string, string | number | undefined>; data: unknown };
}

export interface PlatformCounters {
  requests: number;
  notModified: number;
  coalesced: number;
  /** Platform requests given up after REPOHOST_PLATFORM_TIMEOUT_MS. */
  timeouts: number;
}

const CLIENTS_KEPT = 500;

/** Only the plugins this service uses (not the whole `octokit` package: its app, OAuth and webhook parts cost start time and memory). */
const Octokit = OctokitCore.plugin(restEndpointMethods, throttling);
type Octokit = InstanceType<typeof Octokit>;

/** Answers whose bodies are too large to keep for revalidation (blobs reach 100 MB): read, never cached. */
const UNCACHED_READ = /\/git\/blobs\//;

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

export class Platform {
  readonly counters: PlatformCounters = { requests: 0, notModified: 0, coalesced: 0, timeouts: 0 };
  private readonly clients = new Map<string, { token: string; octokit: Octokit; usableUntil: number }>();
  private readonly groups: Record<'global' | 'write' | 'search' | 'notifications' | 'auth', CredentialGroup>;
  private readonly fetch: typeof fetch;

  constructor(
    readonly baseUrl: string,
    writeSpacingMs: number,
    private readonly logger: Logger,
    /** Conditional-read entries kept per credential (least recently used go first). */
    private readonly etagEntries = 5_000,
    /** Longest wait for one platform request (REPOHOST_PLATFORM_TIMEOUT_MS). */
    readonly timeoutMs = 30_000,
  ) {
    this.fetch = timedFetch(timeoutMs);
    // The plugin's own limits, kept per credential: 10 at once, writes (and notifying writes) spaced, searches spaced double.
    this.groups = {
      global: new CredentialGroup({ maxConcurrent: 10 }),
      auth: new CredentialGroup({ maxConcurrent: 1 }),
      write: new CredentialGroup({ maxConcurrent: 1, minTime: writeSpacingMs }),
      notifications: new CredentialGroup({ maxConcurrent: 1, minTime: writeSpacingMs }),
      search: new CredentialGroup({ maxConcurrent: 1, minTime: writeSpacingMs * 2 }),
    };
  }

  /** The Octokit of a credential, made once and kept while the credential is usable. */
  octokit(credential: Credential): Octokit {
    const kept = this.clients.get(credential.fingerprint);
    if (kept && kept.token === credential.token) {
      this.clients.delete(credential.fingerprint);
      // The same token resolved again (a personal access token is) keeps its client and ETag cache a while longer.
      kept.usableUntil = Math.max(kept.usableUntil, credential.usableUntil);
      this.clients.set(credential.fingerprint, kept);
      return kept.octokit;
    }
    const octokit = this.build(credential);
    this.clients.set(credential.fingerprint, { token: credential.token, octokit, usableUntil: credential.usableUntil });
    while (this.clients.size > CLIENTS_KEPT) this.clients.delete(this.clients.keys().next().value!);
    return octokit;
  }

  forget(credential: Credential): void {
    this.clients.delete(credential.fingerprint);
  }

  /** Drops the client, and with it the token and ETag cache, of every credential no longer usable. */
  purge(now = Date.now()): number {
    return dropUnusable(this.clients, now);
  }

  /** Fingerprints of the credentials whose clients are kept (for tests: what is still in memory). */
  fingerprints(): string[] {
    return [...this.clients.keys()];
  }

  private build(credential: Credential): Octokit {
    const log = this.logger;
    const octokit = new Octokit({
      auth: credential.token,
      baseUrl: this.baseUrl,
      userAgent: 'hub-services-repohost-gateway',
      log: {
        debug: () => {},
        info: () => {},
        warn: (message: string) => log.warn({ platform: message.slice(0, 200) }, 'platform client warning'),
        error: (message: string) => log.error({ platform: message.slice(0, 200) }, 'platform client error'),
      },
      // The groups are this service's own per-credential limiters (throttle.ts) with the part of Bottleneck's
      // Group the plugin calls, and retryLimiter is read by the plugin without being in its published type.
      throttle: {
        id: credential.fingerprint,
        ...this.groups,
        retryLimiter: new ImmediateRetryLimiter(),
        // Never wait inside the service for a limit: the caller gets 429 with the platform's Retry-After.
        onRateLimit: () => false,
        onSecondaryRateLimit: () => false,
      } as unknown as ThrottlingOptions,
      // No plugin-retry: it schedules every request through a fresh Bottleneck (~5 ms each); transient failures of reads are retried below instead.
      request: { fetch: this.fetch },
    });
    const etags = new Map<string, CachedRead>();
    const inFlight = new Map<string, Promise<unknown>>();
    const counters = this.counters;
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
              while (etags.size > this.etagEntries) etags.delete(etags.keys().next().value!);
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
    return octokit;
  }
}

/**
 * A read that failed in passing (5xx, network) is tried twice more, after 1 s and 4 s; nothing else is
 * retried — not a timeout either: a platform that does not answer is not asked again and again.
 */
async function readWithRetry<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      const status = (err as { status?: number }).status;
      const transient = !isTimeout(err) && (status === undefined || status === 500 || status === 502 || status === 503 || status === 504);
      if (!transient || attempt >= 2) throw err;
      await new Promise((r) => setTimeout(r, (attempt + 1) ** 2 * 1000));
    }
  }
}

/** What a platform call is about, for the problem detail the caller reads. */
export interface CallContext {
  profile: string;
  /** owner/name when the call is about one repository. */
  repo?: string;
  /** Reads normalise "not accessible" 403s to 404; writes keep them as 403. */
  write?: boolean;
  /** What was not found, when it is not the repository itself (a pull request, a job...). */
  thing?: string;
}

function header(err: unknown, name: string): string | undefined {
  const v = (err as { response?: { headers?: Record<string, unknown> } }).response?.headers?.[name];
  return v === undefined ? undefined : String(v);
}

export function platformMessage(err: unknown): string {
  const data = (err as { response?: { data?: unknown } }).response?.data;
  const m = data && typeof data === 'object' ? (data as { message?: unknown }).message : undefined;
  return typeof m === 'string' ? m.slice(0, 200) : '';
}

function isRateLimit(err: unknown, status: number): boolean {
  if (status === 429) return true;
  if (status !== 403) return false;
  return header(err, 'retry-after') !== undefined || header(err, 'x-ratelimit-remaining') === '0' || /rate limit/i.test(platformMessage(err));
}

/** Seconds to wait, as GitHub documents: Retry-After, else until the reset, else a minute. */
function retryAfter(err: unknown): string {
  const after = header(err, 'retry-after');
  if (after && /^\d+$/.test(after)) return after;
  const reset = Number(header(err, 'x-ratelimit-reset'));
  if (header(err, 'x-ratelimit-remaining') === '0' && Number.isFinite(reset)) return String(Math.max(0, Math.ceil(reset - Date.now() / 1000)) + 1);
  return '60';
}

export function notFoundProblem(ctx: CallContext): Problem {
  if (ctx.thing) {
    return problem.notFound(`${ctx.thing} was not found in ${ctx.repo ?? 'the repository'}; check the number or name.`);
  }
  return problem.notFound(
    `Repository ${ctx.repo ?? ''} was not found, or the connection of profile "${ctx.profile}" cannot see it; check the name, or grant the repository to that connection (GET /v1/me shows its reach).`,
  );
}

function timeoutProblem(err: unknown, ctx: CallContext): Problem {
  const ms = err instanceof PlatformTimeout ? err.ms : ((err as { cause?: PlatformTimeout }).cause?.ms ?? 0);
  const write = ctx.write ? ' The change may or may not have been made: read the current state before sending it again.' : '';
  return new Problem(
    504,
    'Gateway Timeout',
    `The platform did not answer within ${ms} ms (REPOHOST_PLATFORM_TIMEOUT_MS).${write} Try again shortly; if the platform is merely slow, raise REPOHOST_PLATFORM_TIMEOUT_MS.`,
  );
}

/** Turns a platform failure into the problem the caller reads; the platform's payload never passes through. */
export function platformProblem(err: unknown, ctx: CallContext): Problem {
  if (err instanceof Problem) return err;
  if (isTimeout(err)) return timeoutProblem(err, ctx);
  const status = (err as { status?: number }).status;
  if (typeof status !== 'number' || status === 500) {
    return problem.badGateway('The platform could not be reached or failed; try again shortly.');
  }
  if (isRateLimit(err, status)) {
    return problem.tooMany(
      `The platform\u2019s rate limit for the connection of profile "${ctx.profile}" is reached; wait the seconds in Retry-After and send the request again.`,
      retryAfter(err),
    );
  }
  if (status === 404 || (status === 403 && !ctx.write && /not accessible|must have|permission/i.test(platformMessage(err)))) {
    return notFoundProblem(ctx);
  }
  if (status === 403) {
    return problem.forbidden(
      `The connection of profile "${ctx.profile}" may not do this${ctx.repo ? ` in ${ctx.repo}` : ''} (${platformMessage(err) || 'forbidden'}); grant it the needed permission on the platform.`,
    );
  }
  if (status === 401) {
    return problem.badGateway(
      `The platform refused the credential of profile "${ctx.profile}" even after a refresh; renew that connection at the identity service (PUT /v1/connections/${ctx.profile}).`,
    );
  }
  if (status === 409 || status === 405) {
    return problem.conflict(`The platform refused: ${platformMessage(err) || 'conflict'}. Read the current state and try again.`);
  }
  if (status === 422 || status === 400) {
    return problem.unprocessable(`The platform refused the request: ${platformMessage(err) || 'validation failed'}. Correct it and try again.`);
  }
  return problem.badGateway(`The platform answered ${status}; try again shortly.`);
}

/** One caller's access to the platform under one profile's credential, with the one refresh a 401 earns. */
export class Session {
  private using: Credential | undefined;
  /** The sweep confirmed its held credential once for the whole pass; a request's session confirms its own. */
  private readonly confirmedForPass: boolean;

  constructor(
    private readonly resolver: CredentialResolver,
    private readonly platform: Platform,
    readonly account: string,
    readonly profile: string,
    private readonly callerToken: string | undefined,
    options: {
      /** The session credential the caller's token was minted with (its sid claim), whose revocation stops this session. */
      session?: string;
      /** A credential the sweep holds and has confirmed for this pass. */
      held?: Credential;
    } = {},
  ) {
    this.session = options.session;
    this.using = options.held;
    this.confirmedForPass = options.held !== undefined;
  }

  readonly session: string | undefined;

  /** The credential this session last used, if any. */
  get credential(): Credential | undefined {
    return this.using;
  }

  /**
   * The credential to act with: the one in use or cached, once the identity service confirmed (at most
   * every REPOHOST_CREDENTIAL_RECHECK_MS) that it is still current for this caller; else resolved anew
   * with the caller's token. A background sweep without a token gets CredentialGone.
   */
  async current(): Promise<Credential> {
    const now = Date.now();
    const held = this.using && this.using.usableUntil > now ? this.using : this.resolver.cached(this.account, this.profile);
    if (held) {
      if (this.confirmedForPass && held === this.using) return held;
      const state = await this.resolver.confirm(held, this.session);
      if (state === 'current') return (this.using = held);
      if (state === 'session_revoked') {
        this.using = undefined;
        if (!this.callerToken) throw new CredentialGone();
        throw problem.unauthorized(
          'The session credential your token was minted with has been revoked or has expired; ask the identity service for a new token with a current session credential.',
          true,
        );
      }
      if (state === 'unconfirmed') {
        throw problem.unavailable(
          `The identity service at REPOHOST_IDENTITY_URL could not confirm that the connection of profile "${this.profile}" still stands; make sure it is running and try again.`,
        );
      }
    }
    this.using = undefined;
    if (!this.callerToken) throw new CredentialGone();
    const fresh = await this.resolver.resolve(this.account, this.profile, this.callerToken);
    this.resolver.confirmedNow(fresh, this.session);
    return (this.using = fresh);
  }

  /** Runs `fn` with the profile's Octokit; a platform 401 refreshes the credential once and runs it again. */
  async run<T>(ctx: Omit<CallContext, 'profile'>, fn: (octokit: Octokit) => Promise<T>): Promise<T> {
    const full = { ...ctx, profile: this.profile };
    const credential = await this.current();
    try {
      return await fn(this.platform.octokit(credential));
    } catch (err) {
      if ((err as { status?: number }).status !== 401 || !this.callerToken) throw platformProblem(err, full);
    }
    this.platform.forget(credential);
    this.resolver.forget(this.account, this.profile);
    const fresh = await this.resolver.resolve(this.account, this.profile, this.callerToken, true);
    this.resolver.confirmedNow(fresh, this.session);
    this.using = fresh;
    try {
      return await fn(this.platform.octokit(fresh));
    } catch (err) {
      throw platformProblem(err, full);
    }
  }
}

/** A background sweep has no caller token and the held credential ran out. */
export class CredentialGone extends Error {
  override name = 'CredentialGone';
}

/** A page of at most `limit` items and the exact total, from the Link header (one more read when there are several pages). */
export async function listWithTotal<T>(
  octokit: Octokit,
  route: string,
  params: Record<string, unknown>,
  limit: number,
): Promise<{ total: number; items: T[] }> {
  const first = await octokit.request(route, { ...params, per_page: limit, page: 1 });
  const items = first.data as T[];
  const last = /<[^>]*[?&]page=(\d+)[^>]*>;\s*rel="last"/.exec(String(first.headers.link ?? ''))?.[1];
  if (!last || Number(last) <= 1) return { total: items.length, items };
  const lastPage = await octokit.request(route, { ...params, per_page: limit, page: Number(last) });
  return { total: (Number(last) - 1) * limit + (lastPage.data as T[]).length, items };
}
