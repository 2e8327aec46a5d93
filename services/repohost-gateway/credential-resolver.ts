import { createHash } from 'node:crypto';
import { urlPath } from '../../common/url-path.ts';
import type { IdentityAnswer, IdentityChannel } from '../kit/identity-channel.ts';
import type { Logger } from '../kit/logger.ts';
import { problem } from '../kit/problem.ts';
import { PROFILE_RULE } from '../kit/profile.ts';

/** A person's platform credential for one profile; lives in memory only. */
export interface Credential {
  readonly account: string;
  readonly profile: string;
  readonly kind: 'token' | 'app';
  readonly token: string;
  /** For an app installation: the account it is installed on, as the identity service reports it. */
  readonly login?: string;
  /** Epoch ms after which it is not used any more ("shortly before" the platform's expiry). */
  readonly usableUntil: number;
  /** Stable, non-reversible name of the credential for throttling and cache partitions. */
  readonly fingerprint: string;
  /** The connection's revision at the identity service; absent from an identity service that does not give one (never re-checked then). */
  readonly revision?: string;
}

/**
 * What the identity service said when asked whether a held credential is still current: `stale` means
 * the credential itself is gone (connection removed or replaced, account removed) and is dropped
 * everywhere; `session_revoked` means only this caller's session credential is gone, so the caller is
 * refused while the credential may still serve the account's other sessions.
 */
export type Confirmation = 'current' | 'stale' | 'session_revoked' | 'unconfirmed';

/** Refresh this long before the identity service's expiry, so a request never starts with a dying credential. */
const EARLY_MS = 60_000;
/** Account and profile pairs whose credentials are kept at once (least recently used out). */
export const CREDENTIALS_KEPT = 1_000;

const confirmationKey = (c: Credential, session: string | undefined) =>
  `${c.fingerprint}\0${c.revision ?? ''}\0${session ?? ''}`;

/**
 * Resolves platform credentials from the identity service with this service's own token and the
 * caller's verified token, only ever over `identity`, the channel on which identity proves itself (its
 * socket, or https): the service token, the caller's token and the answers never cross identity's port. Resolved credentials are cached in memory until shortly before they
 * expire, then dropped (when next looked up, and by `purge` on every sweep tick); nothing is written
 * anywhere.
 */
export class CredentialResolver {
  private readonly cache = new Map<string, Credential>();
  private readonly inFlight = new Map<string, Promise<Credential>>();
  /** When each (credential, session) was last confirmed current, least recently confirmed first. */
  private readonly confirmed = new Map<string, number>();
  private readonly confirming = new Map<string, Promise<Confirmation>>();
  /** Session credentials the identity service said are revoked: they never come back, so they are not asked about again. */
  private readonly revokedSessions = new Set<string>();
  private readonly staleListeners: ((credential: Credential) => void)[] = [];
  resolutions = 0;
  /** Questions asked of the identity service's POST /v1/credentials/check. */
  checks = 0;

  constructor(
    /** The one way to identity (services/kit/identity-channel.ts). */
    readonly identity: IdentityChannel,
    private readonly serviceToken: string | undefined,
    /** A held credential is confirmed with the identity service at most this often (REPOHOST_CREDENTIAL_RECHECK_MS). */
    private readonly recheckMs = 5_000,
    private readonly logger?: Logger,
    /** Most credentials (account and profile pairs) kept at once; the least recently used go first. */
    private readonly kept = CREDENTIALS_KEPT,
  ) {}

  /** Runs `listener` with every credential found no longer current, so whoever holds it drops it. */
  onStale(listener: (credential: Credential) => void): void {
    this.staleListeners.push(listener);
  }

  /** How many credentials and confirmations are kept (for tests: bounded). */
  get sizes(): { credentials: number; confirmations: number } {
    return { credentials: this.cache.size, confirmations: this.confirmed.size };
  }

  get configured(): boolean {
    return this.serviceToken !== undefined;
  }

  cached(account: string, profile: string): Credential | undefined {
    const key = `${account}\0${profile}`;
    const c = this.cache.get(key);
    if (!c) return undefined;
    if (c.usableUntil <= Date.now()) {
      this.cache.delete(key);
      return undefined;
    }
    // Least recently used last out.
    this.cache.delete(key);
    this.cache.set(key, c);
    return c;
  }

