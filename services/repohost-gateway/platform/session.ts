import { problem, type Problem } from '../../kit/problem.ts';
import type { Credential, CredentialResolver } from '../credential-resolver.ts';
import type { Platform, PlatformClient } from './clients.ts';
import { notAccessible, notFoundProblem, platformProblem, type CallContext } from './problems.ts';

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
    const held =
      this.using && this.using.usableUntil > now ? this.using : this.resolver.cached(this.account, this.profile);
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
  async run<T>(ctx: Omit<CallContext, 'profile'>, fn: (octokit: PlatformClient) => Promise<T>): Promise<T> {
    const full = { ...ctx, profile: this.profile };
    const credential = await this.current();
    const octokit = this.platform.octokit(credential);
    try {
      return await fn(octokit);
    } catch (err) {
      if ((err as { status?: number }).status !== 401 || !this.callerToken) throw await problemOf(err, full, octokit);
    }
    this.platform.forget(credential);
    this.resolver.forget(this.account, this.profile);
    const fresh = await this.resolver.resolve(this.account, this.profile, this.callerToken, true);
    this.resolver.confirmedNow(fresh, this.session);
    this.using = fresh;
    const again = this.platform.octokit(fresh);
    try {
      return await fn(again);
    } catch (err) {
      throw await problemOf(err, full, again);
    }
  }
}

/**
 * The problem a failed call answers. A write refused as "not accessible" may be about a repository the
 * connection cannot see at all: one read of the repository tells, and a hidden one answers exactly as a
 * missing one (404), never a 403 that would say it exists.
 */
async function problemOf(err: unknown, ctx: CallContext, octokit: PlatformClient): Promise<Problem> {
  if (ctx.write && ctx.repo && notAccessible(err)) {
    const [owner, repo] = ctx.repo.split('/') as [string, string];
    try {
      await octokit.rest.repos.get({ owner, repo });
    } catch (readErr) {
      if (platformProblem(readErr, { ...ctx, write: false }).status === 404) return notFoundProblem(ctx);
    }
  }
  return platformProblem(err, ctx);
}

/** A background sweep has no caller token and the held credential ran out. */
export class CredentialGone extends Error {
  override name = 'CredentialGone';
}
