import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import { SECRET_FORMATS } from '../../common/secret-formats.ts';
import { errorSummary, type Logger } from '../kit/logger.ts';
import { Problem, problem } from '../kit/problem.ts';
import { CREDENTIALS_KEPT, type Credential, type CredentialResolver } from './credential-resolver.ts';
import type { OpenedSubscription, Subscription, SubscriptionKind } from './shapes.ts';
import { CredentialGone, lastPage, Session, type Platform, type PlatformClient } from './platform/index.ts';
import { readChecks } from './checks.ts';
import type { SignalAddresses } from './signal-addresses.ts';
import type { SignalSender } from './signals.ts';
import type { SubscriptionRow, SubscriptionStore } from './store.ts';

/**
 * Subscriptions: watch for checks settling, a pull request merging, a review landing or a run
 * completing, and end with exactly one signal. Watched at opening, by the background sweep (while
 * the caller's credential is held in memory) and on every read; after a restart, the caller's next
 * read or list drives them again with a freshly resolved credential.
 */

export const MAX_LIFETIME_SECONDS = 7 * 24 * 3600;
export const SWEEP_CONCURRENCY = 8;

export interface OpenRequest {
  kind: z.infer<typeof SubscriptionKind>;
  repo: string;
  pull?: number;
  ref?: string;
  run_id?: number;
  signal_url: string;
  expires_in_seconds: number;
}

export interface SubscriptionPolicy {
  /** Where signals may go (REPOHOST_SIGNAL_URL_PREFIXES, REPOHOST_SIGNAL_REFUSED_PORTS). */
  signalAddresses: SignalAddresses;
  credentialHoldMs: number;
  sweepMs: number;
}

export class Subscriptions {
  /** Credentials held for sweeps by account and profile, with the session credential of the caller who held them last. */
  private readonly held = new Map<string, { credential: Credential; session: string | undefined; until: number }>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  sweeps = 0;

  constructor(
    private readonly store: SubscriptionStore,
    private readonly resolver: CredentialResolver,
    private readonly platform: Platform,
    private readonly signals: SignalSender,
    private readonly policy: SubscriptionPolicy,
    private readonly logger: Logger,
  ) {
    // A credential the identity service no longer stands behind is not held for sweeps a moment longer.
    resolver.onStale((credential) => this.release(credential));
  }

  /** Keeps a caller's credential for background sweeps, for a bounded time and in memory only. */
  hold(session: Session): void {
    const credential = session.credential;
    if (!credential) return;
    const key = `${credential.account}\0${credential.profile}`;
    this.held.delete(key);
    this.held.set(key, {
      credential,
      session: session.session,
      until: Math.min(Date.now() + this.policy.credentialHoldMs, credential.usableUntil),
    });
    while (this.held.size > CREDENTIALS_KEPT) this.held.delete(this.held.keys().next().value!);
  }

  /** How many credentials are held for sweeps (for tests: bounded by CREDENTIALS_KEPT). */
  get holds(): number {
    return this.held.size;
  }

  /** Stops holding `credential` (no longer current at the identity service). */
  release(credential: Credential): void {
    const key = `${credential.account}\0${credential.profile}`;
    if (this.held.get(key)?.credential.fingerprint === credential.fingerprint) this.held.delete(key);
  }