  /**
   * Whether `credential` is still the current one for a caller whose token was minted with session
   * credential `session`: asked of the identity service at most every REPOHOST_CREDENTIAL_RECHECK_MS
   * per credential and session. A stale one is dropped here and by every listener.
   */
  async confirm(credential: Credential, session: string | undefined): Promise<Confirmation> {
    if (session !== undefined && this.revokedSessions.has(`${credential.account}\0${session}`))
      return 'session_revoked';
    if (credential.revision === undefined || !this.serviceToken) return 'current';
    const key = confirmationKey(credential, session);
    const at = this.confirmed.get(key);
    if (at !== undefined && Date.now() - at < this.recheckMs) return 'current';
    const running = this.confirming.get(key);
    if (running) return running;
    const p = this.askIdentity(credential, session).finally(() => this.confirming.delete(key));
    this.confirming.set(key, p);
    return p;
  }

  /** Records that the identity service just vouched for `credential` and `session` (it resolved it for them). */
  confirmedNow(credential: Credential, session: string | undefined): void {
    if (credential.revision === undefined) return;
    const key = confirmationKey(credential, session);
    this.confirmed.delete(key);
    this.confirmed.set(key, Date.now());
    while (this.confirmed.size > this.kept * 4) this.confirmed.delete(this.confirmed.keys().next().value!);
  }

  private async askIdentity(credential: Credential, session: string | undefined): Promise<Confirmation> {
    let answer: { current?: unknown; reason?: unknown };
    try {
      this.checks += 1;
      const res = await this.identity.call({
        method: 'POST',
        path: urlPath`/v1/credentials/check`,
        headers: { authorization: `Bearer ${this.serviceToken}` },
        body: {
          account: credential.account,
          profile: credential.profile,
          revision: credential.revision,
          ...(session ? { session } : {}),
        },
        timeoutMs: 15_000,
      });
      if (res.status !== 200 || typeof res.body !== 'object' || res.body === null) {
        this.logger?.warn(
          { status: res.status },
          'the identity service did not answer whether a held platform credential is current',
        );
        return 'unconfirmed';
      }
      answer = res.body as typeof answer;
    } catch {
      return 'unconfirmed';
    }
    if (answer.current === true) {
      this.confirmedNow(credential, session);
      return 'current';
    }
    const reason = typeof answer.reason === 'string' ? answer.reason : 'unknown';
    if (reason === 'session_revoked' && session !== undefined) {
      // The connection stands; only this caller's session credential is gone.
      this.revokedSessions.add(`${credential.account}\0${session}`);
      while (this.revokedSessions.size > this.kept * 4)
        this.revokedSessions.delete(this.revokedSessions.values().next().value!);
      this.logger?.info({ reason }, 'a caller\u2019s session credential was revoked; its requests and sweeps stop');
      return 'session_revoked';
    }
    this.drop(credential);
    this.logger?.info({ reason }, 'a held platform credential is no longer current; dropped');
    return 'stale';
  }

  /** Forgets a credential that is no longer current, here and wherever a listener holds it. */
  private drop(credential: Credential): void {
    const key = `${credential.account}\0${credential.profile}`;
    if (this.cache.get(key)?.fingerprint === credential.fingerprint) this.cache.delete(key);
    const prefix = `${credential.fingerprint}\0`;
    for (const k of this.confirmed.keys()) if (k.startsWith(prefix)) this.confirmed.delete(k);
    for (const listener of this.staleListeners) listener(credential);
  }

  /** Drops every credential no longer usable; nothing of it stays reachable from here. */
  purge(now = Date.now()): number {
    return dropUnusable(this.cache, now);
  }

  /** Fingerprints of the credentials held (for tests: what is still in memory). */
  fingerprints(): string[] {
    return [...this.cache.values()].map((c) => c.fingerprint);
  }

