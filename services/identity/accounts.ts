import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { bearerToken, type Principal } from '../kit/auth.ts';
import { problem } from '../kit/problem.ts';
import { SECRET_FORMATS } from '../../common/secret-formats.ts';
import type { IdentityDatabase } from './tables.ts';

/** Session credentials are random and high-entropy, so a plain SHA-256 is a safe way to store them. */
export function hashCredential(credential: string): string {
  return createHash('sha256').update(credential).digest('hex');
}

export function newCredential(): string {
  const { prefix, bytes, encoding } = SECRET_FORMATS.sessionCredential;
  return `${prefix}${randomBytes(bytes).toString(encoding)}`;
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
/** The account made on first run for the desktop app; its credential is in the data folder. */
export const LOCAL_ACCOUNT = 'local';
export const SESSION_ID = /^ses_[0-9a-f]{24}$/;
/** A session credential lives at most this long when it has an expiry (ten years). */
export const MAX_SESSION_SECONDS = 10 * 365 * 86_400;
/** Last use is recorded to the minute: a write per minute per credential at most, not one per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * What a session credential is for. `owner`: the account's own (the desktop app's, or one the command
 * line made): mints tokens for any audience, makes and revokes hub credentials, manages platform
 * connections. `hub`: mints tokens for its `audiences` and nothing else.
 */
export type SessionPurpose = 'owner' | 'hub';

/** The principal of identity's own routes: the account, and which of its session credentials was presented. */
export interface SessionPrincipal extends Principal {
  readonly session: string;
  readonly purpose: SessionPurpose;
  /** For a hub credential, the audiences it may mint tokens for; null: any. */
  readonly audiences: readonly string[] | null;
  /** When the presented credential expires; null: never. Nothing it makes outlives it. */
  readonly expiresAt: string | null;
}

/** A session credential as its account sees it: never the secret, which is shown once, when it is made. */
export interface SessionSummary {
  id: string;
  label: string | null;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  purpose: SessionPurpose;
  audiences: string[] | null;
}

export interface NewSession {
  label?: string | null;
  /** Seconds until it expires; null or absent: never. */
  expiresInSeconds?: number | null;
  /** Absent: `owner` (the command line making an account's own); the API makes `hub` ones only. */
  purpose?: SessionPurpose;
  /** The audiences of a hub credential (required for one). */
  audiences?: readonly string[];
}

export interface RemovedAccount {
  sessions: number;
  connections: number;
}

export class Accounts {
  constructor(
    private readonly db: Kysely<IdentityDatabase>,
    /** Runs after rows with secrets were deleted, so their bytes leave the write-ahead log too. */
    private readonly eraseTraces: () => void = () => {},
  ) {}

  /** Creates an account and its first session credential; the credential is returned once and stored hashed. */
  async add(name: string, session: NewSession = {}): Promise<{ id: string; credential: string; session: string }> {
    if (!NAME.test(name)) {
      throw new Error(
        'An account name is 1-63 characters of lowercase letters, digits, dot, dash or underscore, starting with a letter or digit.',
      );
    }
    const existing = await this.db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirst();
    if (existing)
      throw new Error(`An account named "${name}" already exists; use "session add ${name}" for a new credential.`);
    const id = randomUUID();
    const now = new Date();
    let made!: { credential: string; session: string };
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('accounts').values({ id, name, created_at: now.toISOString() }).execute();
      made = await insertSession(trx, id, session, now);
    });
    return { id, ...made };
  }

  /** A new session credential for an existing account, by name (the command line). */
  async addSession(name: string, session: NewSession = {}): Promise<{ credential: string; session: string }> {
    return this.createSession(await this.idOf(name), session);
  }

  /** A new session credential for an account, by id (an account making one for itself). */
  async createSession(accountId: string, session: NewSession = {}): Promise<{ credential: string; session: string }> {
    return insertSession(this.db, accountId, session, new Date());
  }

  async list(): Promise<{ id: string; name: string; created_at: string }[]> {
    return this.db.selectFrom('accounts').select(['id', 'name', 'created_at']).orderBy('created_at').execute();
  }

  async get(id: string): Promise<{ id: string; name: string } | undefined> {
    return this.db.selectFrom('accounts').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
  }

  /** The account's session credentials, oldest first, without their secrets. */
  async sessions(accountId: string): Promise<SessionSummary[]> {
    const rows = await this.db
      .selectFrom('sessions')
      .select(['id', 'label', 'created_at', 'last_used_at', 'expires_at', 'purpose', 'audiences'])
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ ...r, audiences: audiencesOf(r.audiences) }));
  }

  /** The session credentials of the account named `name` (the command line). */
  async sessionsOf(name: string): Promise<SessionSummary[]> {
    return this.sessions(await this.idOf(name));
  }

  /** Revokes one session credential, any account's (the command line). False when there was none. */
  async revokeSession(sessionId: string): Promise<boolean> {
    return (
      Number((await this.db.deleteFrom('sessions').where('id', '=', sessionId).executeTakeFirst()).numDeletedRows) > 0
    );
  }

  /**
   * Revokes one of the caller's account's session credentials over the API: a hub credential, or the
   * caller's own. Another owner credential (the app's own above all) is revoked at the command line only,
   * so no credential can cut the app off. False when the account has no such credential.
   */
  async revokeSessionBy(caller: SessionPrincipal, sessionId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('sessions')
      .select('purpose')
      .where('id', '=', sessionId)
      .where('account_id', '=', caller.account)
      .executeTakeFirst();
    if (!row) return false;
    if (row.purpose === 'owner' && sessionId !== caller.session) {
      throw problem.forbidden(
        `${sessionId} is an owner credential (such as this app\u2019s own), which no other credential may revoke; revoke it at the command line: "npm run identity -- session revoke ${sessionId}".`,
      );
    }
    return this.revokeSession(sessionId);
  }

  /** Revokes every session credential of an account (the command line); answers how many. */
  async revokeAll(accountId: string): Promise<number> {
    return Number(
      (await this.db.deleteFrom('sessions').where('account_id', '=', accountId).executeTakeFirst()).numDeletedRows,
    );
  }

  /** Over the API: every hub credential of the caller's account, and the caller's own unless `keepCurrent`; never another owner credential. */
  async revokeAllBy(caller: SessionPrincipal, keepCurrent: boolean): Promise<number> {
    let q = this.db.deleteFrom('sessions').where('account_id', '=', caller.account);
    q = keepCurrent
      ? q.where('purpose', '=', 'hub')
      : q.where((eb) => eb.or([eb('purpose', '=', 'hub'), eb('id', '=', caller.session)]));
    return Number((await q.executeTakeFirst()).numDeletedRows);
  }

  /** Makes the credential in the local session file the app's own (owner) again, whatever an upgrade made of it. */
  async claimForApp(credential: string): Promise<void> {
    const local = await this.db
      .selectFrom('accounts')
      .select('id')
      .where('name', '=', LOCAL_ACCOUNT)
      .executeTakeFirst();
    if (!local) return;
    await this.db
      .updateTable('sessions')
      .set({ purpose: 'owner', audiences: null })
      .where('credential_hash', '=', hashCredential(credential))
      .where('account_id', '=', local.id)
      .where('purpose', '!=', 'owner')
      .execute();
  }

  /** Revokes every session credential of the account named `name` (the command line). */
  async revokeAllOf(name: string): Promise<number> {
    return this.revokeAll(await this.idOf(name));
  }

  /**
   * Removes an account with its session credentials and its platform connections (rows deleted, their
   * encrypted secrets overwritten in the database file and dropped from its write-ahead log).
   */
  async remove(name: string): Promise<RemovedAccount> {
    if (name === LOCAL_ACCOUNT) {
      throw new Error(
        `The account "${LOCAL_ACCOUNT}" is the desktop app's own and is not removed; revoke its credentials with "session revoke-all ${LOCAL_ACCOUNT}" (the service makes a new one at its next start) and remove its connections in the console.`,
      );
    }
    const id = await this.idOf(name);
    const removed = await this.db.transaction().execute(async (trx) => {
      const connections = Number(
        (await trx.deleteFrom('connections').where('account_id', '=', id).executeTakeFirst()).numDeletedRows,
      );
      const sessions = Number(
        (await trx.deleteFrom('sessions').where('account_id', '=', id).executeTakeFirst()).numDeletedRows,
      );
      await trx.deleteFrom('person_settings').where('account_id', '=', id).execute();
      await trx.deleteFrom('accounts').where('id', '=', id).execute();
      return { sessions, connections };
    });
    this.eraseTraces();
    return removed;
  }

  /** Whether a session credential is known and unexpired (the local session file is checked at start). */
  async accepts(credential: string, now = new Date()): Promise<boolean> {
    const row = await this.db
      .selectFrom('sessions')
      .select('expires_at')
      .where('credential_hash', '=', hashCredential(credential))
      .executeTakeFirst();
    return row !== undefined && !expired(row.expires_at, now);
  }

  /** Whether `sessionId` is a live (known, unexpired) session credential of `accountId`. */
  async sessionLive(accountId: string, sessionId: string, now = new Date()): Promise<boolean> {
    const row = await this.db
      .selectFrom('sessions')
      .select('expires_at')
      .where('id', '=', sessionId)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row !== undefined && !expired(row.expires_at, now);
  }

  /** Checks `Authorization: Bearer <session credential>`; the principal's account is the session's. */
  async verify(authorization: string | undefined): Promise<SessionPrincipal> {
    const credential = bearerToken(authorization);
    if (!credential) {
      throw problem.unauthorized(
        'Send your session credential as "Authorization: Bearer <credential>" (see "npm run identity -- account add").',
        authorization !== undefined,
      );
    }
    const row = await this.db
      .selectFrom('sessions')
      .select(['id', 'account_id', 'expires_at', 'last_used_at', 'purpose', 'audiences'])
      .where('credential_hash', '=', hashCredential(credential))
      .executeTakeFirst();
    if (!row) {
      throw problem.unauthorized(
        'The session credential is not known (never issued, or revoked); use a current one, or make one with "npm run identity -- session add <account>".',
      );
    }
    const now = new Date();
    if (expired(row.expires_at, now)) {
      throw problem.unauthorized(
        `The session credential expired at ${row.expires_at}; make a new one with "npm run identity -- session add <account>".`,
      );
    }
    if (!row.last_used_at || now.getTime() - Date.parse(row.last_used_at) >= LAST_USED_RESOLUTION_MS) {
      await this.db.updateTable('sessions').set({ last_used_at: now.toISOString() }).where('id', '=', row.id).execute();
    }
    return {
      account: row.account_id,
      audience: 'session',
      token: '',
      session: row.id,
      purpose: row.purpose,
      audiences: row.purpose === 'hub' ? (audiencesOf(row.audiences) ?? []) : null,
      expiresAt: row.expires_at,
    };
  }

  private async idOf(name: string): Promise<string> {
    const account = await this.db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirst();
    if (!account) throw new Error(`There is no account named "${name}"; list them with "account list".`);
    return account.id;
  }
}