  async open(session: Session, req: OpenRequest): Promise<z.infer<typeof OpenedSubscription>> {
    const refused = this.policy.signalAddresses.refusal(req.signal_url);
    if (refused) throw problem.unprocessable(`${refused}.`);
    const target = targetOf(req);
    const now = Date.now();
    const row: SubscriptionRow = {
      id: `sub_${randomBytes(12).toString('base64url')}`,
      account: session.account,
      profile: session.profile,
      kind: req.kind,
      repo: req.repo,
      target,
      baseline: 0,
      signal_url: req.signal_url,
      secret: newSignalSecret(),
      state: 'active',
      event: null,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + Math.min(req.expires_in_seconds, MAX_LIFETIME_SECONDS) * 1000).toISOString(),
      ended_at: null,
      signal_state: 'none',
      signal_attempts: 0,
      signal_next_at: null,
      signal_last_status: null,
      signal_last_error: null,
      signal_last_at: null,
    };
    // Watched once at opening: an unknown or hidden target is refused here, before anything is stored.
    if (req.kind === 'review_landed')
      row.baseline = await session.run({ repo: req.repo, thing: `Pull request #${req.pull}` }, (o) =>
        newestReview(o, row),
      );
    const event = await session.run({ repo: req.repo, thing: thingOf(row) }, (o) => observe(o, row));
    await this.store.insert(row);
    this.hold(session);
    if (event) await this.finish(row, event);
    const stored = (await this.store.get(row.id))!;
    return { ...toModel(stored), secret: row.secret };
  }

  async read(session: Session, id: string): Promise<z.infer<typeof Subscription>> {
    const connected = await this.confirmCaller(session);
    const row = await this.store.get(id);
    if (!row || row.account !== session.account) throw notFound(id);
    await this.expire(Date.now());
    if (connected && row.state === 'active' && row.profile === session.profile) {
      await this.watchQuietly(row, session);
      this.hold(session);
    }
    return toModel((await this.store.get(id))!);
  }

  /**
   * Cancels an active subscription of the caller's account opened under the caller's profile (any other
   * is not found, like a missing one). It ends as `cancelled` with its one signal, like any other end; the
   * platform is not asked. A subscription that has already ended, expired or been cancelled is answered
   * as it is, and nothing more is sent: the conditional end lets exactly one of a cancel and a sweep (or
   * a read, or a second cancel) end it.
   */
  async cancel(session: Session, id: string): Promise<z.infer<typeof Subscription>> {
    await this.confirmCaller(session);
    const row = await this.store.get(id);
    if (!row || row.account !== session.account || row.profile !== session.profile) throw notFound(id);
    const now = Date.now();
    // One whose lifetime ran out is expired, not cancelled, even when no sweep has marked it yet.
    await this.expire(now);
    if (await this.store.end(id, 'cancelled', now, 'cancelled')) {
      this.logger.info({ subscription: id }, 'subscription cancelled');
      // The answer does not wait for the receiver: delivery goes on (and is retried) in the background.
      this.deliverInBackground({ subscription: id });
    }
    return toModel((await this.store.get(id))!);
  }

  /** The caller's subscriptions; active ones of this profile are watched first, so a hub's sweep drives them after a restart. */
  async list(
    session: Session,
    limit: number,
    state?: string,
  ): Promise<{ total: number; items: z.infer<typeof Subscription>[] }> {
    const connected = await this.confirmCaller(session);
    await this.expire(Date.now());
    const active = connected ? await this.store.activeFor(session.account, session.profile) : [];
    for (const row of active) {
      // One platform that does not answer makes the list wait one timeout, not one per subscription.
      if ((await this.watchQuietly(row, session)) === 'timed_out') break;
    }
    if (active.length > 0) this.hold(session);
    const page = await this.store.listForAccount(session.account, limit, state);
    return { total: page.total, items: page.items.map(toModel) };
  }

  /**
   * Confirms the caller before anything is answered from the store, as on every /v1 route: a token whose
   * session credential was revoked is refused (401) even where nothing is watched. A profile without a
   * connection still reads and lists (its subscriptions are not watched), so removing a connection does
   * not hide what was opened under it.
   */
  private async confirmCaller(session: Session): Promise<boolean> {
    try {
      await session.current();
      return true;
    } catch (err) {
      if (err instanceof Problem && err.status === 404) return false;
      throw err;
    }
  }

  /**
   * Drops every credential that is no longer usable: the ones held here for sweeps, the resolver's
   * cache and the platform clients (with their tokens and ETag caches). Runs on every sweep tick, even
   * while a sweep is still running.
   */
  purgeExpired(now = Date.now()): void {
    for (const [key, h] of this.held) if (h.until <= now) this.held.delete(key);
    this.resolver.purge(now);
    this.platform.purge(now);
  }

  /** Fingerprints of the credentials held for sweeps (for tests: what is still in memory). */
  heldFingerprints(): string[] {
    return [...this.held.values()].map((h) => h.credential.fingerprint);
  }

  /**
   * One background pass: expire what is due, then watch every active subscription whose credential is
   * still held. Every platform request is bounded by REPOHOST_PLATFORM_TIMEOUT_MS, and a credential
   * whose request timed out is not used again in this pass, so a platform that does not answer costs
   * a pass about one timeout per eight credentials, never one per subscription.
   */
  sweep(): Promise<void> {
    this.sweeping ??= (async () => {
      this.sweeps += 1;
      const now = Date.now();
      await this.expire(now);
      this.purgeExpired(now);
      // Each held credential is confirmed once per pass before it is used, a few at a time: a removed or
      // replaced connection, a removed account or a revoked session credential stops it here (its
      // subscriptions then wait for their caller's next read or list).
      const unconfirmed = new Set<string>();
      const heldNow = [...this.held];
      await Promise.all(
        Array.from({ length: SWEEP_CONCURRENCY }, async () => {
          for (let entry = heldNow.shift(); entry; entry = heldNow.shift()) {
            const [key, h] = entry;
            const state = await this.resolver.confirm(h.credential, h.session);
            if (state === 'unconfirmed') unconfirmed.add(key);
            // A stale credential was released by the resolver's listener; a revoked session's hold goes here.
            if (state === 'session_revoked' && this.held.get(key) === h) this.held.delete(key);
          }
        }),
      );
      const watchable = (await this.store.active()).filter((row) => {
        const key = `${row.account}\0${row.profile}`;
        return this.held.has(key) && !unconfirmed.has(key);
      });
      const stalled = new Set<string>();
      // A few at a time: the per-credential limiter keeps each credential within the platform's concurrency anyway.
      let next = 0;
      const worker = async () => {
        while (next < watchable.length) {
          const row = watchable[next++]!;
          const key = `${row.account}\0${row.profile}`;
          const h = this.held.get(key);
          if (!h || stalled.has(key)) continue;
          const outcome = await this.watchQuietly(
            row,
            new Session(this.resolver, this.platform, row.account, row.profile, undefined, {
              held: h.credential,
              session: h.session,
            }),
          );
          if (outcome === 'timed_out') stalled.add(key);
        }
      };
      await Promise.all(Array.from({ length: SWEEP_CONCURRENCY }, worker));
      if (stalled.size > 0)
        this.logger.warn(
          { credentials: stalled.size },
          'sweep skipped the rest of the subscriptions of credentials whose platform requests timed out',
        );
    })().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  start(): void {
    this.timer = setInterval(() => {
      this.purgeExpired();
      this.sweep().catch((err: unknown) => this.logger.error({ err: errorSummary(err) }, 'sweep failed'));
    }, this.policy.sweepMs);
    this.timer.unref();
    void this.signals.kick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
    this.held.clear();
  }

  /** Marks what ran out of lifetime as expired; each ends with its one signal, sent in the background like a cancel's. */
  private async expire(now: number): Promise<void> {
    const expired = await this.store.expire(now);
    if (expired === 0) return;
    this.logger.info({ expired }, 'subscriptions expired');
    this.deliverInBackground({});
  }

  /** Starts delivering the signals due without waiting for the receivers; a failure to start is logged with `about`. */
  private deliverInBackground(about: Record<string, unknown>): void {
    this.signals
      .kick()
      .catch((err: unknown) =>
        this.logger.error({ ...about, err: errorSummary(err) }, 'signal delivery failed to start'),
      );
  }

  private async watchQuietly(row: SubscriptionRow, session: Session): Promise<'watched' | 'timed_out' | 'failed'> {
    try {
      const event = await session.run({ repo: row.repo, thing: thingOf(row) }, (o) => observe(o, row));
      if (event) await this.finish(row, event);
      return 'watched';
    } catch (err) {
      if (err instanceof CredentialGone) return 'failed';
      this.logger.warn({ subscription: row.id, err: errorSummary(err) }, 'subscription not watched this time');
      return err instanceof Problem && err.status === 504 ? 'timed_out' : 'failed';
    }
  }

  private async finish(row: SubscriptionRow, event: string): Promise<void> {
    if (await this.store.end(row.id, event, Date.now())) {
      this.logger.info({ subscription: row.id, event }, 'subscription ended');
      await this.signals.kick();
    }
  }
}

