import type { Kysely } from 'kysely';
import type { Migration } from '../kit/sqlite.ts';

/** The gateway's SQLite file: subscriptions only, and never a credential. */

export interface SubscriptionRow {
  id: string;
  account: string;
  profile: string;
  kind: string;
  repo: string;
  target: string;
  /** For review_landed: the newest review id seen at opening; later ones have landed. */
  baseline: number;
  signal_url: string;
  /** The subscription's own signing secret (whsec_...): needed to sign after a restart; not a platform credential. */
  secret: string;
  state: SubscriptionState;
  /** What ended it (the watched event, or `cancelled`); null while active and for an expired one (its state says so). */
  event: string | null;
  created_at: string;
  expires_at: string;
  ended_at: string | null;
  signal_state: 'none' | 'pending' | 'sending' | 'sent' | 'failed';
  signal_attempts: number;
  signal_next_at: number | null;
  /** The receiver's HTTP status at the last attempt; null before any and when it did not answer. */
  signal_last_status: number | null;
  /** Why the last attempt did not deliver, in words of this service (never the address or a receiver's text). */
  signal_last_error: string | null;
  /** Epoch ms of the last attempt (or of giving up without one). */
  signal_last_at: number | null;
}

export type SubscriptionState = 'active' | 'ended' | 'expired' | 'cancelled';

/** How a delivery attempt went, as the subscription reports it. */
export interface SignalAttempt {
  status: number | null;
  error: string | null;
  at: number;
}

export interface GatewayDatabase {
  subscriptions: SubscriptionRow;
}

export const gatewayMigrations: Migration[] = [
  (db) => {
    db.exec(`
      CREATE TABLE subscriptions (
        id TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        profile TEXT NOT NULL,
        kind TEXT NOT NULL,
        repo TEXT NOT NULL,
        target TEXT NOT NULL,
        baseline INTEGER NOT NULL DEFAULT 0,
        signal_url TEXT NOT NULL,
        secret TEXT NOT NULL,
        state TEXT NOT NULL,
        event TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        ended_at TEXT,
        signal_state TEXT NOT NULL DEFAULT 'none',
        signal_attempts INTEGER NOT NULL DEFAULT 0,
        signal_next_at INTEGER
      );
      CREATE INDEX subscriptions_by_state ON subscriptions (state, expires_at);
      CREATE INDEX subscriptions_by_account ON subscriptions (account, created_at);
      CREATE INDEX subscriptions_by_signal ON subscriptions (signal_state, signal_next_at);
    `);
  },
  // The last delivery attempt, so a person can see why a signal is still pending or was given up.
  (db) => {
    db.exec(`
      ALTER TABLE subscriptions ADD COLUMN signal_last_status INTEGER;
      ALTER TABLE subscriptions ADD COLUMN signal_last_error TEXT;
      ALTER TABLE subscriptions ADD COLUMN signal_last_at INTEGER;
    `);
  },
];

export class SubscriptionStore {
  constructor(private readonly db: Kysely<GatewayDatabase>) {}

  async insert(row: SubscriptionRow): Promise<void> {
    await this.db.insertInto('subscriptions').values(row).execute();
  }

  async get(id: string): Promise<SubscriptionRow | undefined> {
    return this.db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async listForAccount(
    account: string,
    limit: number,
    state?: string,
  ): Promise<{ total: number; items: SubscriptionRow[] }> {
    let q = this.db.selectFrom('subscriptions').where('account', '=', account);
    if (state) q = q.where('state', '=', state as SubscriptionState);
    const total = await q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const items = await q.selectAll().orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
    return { total: Number(total.n), items };
  }

  async active(): Promise<SubscriptionRow[]> {
    return this.db.selectFrom('subscriptions').selectAll().where('state', '=', 'active').execute();
  }

  async activeFor(account: string, profile: string): Promise<SubscriptionRow[]> {
    return this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('state', '=', 'active')
      .where('account', '=', account)
      .where('profile', '=', profile)
      .execute();
  }

  /**
   * Ends an active subscription (its event happened: `ended`; its owner cancelled it: `cancelled`) and
   * queues its one signal; true only for the one caller that actually ended it, so a sweep and a cancel
   * racing each other queue one signal between them.
   */
  async end(id: string, event: string, now: number, state: 'ended' | 'cancelled' = 'ended'): Promise<boolean> {
    const r = await this.db
      .updateTable('subscriptions')
      .set({ state, event, ended_at: new Date(now).toISOString(), signal_state: 'pending', signal_next_at: now })
      .where('id', '=', id)
      .where('state', '=', 'active')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Ends every active subscription whose lifetime ran out as `expired`, queueing its one signal like any other end. */
  async expire(now: number): Promise<number> {
    const r = await this.db
      .updateTable('subscriptions')
      .set({ state: 'expired', ended_at: new Date(now).toISOString(), signal_state: 'pending', signal_next_at: now })
      .where('state', '=', 'active')
      .where('expires_at', '<=', new Date(now).toISOString())
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  async dueSignals(now: number): Promise<SubscriptionRow[]> {
    return this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('signal_state', '=', 'pending')
      .where('signal_next_at', '<=', now)
      .execute();
  }

  async nextSignalAt(): Promise<number | undefined> {
    const r = await this.db
      .selectFrom('subscriptions')
      .select((eb) => eb.fn.min('signal_next_at').as('at'))
      .where('signal_state', '=', 'pending')
      .executeTakeFirst();
    return r?.at === null || r?.at === undefined ? undefined : Number(r.at);
  }

  /** Takes a pending signal for sending; false when another sweep already took it. */
  async claimSignal(id: string): Promise<boolean> {
    const r = await this.db
      .updateTable('subscriptions')
      .set({ signal_state: 'sending' })
      .where('id', '=', id)
      .where('signal_state', '=', 'pending')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async signalOutcome(
    id: string,
    state: 'pending' | 'sent' | 'failed',
    attempts: number,
    nextAt: number | null,
    last: SignalAttempt,
  ): Promise<void> {
    await this.db
      .updateTable('subscriptions')
      .set({
        signal_state: state,
        signal_attempts: attempts,
        signal_next_at: nextAt,
        signal_last_status: last.status,
        signal_last_error: last.error,
        signal_last_at: last.at,
      })
      .where('id', '=', id)
      .execute();
  }

  /** After a stop in the middle of a delivery: send again (same webhook-id, so the receiver can tell). */
  async releaseInterrupted(): Promise<void> {
    await this.db
      .updateTable('subscriptions')
      .set({ signal_state: 'pending' })
      .where('signal_state', '=', 'sending')
      .execute();
  }
}
