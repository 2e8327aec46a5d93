import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createAppAuth } from '@octokit/auth-app';
import { request } from '@octokit/request';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { problem } from '../kit/problem.ts';
import { writeOwnerOnly } from '../kit/owner-only-file.ts';
import type { StaleReason } from './shapes.ts';
import type { IdentityDatabase } from './tables.ts';

export const TokenConnection = z
  .object({
    kind: z.literal('token'),
    token: z
      .string()
      .min(20)
      .max(500)
      .meta({ description: 'A fine-grained personal access token. Stored encrypted; never shown again.' }),
  })
  .meta({ id: 'TokenConnection' });

export const AppConnection = z
  .object({
    kind: z.literal('app'),
    app_id: z.union([z.string().regex(/^\d+$/), z.number().int().positive()]).transform(String),
    installation_id: z.union([z.string().regex(/^\d+$/), z.number().int().positive()]).transform(String),
    private_key: z
      .string()
      .includes('PRIVATE KEY', { message: 'must be the app\u2019s PEM private key' })
      .max(10_000)
      .meta({ description: 'The app\u2019s PEM private key. Stored encrypted; never shown again.' }),
  })
  .meta({ id: 'AppConnection' });

export const ConnectionInput = z
  .discriminatedUnion('kind', [TokenConnection, AppConnection])
  .meta({ id: 'ConnectionInput' });
export type ConnectionInput = z.infer<typeof ConnectionInput>;

export interface ConnectionSummary {
  profile: string;
  kind: 'token' | 'app';
  created_at: string;
  updated_at: string;
}

export interface ResolvedCredential {
  profile: string;
  kind: 'token' | 'app';
  token: string;
  expires_at: string;
  /** Which version of the connection this is: new on every PUT, so a holder can ask whether it is still current. */
  revision: string;
  /** For an app connection: the account the app is installed on (absent when the platform would not say). */
  login?: string;
}

/** A personal access token has no expiry we can see; resolved copies are held by callers this long at most. */
const TOKEN_CACHE_HORIZON_MS = 15 * 60_000;

/**
 * Platform connections per account and profile, encrypted at rest with AES-256-GCM under a key kept in
 * its own owner-only file beside (not inside) the database.
 */
export class Connections {
  private readonly key: Buffer;
  private readonly installationTokens = new Map<
    string,
    { token: string; expiresAt: number; login?: string; revision: string }
  >();

  constructor(
    private readonly db: Kysely<IdentityDatabase>,
    keyFile: string,
    private readonly platformUrl: string,
    /** Runs after a connection was deleted, so its encrypted secret leaves the write-ahead log too. */
    private readonly eraseTraces: () => void = () => {},
  ) {
    if (!existsSync(keyFile)) writeOwnerOnly(keyFile, randomBytes(32));
    this.key = readFileSync(keyFile);
    if (this.key.length !== 32)
      throw new Error(`The connection key file ${keyFile} is damaged; restore it from a backup.`);
  }