/** The same answer for a missing id and for another account's or profile's subscription. */
/** A subscription's own signing secret (Standard Webhooks' whsec_ and base64). */
export function newSignalSecret(): string {
  const { prefix, bytes, encoding } = SECRET_FORMATS.signalSecret;
  return `${prefix}${randomBytes(bytes).toString(encoding)}`;
}

function notFound(id: string): Problem {
  return problem.notFound(`Subscription ${id} was not found; list yours with GET /v1/subscriptions.`);
}

function targetOf(req: OpenRequest): string {
  const need = (what: string) =>
    problem.unprocessable(`A ${req.kind} subscription needs ${what}; add it to the body and send the request again.`);
  switch (req.kind) {
    case 'pull_merged':
    case 'review_landed':
      if (req.pull === undefined) throw need('pull (the pull request number)');
      return `pull/${req.pull}`;
    case 'run_completed':
      if (req.run_id === undefined) throw need('run_id (the workflow run id)');
      return `run/${req.run_id}`;
    case 'checks_settled':
      if (req.pull !== undefined) return `pull/${req.pull}`;
      if (!req.ref) throw need('pull or ref (a branch or commit SHA)');
      return req.ref;
  }
}

function thingOf(row: SubscriptionRow): string {
  if (row.target.startsWith('pull/')) return `Pull request #${row.target.slice(5)}`;
  if (row.target.startsWith('run/')) return `Workflow run ${row.target.slice(4)}`;
  return `Ref ${row.target}`;
}

