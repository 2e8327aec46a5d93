import { Octokit as OctokitCore } from '@octokit/core';
import { restEndpointMethods } from '@octokit/plugin-rest-endpoint-methods';
import { throttling, type ThrottlingOptions } from '@octokit/plugin-throttling';
import type { Logger } from '../../kit/logger.ts';
import { dropUnusable, type Credential } from '../credential-resolver.ts';
import { CredentialGroup, ImmediateRetryLimiter } from '../throttle.ts';
import { coalesceReads, revalidatingFetch, type PlatformCounters } from './conditional-reads.ts';
import { DEFAULT_ETAG_CACHE_BYTES, EtagCache } from './etag-cache.ts';
import { timedFetch } from './timed-fetch.ts';

/**
 * One Octokit per credential, kept with it in memory and dropped with its kept answers once the
 * credential is no longer usable; throttled per credential, every request bounded by a timeout.
 */

/** Clients (one per credential) kept at once, least recently used out; each costs about 10 KB besides its kept answers (the benchmark measures it). */
export const CLIENTS_KEPT = 500;

/** Only the plugins this service uses (not the whole `octokit` package: its app, OAuth and webhook parts cost start time and memory). */
const Octokit = OctokitCore.plugin(restEndpointMethods, throttling);
/** The platform client every call of this service is made with. */
export type PlatformClient = InstanceType<typeof Octokit>;

export class Platform {
  readonly counters: PlatformCounters = { requests: 0, notModified: 0, coalesced: 0, timeouts: 0 };
  /** The answers kept for revalidation, of every credential, within REPOHOST_ETAG_CACHE_BYTES. */
  readonly answers: EtagCache;
  private readonly clients = new Map<string, { token: string; octokit: PlatformClient; usableUntil: number }>();
  private readonly groups: Record<'global' | 'write' | 'search' | 'notifications' | 'auth', CredentialGroup>;
  private readonly fetch: typeof fetch;

  constructor(
    readonly baseUrl: string,
    writeSpacingMs: number,
    private readonly logger: Logger,
    /** Bytes of answers kept for revalidation, all credentials together (REPOHOST_ETAG_CACHE_BYTES). */
    etagBytes = DEFAULT_ETAG_CACHE_BYTES,
    /** Longest wait for one platform request (REPOHOST_PLATFORM_TIMEOUT_MS). */
    readonly timeoutMs = 30_000,
  ) {
    this.fetch = timedFetch(timeoutMs);
    this.answers = new EtagCache(etagBytes);
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
  octokit(credential: Credential): PlatformClient {
    const kept = this.clients.get(credential.fingerprint);
    if (kept && kept.token === credential.token) {
      this.clients.delete(credential.fingerprint);
      // The same token resolved again (a personal access token is) keeps its client and ETag cache a while longer.
      kept.usableUntil = Math.max(kept.usableUntil, credential.usableUntil);
      this.clients.set(credential.fingerprint, kept);
      return kept.octokit;
    }
    // Answers kept under this fingerprint for another token (a hash prefix collision) are never served to this one.
    this.answers.drop(credential.fingerprint);
    const octokit = this.build(credential);
    this.clients.set(credential.fingerprint, { token: credential.token, octokit, usableUntil: credential.usableUntil });
    while (this.clients.size > CLIENTS_KEPT) {
      const oldest = this.clients.keys().next().value!;
      this.clients.delete(oldest);
      this.answers.drop(oldest);
    }
    return octokit;
  }

  forget(credential: Credential): void {
    this.clients.delete(credential.fingerprint);
    this.answers.drop(credential.fingerprint);
  }

  /** Drops the client, and with it the token and kept answers, of every credential no longer usable. */
  purge(now = Date.now()): number {
    const dropped = dropUnusable(this.clients, now);
    this.answers.retainOnly(new Set(this.clients.keys()));
    return dropped;
  }

  /** Fingerprints of the credentials whose clients are kept (for tests: what is still in memory). */
  fingerprints(): string[] {
    return [...this.clients.keys()];
  }

  private build(credential: Credential): PlatformClient {
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
      // No plugin-retry: it schedules every request through a fresh Bottleneck (~5 ms each); transient failures of reads are retried in retry.ts instead.
      request: { fetch: revalidatingFetch(this.fetch, this.answers, credential.fingerprint, this.counters) },
    });
    coalesceReads(octokit, this.counters);
    return octokit;
  }
}