  async put(account: string, profile: string, input: ConnectionInput): Promise<ConnectionSummary> {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${account}\0${profile}`));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(input), 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    const now = new Date().toISOString();
    const revision = `rev_${randomBytes(9).toString('hex')}`;
    await this.db
      .insertInto('connections')
      .values({
        account_id: account,
        profile,
        kind: input.kind,
        ciphertext,
        iv,
        tag,
        revision,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'profile'])
          .doUpdateSet({ kind: input.kind, ciphertext, iv, tag, revision, updated_at: now }),
      )
      .execute();
    this.installationTokens.delete(`${account}\0${profile}`);
    // A replaced secret goes from the write-ahead log as a removed one does.
    this.eraseTraces();
    return this.connection(account, profile)
      .select(['profile', 'kind', 'created_at', 'updated_at'])
      .executeTakeFirstOrThrow();
  }

  /** The one row of an account's profile, to select from. */
  private connection(account: string, profile: string) {
    return this.db.selectFrom('connections').where('account_id', '=', account).where('profile', '=', profile);
  }

  async list(account: string): Promise<ConnectionSummary[]> {
    return this.db
      .selectFrom('connections')
      .select(['profile', 'kind', 'created_at', 'updated_at'])
      .where('account_id', '=', account)
      .orderBy('profile')
      .execute();
  }

  async remove(account: string, profile: string): Promise<boolean> {
    this.installationTokens.delete(`${account}\0${profile}`);
    const result = await this.db
      .deleteFrom('connections')
      .where('account_id', '=', account)
      .where('profile', '=', profile)
      .executeTakeFirst();
    const removed = Number(result.numDeletedRows) > 0;
    if (removed) this.eraseTraces();
    return removed;
  }

  /** Whether the connection a holder resolved (`revision`) is still the current one of the account's profile. */
  async stillCurrent(account: string, profile: string, revision: string): Promise<StaleReason | undefined> {
    const row = await this.connection(account, profile).select('revision').executeTakeFirst();
    if (!row) {
      this.installationTokens.delete(`${account}\0${profile}`);
      return 'connection_removed';
    }
    return row.revision === revision ? undefined : 'connection_replaced';
  }

  /** The platform credential for an account's profile: the token itself, or a fresh installation token. */
  async resolve(account: string, profile: string, forceRefresh = false): Promise<ResolvedCredential> {
    const row = await this.connection(account, profile).selectAll().executeTakeFirst();
    if (!row) {
      // Removed by the command line (another process): nothing minted for it stays here either.
      this.installationTokens.delete(`${account}\0${profile}`);
      throw problem.notFound(
        `No platform connection for profile "${profile}"; add one with PUT /v1/connections/${profile} (or in the console).`,
      );
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, row.iv);
    decipher.setAAD(Buffer.from(`${account}\0${profile}`));
    decipher.setAuthTag(row.tag);
    const secret = ConnectionInput.parse(
      JSON.parse(Buffer.concat([decipher.update(row.ciphertext), decipher.final()]).toString('utf8')),
    );
    if (secret.kind === 'token') {
      return {
        profile,
        kind: 'token',
        token: secret.token,
        expires_at: new Date(Date.now() + TOKEN_CACHE_HORIZON_MS).toISOString(),
        revision: row.revision,
      };
    }
    const cacheKey = `${account}\0${profile}`;
    const cached = this.installationTokens.get(cacheKey);
    if (!forceRefresh && cached && cached.revision === row.revision && cached.expiresAt - Date.now() > 5 * 60_000) {
      return {
        profile,
        kind: 'app',
        token: cached.token,
        expires_at: new Date(cached.expiresAt).toISOString(),
        revision: row.revision,
        ...(cached.login ? { login: cached.login } : {}),
      };
    }
    const auth = createAppAuth({
      appId: secret.app_id,
      privateKey: secret.private_key,
      installationId: secret.installation_id,
      request: request.defaults({ baseUrl: this.platformUrl }),
    });
    let minted: { token: string; expiresAt: string };
    try {
      minted = (await auth({ type: 'installation', refresh: true })) as { token: string; expiresAt: string };
    } catch (err) {
      const status = (err as { status?: number }).status;
      throw problem.badGateway(
        `The platform refused to mint an installation token for profile "${profile}"` +
          (status ? ` (status ${status})` : '') +
          '; check the app id, installation id and private key of this connection.',
      );
    }
    const expiresAt = Date.parse(minted.expiresAt);
    const login = await this.installationAccount(auth, secret.installation_id);
    this.installationTokens.set(cacheKey, { token: minted.token, expiresAt, login, revision: row.revision });
    return {
      profile,
      kind: 'app',
      token: minted.token,
      expires_at: new Date(expiresAt).toISOString(),
      revision: row.revision,
      ...(login ? { login } : {}),
    };
  }

  /**
   * The account an installation is on (GET /app/installations/{id} with the app's JWT): the only
   * answer for an installation that reaches no repository. Best effort: undefined if the platform
   * does not say, and the token is still good.
   */
  private async installationAccount(
    auth: ReturnType<typeof createAppAuth>,
    installationId: string,
  ): Promise<string | undefined> {
    try {
      const { token: jwt } = await auth({ type: 'app' });
      const r = await request('GET /app/installations/{installation_id}', {
        baseUrl: this.platformUrl,
        installation_id: Number(installationId),
        headers: { authorization: `Bearer ${jwt}` },
        request: { signal: AbortSignal.timeout(10_000) },
      });
      const account = r.data.account as { login?: unknown } | null;
      return typeof account?.login === 'string' && account.login ? account.login : undefined;
    } catch {
      return undefined;
    }
  }
}
