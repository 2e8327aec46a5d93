import { createHash } from 'node:crypto';
import { problem } from '../kit/problem.ts';

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
}

/** Refresh this long before the identity service's expiry, so a request never starts with a dying credential. */
const EARLY_MS = 60_000;

/**
 * Resolves platform credentials from the identity service with this service's own token and the
 * caller's verified token. Resolved credentials are cached in memory until shortly before they
 * expire, then dropped (when next looked up, and by `purge` on every sweep tick); nothing is written
 * anywhere.
 */
export class CredentialResolver {
  private readonly cache = new Map<string, Credential>();
  private readonly inFlight = new Map<string, Promise<Credential>>();
  resolutions = 0;

  constructor(
    private readonly identityUrl: string,
    private readonly serviceToken: string | undefined,
  ) {}

  get configured(): boolean {
    return this.serviceToken !== undefined;
  }

  cached(account: string, profile: string): Credential | undefined {
    const key = `${account}\0${profile}`;
    const c = this.cache.get(key);
    if (c && c.usableUntil <= Date.now()) this.cache.delete(key);
    return c && c.usableUntil > Date.now() ? c : undefined;
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
    const running = this.inFlight.get(key);
    if (running && !fresh) return running;
    const p = this.fetchCredential(account, profile, callerToken, fresh).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    const credential = await p;
    this.cache.set(key, credential);
    return credential;
  }

  forget(account: string, profile: string): void {
    this.cache.delete(`${account}\0${profile}`);
  }

  private async fetchCredential(account: string, profile: string, callerToken: string, fresh: boolean): Promise<Credential> {
    if (!this.serviceToken) {
      throw problem.unavailable(
        'REPOHOST_IDENTITY_SERVICE_TOKEN is not set, so no platform credential can be resolved; set it to the token registered as repohost-api in the identity service\u2019s IDENTITY_SERVICE_TOKENS.',
      );
    }
    let res: Response;
    try {
      res = await fetch(`${this.identityUrl}/v1/credentials/resolve`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${this.serviceToken}`,
          'content-type': 'application/json',
          ...(fresh ? { 'cache-control': 'no-cache' } : {}),
        },
        body: JSON.stringify({ caller_token: callerToken, profile }),
        signal: AbortSignal.timeout(15_000),
      });
    } catch {
      throw problem.unavailable(`The identity service at ${this.identityUrl} cannot be reached to resolve the platform credential; make sure it is running.`);
    }
    this.resolutions += 1;
    if (res.status === 404) {
      await res.body?.cancel();
      throw problem.notFound(
        `Profile "${profile}" has no platform connection; add one with PUT ${this.identityUrl}/v1/connections/${profile} (or in the console), or send another X-Identity-Profile.`,
      );
    }
    if (res.status === 401) {
      await res.body?.cancel();
      throw problem.unavailable(
        'The identity service does not accept REPOHOST_IDENTITY_SERVICE_TOKEN; set it to the token registered as repohost-api in IDENTITY_SERVICE_TOKENS.',
      );
    }
    if (res.status === 403) {
      await res.body?.cancel();
      throw problem.unauthorized('The identity service refused your token for credential resolution; ask it for a new token for repohost-api.');
    }
    if (res.status === 422) {
      await res.body?.cancel();
      throw problem.unprocessable('X-Identity-Profile is not a valid profile name: 1-64 letters, digits, dot, dash or underscore.');
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw problem.badGateway(
        `The identity service could not resolve the credential of profile "${profile}" (status ${res.status}); check the connection of that profile.`,
      );
    }
    const body = (await res.json()) as { kind: 'token' | 'app'; token: string; expires_at: string; login?: string };
    const expires = Date.parse(body.expires_at);
    return {
      account,
      profile,
      kind: body.kind,
      token: body.token,
      ...(typeof body.login === 'string' && body.login ? { login: body.login } : {}),
      usableUntil: Number.isFinite(expires) ? Math.max(Date.now() + 5_000, expires - EARLY_MS) : Date.now() + 5 * 60_000,
      fingerprint: createHash('sha256').update(body.token).digest('hex').slice(0, 16),
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