/**
 * The lifetime of a credential that `maker` makes: what was asked (`asked`; null: never, undefined: the
 * `fallback`), never past the maker's own expiry. An explicit ask beyond it is refused; the fallback is cut.
 */
export function lifetimeWithin(
  maker: { expiresAt: string | null },
  asked: number | null | undefined,
  fallback: number | null,
  now = new Date(),
): number | null {
  if (maker.expiresAt === null) return asked === undefined ? fallback : asked;
  const left = Math.floor((Date.parse(maker.expiresAt) - now.getTime()) / 1000);
  if (asked === undefined) return fallback === null ? left : Math.min(fallback, left);
  if (asked === null || asked > left) {
    throw problem.unprocessable(
      `expires_in_seconds: the credential making this one expires at ${maker.expiresAt}, and a credential cannot outlive the one that made it; ask for at most ${left} seconds.`,
    );
  }
  return asked;
}

function audiencesOf(stored: string | null): string[] | null {
  return stored === null ? null : (JSON.parse(stored) as string[]);
}

function expired(expiresAt: string | null, now: Date): boolean {
  return expiresAt !== null && Date.parse(expiresAt) <= now.getTime();
}

async function insertSession(
  db: Kysely<IdentityDatabase>,
  accountId: string,
  session: NewSession,
  now: Date,
): Promise<{ credential: string; session: string }> {
  const seconds = session.expiresInSeconds ?? null;
  // Under a minute only when cut to a maker's remaining lifetime (lifetimeWithin); never zero or less.
  if (seconds !== null && (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_SESSION_SECONDS)) {
    throw new Error(`An expiry is a whole number of seconds from 60 to ${MAX_SESSION_SECONDS} (ten years).`);
  }
  const purpose = session.purpose ?? 'owner';
  if (purpose === 'hub' && (session.audiences ?? []).length === 0)
    throw new Error('A hub credential names at least one audience it may mint tokens for.');
  const credential = newCredential();
  const id = `ses_${randomBytes(12).toString('hex')}`;
  await db
    .insertInto('sessions')
    .values({
      id,
      credential_hash: hashCredential(credential),
      account_id: accountId,
      label: session.label ?? null,
      created_at: now.toISOString(),
      expires_at: seconds === null ? null : new Date(now.getTime() + seconds * 1000).toISOString(),
      last_used_at: null,
      purpose,
      audiences: purpose === 'hub' ? JSON.stringify([...new Set(session.audiences)]) : null,
    })
    .execute();
  return { credential, session: id };
}
