import { timingSafeEqual, createHash } from 'node:crypto';
import { createLocalJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { z } from 'zod';
import { Api, type Reply, type RouteContext, type RouteSpec } from '../kit/api.ts';
import { ALLOWED_ALGORITHMS, bearerToken } from '../kit/auth.ts';
import { noteAppCaller } from '../kit/callers.ts';
import { problem } from '../kit/problem.ts';
import { lifetimeWithin, MAX_SESSION_SECONDS, type Accounts, type SessionPrincipal } from './accounts.ts';
import { AUDIENCE_NAME } from './config.ts';
import { ConnectionInput, type Connections } from './connections.ts';
import { PersonaSettings, type PersonSettings } from './person-settings.ts';
import type { SigningKeys } from './keys.ts';
import {
  ConnectionList,
  ConnectionSummary,
  CredentialStatus,
  Jwks,
  NewSessionCredential,
  Profile,
  ResolvedCredential,
  ServiceToken,
  SessionCredentialList,
  SessionId,
  TokenStatus,
} from './shapes.ts';

export interface IdentityParts {
  issuer: () => string;
  keys: SigningKeys;
  accounts: Accounts;
  connections: Connections;
  /** Each person's own settings for the persona store (its settings service). */
  settings: PersonSettings;
  /** Registered services by name, with their service tokens. */
  services: Map<string, string>;
  tokenTtlSeconds: number;
  /** Default lifetime of a session credential made over the API (0: never expires). */
  sessionTtlSeconds: number;
  /** Audiences of a hub credential that names none (IDENTITY_HUB_AUDIENCES). */
  hubAudiences: readonly string[];
}

type AnyObject = z.ZodObject<z.ZodRawShape>;

/** The path of one platform connection: `/v1/connections/{profile}`. */
const ConnectionParams = z.object({ profile: Profile });

/** The registered name of the persona store, the one service that reads a person's persona settings. */
const PERSONA_AUDIENCE = 'persona';

/** The session credential the caller presented (identity's own routes authenticate with session credentials). */
const callerOf = (principal: unknown) => principal as SessionPrincipal;
const sessionOf = (principal: unknown) => callerOf(principal).session;
const quotedAudiences = (audiences: readonly string[]) => audiences.map((a) => `"${a}"`).join(', ');

/** Everything but minting belongs to an owner credential (the app's own, or one the command line made). */
function requireOwner(principal: unknown, what: string): void {
  const caller = callerOf(principal);
  if (caller.purpose === 'owner') return;
  throw problem.forbidden(
    `This is a hub credential: it may only mint tokens (POST /v1/auth/service-token) for ${quotedAudiences(caller.audiences ?? [])}. ` +
      `${what} belongs to the app\u2019s own credential: use the console, or the command line ("npm run identity -- ...").`,
  );
}

export function identityApi(parts: IdentityParts): Api {
  const api = new Api(
    {
      title: 'Identity',
      version: '1.0.0',
      description: 'Issues short-lived tokens for the local services and keeps platform connections, encrypted.',
    },
    parts.accounts,
  );
  const ownKeys = () => createLocalJWKSet(parts.keys.publicSet() as Parameters<typeof createLocalJWKSet>[0]);
  /** A route for owner credentials only (`what` names it in a hub credential's 403): refused in its screen, before the body is read. */
  const ownerRoute = <P extends AnyObject, Q extends AnyObject, B extends z.ZodType>(
    what: string,
    spec: Omit<RouteSpec<P, Q, B, AnyObject>, 'screen'>,
  ): void =>
    api.route({
      ...spec,
      problems: [403, ...(spec.problems ?? [])],
      screen: ({ principal }) => requireOwner(principal, what),
    });
  /** A route for registered services: Authorization carries a service token (IDENTITY_SERVICE_TOKENS); the handler is given the service's name. */
  const serviceRoute = <B extends z.ZodType>(
    spec: Omit<RouteSpec<AnyObject, AnyObject, B, AnyObject>, 'auth' | 'handler'> & {
      handler: (ctx: RouteContext<object, object, z.infer<B>, object>, service: string) => Promise<Reply>;
    },
  ): void =>
    api.route({
      ...spec,
      auth: false,
      problems: [401, ...(spec.problems ?? [])],
      // Before the body is read, like a token. A registered service is the app's own (its HTTP counters keep it apart from a hub's).
      checkCaller: (req) => {
        registeredService(parts.services, req.get('authorization'));
        noteAppCaller(req);
      },
      handler: (ctx) => spec.handler(ctx, registeredService(parts.services, ctx.req.get('authorization'))),
    });
  /** A token this service minted: its signature, issuer and expiry, and the claims named present. */
  const verifyMinted = (token: string, requiredClaims: string[]) =>
    jwtVerify(token, ownKeys(), {
      issuer: parts.issuer(),
      algorithms: ALLOWED_ALGORITHMS,
      clockTolerance: 30,
      requiredClaims,
    });

  api.route({
    method: 'get',
    path: '/.well-known/jwks.json',
    operationId: 'get_jwks',
    summary: 'The public keys that verify tokens from this service',
    auth: false,
    responses: { 200: { description: 'The key set.', schema: Jwks } },
    handler: () => ({ body: parts.keys.publicSet(), headers: { 'Cache-Control': 'public, max-age=300' } }),
  });

  api.route({
    method: 'post',
    path: '/v1/auth/service-token',
    operationId: 'mint_service_token',
    summary: 'Mint a short-lived token for one audience',
    description:
      'Authenticated with your session credential. An owner credential may ask for any audience; a hub credential for the audiences it was made for. ' +
      'The token names exactly that one, carries the credential\u2019s id as sid, and never outlives the credential.',
    body: z.object({
      audience: z
        .string()
        .min(1)
        .max(200)
        .regex(/^[\x21-\x7e]+$/, 'an audience is printable text without spaces'),
    }),
    responses: { 200: { description: 'The token.', schema: ServiceToken } },
    problems: [403],
    handler: async ({ body, principal }) => {
      const caller = callerOf(principal);
      if (caller.audiences !== null && !caller.audiences.includes(body.audience)) {
        throw problem.forbidden(
          `This hub credential mints tokens for ${quotedAudiences(caller.audiences)} only, not "${body.audience}"; make a hub credential for that audience in the console.`,
        );
      }
      const notAfter = caller.expiresAt === null ? undefined : new Date(caller.expiresAt);
      const now = new Date();
      const { token, expiresAt } = await parts.keys.sign(
        {
          sub: principal.account,
          aud: body.audience,
          iss: parts.issuer(),
          sid: caller.session,
          purpose: caller.purpose,
        },
        now,
        notAfter,
      );
      const issuedAt = Math.floor(now.getTime() / 1000);
      return {
        body: {
          token,
          token_type: 'Bearer',
          expires_in: Math.max(0, expiresAt.getTime() / 1000 - issuedAt),
          expires_at: expiresAt.toISOString(),
        },
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  });

  api.route({
    method: 'post',
    path: '/v1/auth/token-status',
    operationId: 'token_status',
    summary: 'For services that take tokens: does this token still stand?',
    description:
      'A token verifies by its signature alone until its exp; a service asks this (every few seconds per session, cached) so that a revoke reaches it within seconds. ' +
      'The token itself is the proof of asking: no other credential is needed, and the answer says nothing its holder could not learn by using it.',
    auth: false,
    body: z.object({ token: z.string().min(1).max(8192) }),
    responses: { 200: { description: 'Whether it stands, and if not, why.', schema: TokenStatus } },
    handler: async ({ body }) => {
      const status = async (): Promise<z.infer<typeof TokenStatus>> => {
        let payload: JWTPayload;
        try {
          ({ payload } = await verifyMinted(body.token, ['sub', 'exp']));
        } catch {
          return { active: false, reason: 'invalid_token' };
        }
        if (typeof payload.sid !== 'string') return { active: false, reason: 'no_session' };
        return (await parts.accounts.sessionLive(payload.sub!, payload.sid))
          ? { active: true }
          : { active: false, reason: 'session_revoked' };
      };
      return { body: await status(), headers: { 'Cache-Control': 'no-store' } };
    },
  });

  ownerRoute('Reading the account', {
    method: 'get',
    path: '/v1/account',
    operationId: 'get_account',
    summary: 'The account of this session credential',
    responses: {
      200: {
        description: 'The account.',
        schema: z.object({ id: z.string(), name: z.string() }).meta({ id: 'Account' }),
      },
    },
    handler: async ({ principal }) => {
      return { body: await parts.accounts.get(principal.account) };
    },
  });

  ownerRoute('Listing credentials', {
    method: 'get',
    path: '/v1/session-credentials',
    operationId: 'list_session_credentials',
    summary: 'Your account\u2019s session credentials, without their secrets',
    responses: { 200: { description: 'Oldest first.', schema: SessionCredentialList } },
    handler: async ({ principal }) => {
      const current = sessionOf(principal);
      const rows = await parts.accounts.sessions(principal.account);
      return {
        body: { credentials: rows.map((r) => ({ ...r, current: r.id === current })) },
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  });

  ownerRoute('Making credentials', {
    method: 'post',
    path: '/v1/session-credentials',
    operationId: 'create_session_credential',
    summary: 'Make a hub credential for your own account: it mints tokens for its audiences and nothing else',
    description:
      'Needs an owner credential (the app\u2019s own). The secret is in this answer only. Without expires_in_seconds the credential gets the default lifetime ' +
      '(IDENTITY_SESSION_TTL_SECONDS; 0 there means it never expires); null asks for one that never expires. A credential never outlives the one that made it. ' +
      'Owner credentials are made at the command line only.',
    body: z.object({
      label: z
        .string()
        .min(1)
        .max(100)
        .refine((l) => ![...l].some((c) => c < ' ' || c === '\u007f'), 'a label is text without control characters')
        .optional()
        .meta({ description: 'What it is for, e.g. "hub".' }),
      expires_in_seconds: z
        .number()
        .int()
        .min(60, 'expires_in_seconds is at least 60')
        .max(MAX_SESSION_SECONDS, `expires_in_seconds is at most ${MAX_SESSION_SECONDS} (ten years)`)
        .nullable()
        .optional()
        .meta({ description: 'Lifetime in seconds (60 to ten years); null: never expires; absent: the default.' }),
      audiences: z
        .array(z.string().regex(AUDIENCE_NAME, 'an audience is 1-200 characters of printable text without spaces'))
        .min(1, 'audiences names at least one audience')
        .max(20)
        .optional()
        .meta({
          description: 'The audiences it may mint tokens for; absent: IDENTITY_HUB_AUDIENCES (persona, repohost-api).',
        }),
    }),
    responses: {
      201: { description: 'The new credential, with its secret (shown once).', schema: NewSessionCredential },
    },
    handler: async ({ body, principal }) => {
      const fallback = parts.sessionTtlSeconds > 0 ? parts.sessionTtlSeconds : null;
      const made = await parts.accounts.createSession(principal.account, {
        label: body.label ?? null,
        expiresInSeconds: lifetimeWithin(callerOf(principal), body.expires_in_seconds, fallback),
        purpose: 'hub',
        audiences: body.audiences ?? parts.hubAudiences,
      });
      const row = (await parts.accounts.sessions(principal.account)).find((r) => r.id === made.session)!;
      return {
        status: 201,
        body: { ...row, current: false, credential: made.credential },
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  });

  ownerRoute('Revoking credentials', {
    method: 'delete',
    path: '/v1/session-credentials/{id}',
    operationId: 'revoke_session_credential',
    summary: 'Revoke one of your session credentials (it is refused from then on)',
    description:
      'Needs an owner credential. Revokes a hub credential, or the credential of this request; another owner credential (the app\u2019s own) is revoked at the command line only. ' +
      'Tokens minted with it stop working on every service within seconds (services ask POST /v1/auth/token-status).',
    params: z.object({ id: SessionId }),
    responses: { 204: { description: 'Revoked.' } },
    problems: [404],
    handler: async ({ params, principal }) => {
      if (!(await parts.accounts.revokeSessionBy(callerOf(principal), params.id))) {
        throw problem.notFound(
          `You have no session credential ${params.id}; list yours with GET /v1/session-credentials.`,
        );
      }
      return { status: 204 };
    },
  });

  ownerRoute('Revoking credentials', {
    method: 'delete',
    path: '/v1/session-credentials',
    operationId: 'revoke_all_session_credentials',
    summary: 'Revoke every hub credential of your account (and, without keep_current, the one used here)',
    description:
      'Needs an owner credential. Other owner credentials (the app\u2019s own) stay: they are revoked at the command line. ' +
      'For the local account, the identity service makes a new one in its data folder at its next start.',
    query: z.object({
      keep_current: z
        .enum(['true', 'false'], { message: 'keep_current is true or false' })
        .default('false')
        .transform((v) => v === 'true')
        .meta({ description: 'true keeps the credential this request was made with.' }),
    }),
    responses: {
      200: {
        description: 'How many were revoked.',
        schema: z.object({ revoked: z.number().int() }).meta({ id: 'RevokedCount' }),
      },
    },
    handler: async ({ query, principal }) => {
      return { body: { revoked: await parts.accounts.revokeAllBy(callerOf(principal), query.keep_current) } };
    },
  });

  ownerRoute('Managing platform connections', {
    method: 'get',
    path: '/v1/connections',
    operationId: 'list_connections',
    summary: 'Your platform connections, by profile, without secrets',
    responses: { 200: { description: 'The connections.', schema: ConnectionList } },
    handler: async ({ principal }) => {
      return { body: { connections: await parts.connections.list(principal.account) } };
    },
  });

  ownerRoute('Managing platform connections', {
    method: 'put',
    path: '/v1/connections/{profile}',
    operationId: 'put_connection',
    summary: 'Add or replace the platform connection of a profile',
    params: ConnectionParams,
    body: ConnectionInput,
    responses: { 200: { description: 'The connection, without its secret.', schema: ConnectionSummary } },
    handler: async ({ params, body, principal }) => {
      return {
        body: await parts.connections.put(principal.account, params.profile, body),
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  });

  ownerRoute('Managing platform connections', {
    method: 'delete',
    path: '/v1/connections/{profile}',
    operationId: 'delete_connection',
    summary: 'Remove the platform connection of a profile',
    params: ConnectionParams,
    responses: { 204: { description: 'Removed.' } },
    problems: [404],
    handler: async ({ params, principal }) => {
      if (!(await parts.connections.remove(principal.account, params.profile))) {
        throw problem.notFound(`You have no connection for profile "${params.profile}".`);
      }
      return { status: 204 };
    },
  });

  ownerRoute('Choosing settings', {
    method: 'get',
    path: '/v1/account/settings/persona',
    operationId: 'get_persona_settings',
    summary: 'Your own settings for the persona store (forgetting, replaced values); {} when you chose none',
    responses: { 200: { description: 'What you chose.', schema: PersonaSettings } },
    handler: async ({ principal }) => ({ body: (await parts.settings.get(principal.account)) ?? {} }),
  });

  ownerRoute('Choosing settings', {
    method: 'put',
    path: '/v1/account/settings/persona',
    operationId: 'put_persona_settings',
    summary: 'Replace your own settings for the persona store; a member left out is the deployment\u2019s again',
    description:
      'The persona store reads them at every request (its settings service, PERSONA_SETTINGS_API_BASE_URL pointing here), so a choice applies to the next request.',
    body: PersonaSettings,
    responses: { 200: { description: 'What you chose now.', schema: PersonaSettings } },
    handler: async ({ principal, body }) => ({ body: await parts.settings.put(principal.account, body) }),
  });

  serviceRoute({
    method: 'get',
    path: '/v1/settings/persona',
    operationId: 'read_persona_settings',
    summary: 'For the persona store: a person\u2019s own settings (the settings service it reads)',
    description:
      'Authorization carries the persona store\u2019s service token, registered in IDENTITY_SERVICE_TOKENS under "persona". 404: the person chose nothing.',
    query: z.object({
      account: z.string().min(1).max(200).meta({ description: 'The sub of the caller\u2019s token.' }),
    }),
    responses: { 200: { description: 'What the person chose.', schema: PersonaSettings } },
    problems: [403, 404],
    handler: async ({ query }, service) => {
      if (service !== PERSONA_AUDIENCE) {
        throw problem.forbidden(
          `Only the persona store (registered as "${PERSONA_AUDIENCE}") reads a person\u2019s persona settings, not "${service}".`,
        );
      }
      const chosen = await parts.settings.get((query as { account: string }).account);
      if (!chosen) throw problem.notFound('This person chose no persona settings: the deployment\u2019s apply.');
      return { body: chosen, headers: { 'Cache-Control': 'no-store' } };
    },
  });

  serviceRoute({
    method: 'post',
    path: '/v1/credentials/resolve',
    operationId: 'resolve_credential',
    summary: 'For registered services: the platform credential of a caller\u2019s profile',
    description:
      'Authorization carries the service\u2019s own service token (IDENTITY_SERVICE_TOKENS). The body carries the caller\u2019s token, ' +
      'which must be minted by this service for exactly the audience the service is registered under.',
    body: z.object({ caller_token: z.string().min(1).max(8192), profile: Profile }),
    responses: { 200: { description: 'The credential.', schema: ResolvedCredential } },
    problems: [403, 404, 502],
    handler: async ({ req, body }, service) => {
      let account: string;
      let session: unknown;
      try {
        const { payload } = await verifyMinted(body.caller_token, ['sub', 'exp', 'aud']);
        if (
          payload.aud !== service &&
          !(Array.isArray(payload.aud) && payload.aud.length === 1 && payload.aud[0] === service)
        ) {
          throw problem.forbidden(
            `The caller\u2019s token is not for "${service}"; a service may only resolve credentials for tokens minted for it.`,
          );
        }
        account = payload.sub!;
        session = payload.sid;
      } catch (err) {
        if (err instanceof Error && err.name === 'Problem') throw err;
        throw problem.forbidden('The caller\u2019s token is not valid; the caller must ask for a new one.');
      }
      // A token outlives its session credential by at most its own lifetime; a platform credential is not handed out for it.
      if (typeof session === 'string' && !(await parts.accounts.sessionLive(account, session))) {
        throw problem.forbidden(
          'The session credential the caller\u2019s token was minted with has been revoked or has expired; the caller must use a current one.',
        );
      }
      const force = req.get('cache-control')?.includes('no-cache') ?? false;
      return {
        body: await parts.connections.resolve(account, body.profile, force),
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  });

  serviceRoute({
    method: 'post',
    path: '/v1/credentials/check',
    operationId: 'check_credential',
    summary: 'For registered services: is a credential resolved earlier still the current one?',
    description:
      'Authorization carries the service\u2019s own service token. A service holding a resolved credential asks this every few seconds before using it again: ' +
      'current is false once the connection was removed or replaced, the account removed, or the session credential behind the caller\u2019s token (its sid claim) revoked or expired.',
    body: z.object({
      account: z.string().min(1).max(200).meta({ description: 'The account (the sub of the caller\u2019s token).' }),
      profile: Profile,
      revision: z.string().min(1).max(100).meta({ description: 'The revision of the resolved credential.' }),
      session: SessionId.optional().meta({ description: 'The sid of the caller\u2019s token, when it had one.' }),
    }),
    responses: { 200: { description: 'Whether it is still current, and if not, why.', schema: CredentialStatus } },
    handler: async ({ body }) => {
      const stale = async (): Promise<z.infer<typeof CredentialStatus>['reason']> => {
        if (!(await parts.accounts.get(body.account))) return 'account_removed';
        if (body.session !== undefined && !(await parts.accounts.sessionLive(body.account, body.session)))
          return 'session_revoked';
        return parts.connections.stillCurrent(body.account, body.profile, body.revision);
      };
      const reason = await stale();
      return {
        body: reason ? { current: false, reason } : { current: true },
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  });

  return api;
}

/** Which registered service presented this token, compared in constant time; 401 saying how to present one when none did. */
function registeredService(services: Map<string, string>, authorization: string | undefined): string {
  const presented = bearerToken(authorization);
  if (presented) {
    const digest = createHash('sha256').update(presented).digest();
    let found: string | undefined;
    for (const [name, token] of services) {
      if (timingSafeEqual(digest, createHash('sha256').update(token).digest())) found = name;
    }
    if (found) return found;
  }
  throw problem.unauthorized(
    'Present your service token as "Authorization: Bearer <token>", as registered in IDENTITY_SERVICE_TOKENS.',
    authorization !== undefined,
  );
}
