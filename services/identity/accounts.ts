import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { bearerToken, type Principal } from '../kit/auth.ts';
import { problem } from '../kit/problem.ts';
import type { IdentityDatabase } from './schema.ts';

/** Session credentials are random and high-entropy, so a plain SHA-256 is a safe way to store them. */
export function hashCredential(credential: string): string {
  return createHash('sha256').update(credential).digest('hex');
}

export function newCredential(): string {
  return `hubs_${randomBytes(32).toString('base64url')}`;
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export class Accounts {
  constructor(private readonly db: Kysely<IdentityDatabase>) {}

  /** Creates an account and its first session credential; the credential is returned once and stored hashed. */
  async add(name: string): Promise<{ id: string; credential: string }> {
    if (!NAME.test(name)) {
      throw new Error('An account name is 1-63 characters of lowercase letters, digits, dot, dash or underscore, starting with a letter or digit.');
    }
    const existing = await this.db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirst();
    if (existing) throw new Error(`An account named "${name}" already exists; use "session add ${name}" for a new credential.`);
    const id = randomUUID();
    const credential = newCredential();
    const now = new Date().toISOString();
    await this.db.transaction().execute(async (trx) => {
      await trx.insertInto('accounts').values({ id, name, created_at: now }).execute();
      await trx.insertInto('sessions').values({ credential_hash: hashCredential(credential), account_id: id, created_at: now }).execute();
    });
    return { id, credential };
  }

  /** A new session credential for an existing account. */
  async addSession(name: string): Promise<string> {
    const account = await this.db.selectFrom('accounts').select('id').where('name', '=', name).executeTakeFirst();
    if (!account) throw new Error(`There is no account named "${name}"; create it with "account add ${name}".`);
    const credential = newCredential();
    await this.db
      .insertInto('sessions')
      .values({ credential_hash: hashCredential(credential), account_id: account.id, created_at: new Date().toISOString() })
      .execute();
    return credential;
  }

  async list(): Promise<{ id: string; name: string; created_at: string }[]> {
    return this.db.selectFrom('accounts').select(['id', 'name', 'created_at']).orderBy('created_at').execute();
  }

  async get(id: string): Promise<{ id: string; name: string } | undefined> {
    return this.db.selectFrom('accounts').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
  }

  /** Checks `Authorization: Bearer <session credential>`; the principal's account is the session's. */
  async verify(authorization: string | undefined): Promise<Principal> {
    const credential = bearerToken(authorization);
    if (!credential) {
      throw problem.unauthorized(
        'Send your session credential as "Authorization: Bearer <credential>" (see "npm run identity -- account add").',
        authorization !== undefined,
      );
    }
    const row = await this.db
      .selectFrom('sessions')
      .select('account_id')
      .where('credential_hash', '=', hashCredential(credential))
      .executeTakeFirst();
    if (!row) throw problem.unauthorized('The session credential is not known; use the one printed when the account was made.');
    return { account: row.account_id, audience: 'session', token: '' };
  }
}