function split(repo: string): { owner: string; repo: string } {
  const [owner, name] = repo.split('/') as [string, string];
  return { owner, repo: name };
}

async function newestReview(octokit: PlatformClient, row: SubscriptionRow): Promise<number> {
  const reviews = await reviewsOf(octokit, row);
  return reviews.reduce((max, r) => Math.max(max, r.id), 0);
}

async function reviewsOf(octokit: PlatformClient, row: SubscriptionRow): Promise<{ id: number; state: string }[]> {
  const params = { ...split(row.repo), pull_number: Number(row.target.slice(5)), per_page: 100 };
  const first = await octokit.rest.pulls.listReviews({ ...params, page: 1 });
  const last = lastPage(first.headers);
  const data = last ? (await octokit.rest.pulls.listReviews({ ...params, page: last })).data : first.data;
  return data.map((r) => ({ id: Number(r.id), state: r.state }));
}

/** What has happened to the watched thing, if anything; every read here is an ETag-revalidated GET. */
async function observe(octokit: PlatformClient, row: SubscriptionRow): Promise<string | undefined> {
  const where = split(row.repo);
  switch (row.kind) {
    case 'pull_merged': {
      const pull = (await octokit.rest.pulls.get({ ...where, pull_number: Number(row.target.slice(5)) })).data;
      if (pull.merged) return 'pull_merged';
      return pull.state === 'closed' ? 'pull_closed_unmerged' : undefined;
    }
    case 'review_landed': {
      const reviews = await reviewsOf(octokit, row);
      return reviews.some((r) => r.id > row.baseline && r.state !== 'PENDING') ? 'review_landed' : undefined;
    }
    case 'run_completed': {
      const run = (await octokit.rest.actions.getWorkflowRun({ ...where, run_id: Number(row.target.slice(4)) })).data;
      return run.status === 'completed' ? 'run_completed' : undefined;
    }
    case 'checks_settled': {
      const ref = row.target.startsWith('pull/')
        ? (await octokit.rest.pulls.get({ ...where, pull_number: Number(row.target.slice(5)) })).data.head.sha
        : row.target;
      const { state } = await readChecks(octokit, where.owner, where.repo, ref, 100);
      return state === 'success' || state === 'failure' ? 'checks_settled' : undefined;
    }
  }
  return undefined;
}

export function toModel(row: SubscriptionRow): z.infer<typeof Subscription> {
  return {
    id: row.id,
    kind: row.kind as z.infer<typeof SubscriptionKind>,
    repo: row.repo,
    target: row.target,
    profile: row.profile,
    signal_url: row.signal_url,
    state: row.state,
    event: row.event,
    created_at: row.created_at,
    expires_at: row.expires_at,
    ended_at: row.ended_at,
    signal: row.signal_state === 'sending' ? 'pending' : row.signal_state,
    signal_attempts: row.signal_attempts,
    signal_last_status: row.signal_last_status,
    signal_last_error: row.signal_last_error,
    signal_last_at: isoOrNull(row.signal_last_at),
    // Only a pending signal has a next attempt; one being sent right now is due at the time it was taken.
    signal_next_at:
      row.signal_state === 'pending' || row.signal_state === 'sending' ? isoOrNull(row.signal_next_at) : null,
  };
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