  /** The credential of `account`'s `profile`; `fresh` bypasses both caches (after the platform said 401). */
  async resolve(account: string, profile: string, callerToken: string, fresh = false): Promise<Credential> {
    const key = `${account}\0${profile}`;
    if (!fresh) {
      const hit = this.cached(account, profile);
      if (hit) return hit;
    }
    // Joined only by the same token: the identity service vouches for each caller's session credential, so a
    // revoked session's token never shares an answer the identity service gave another session.
    const flight = `${key}\0${callerToken}`;
    const running = this.inFlight.get(flight);
    if (running && !fresh) return running;
    const p = this.fetchCredential(account, profile, callerToken, fresh).finally(() => this.inFlight.delete(flight));
    this.inFlight.set(flight, p);
    const credential = await p;
    this.cache.delete(key);
    this.cache.set(key, credential);
    while (this.cache.size > this.kept) this.cache.delete(this.cache.keys().next().value!);
    return credential;
  }

  forget(account: string, profile: string): void {
    this.cache.delete(`${account}\0${profile}`);
  }

  private async fetchCredential(
    account: string,
    profile: string,
    callerToken: string,
    fresh: boolean,
  ): Promise<Credential> {
    if (!this.serviceToken) {
      throw problem.unavailable(
        'REPOHOST_IDENTITY_SERVICE_TOKEN is not set, so no platform credential can be resolved; set it to the token registered as repohost-api in the identity service\u2019s IDENTITY_SERVICE_TOKENS.',
      );
    }
    let res: IdentityAnswer;
    try {
      res = await this.identity.call({
        method: 'POST',
        path: urlPath`/v1/credentials/resolve`,
        headers: {
          authorization: `Bearer ${this.serviceToken}`,
          ...(fresh ? { 'cache-control': 'no-cache' } : {}),
        },
        body: { caller_token: callerToken, profile },
        timeoutMs: 15_000,
      });
    } catch {
      throw problem.unavailable(
        `The identity service at ${this.identity.url} cannot be reached on ${this.identity.where} to resolve the platform credential; make sure it is running.`,
      );
    }
    this.resolutions += 1;
    if (res.status === 404) {
      throw problem.notFound(
        `Profile "${profile}" has no platform connection; add one with PUT ${this.identity.url}/v1/connections/${profile} (or in the console), or send another X-Identity-Profile.`,
      );
    }
    if (res.status === 401) {
      throw problem.unavailable(
        'The identity service does not accept REPOHOST_IDENTITY_SERVICE_TOKEN; set it to the token registered as repohost-api in IDENTITY_SERVICE_TOKENS.',
      );
    }
    if (res.status === 403) {
      throw problem.unauthorized(
        'The identity service refused your token for credential resolution: it is no longer valid, or the session credential it was minted with has been revoked or has expired; ask the identity service for a new token for repohost-api with a current session credential.',
      );
    }
    if (res.status === 422) {
      throw problem.unprocessable(`X-Identity-Profile is not a valid profile name: ${PROFILE_RULE}.`);
    }
    if (res.status !== 200 || typeof res.body !== 'object' || res.body === null) {
      throw problem.badGateway(
        `The identity service could not resolve the credential of profile "${profile}" (status ${res.status}); check the connection of that profile.`,
      );
    }
    const body = res.body as {
      kind: 'token' | 'app';
      token: string;
      expires_at: string;
      login?: string;
      revision?: string;
    };
    const expires = Date.parse(body.expires_at);
    return {
      account,
      profile,
      kind: body.kind,
      token: body.token,
      ...(typeof body.login === 'string' && body.login ? { login: body.login } : {}),
      usableUntil: Number.isFinite(expires)
        ? Math.max(Date.now() + 5_000, expires - EARLY_MS)
        : Date.now() + 5 * 60_000,
      fingerprint: createHash('sha256').update(body.token).digest('hex').slice(0, 16),
      ...(typeof body.revision === 'string' && body.revision ? { revision: body.revision } : {}),
    };
  }
}

/** Deletes the entries whose credential is no longer usable; returns how many went. */
export function dropUnusable<K>(entries: Map<K, { usableUntil: number }>, now: number): number {
  let dropped = 0;
  for (const [key, entry] of entries) {
    if (entry.usableUntil <= now) {
      entries.delete(key);
      dropped += 1;
    }
  }
  return dropped;
}
