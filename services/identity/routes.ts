import { timingSafeEqual, createHash } from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { z } from 'zod';
import { Api } from '../kit/api.ts';
import { ALLOWED_ALGORITHMS, bearerToken } from '../kit/auth.ts';
import { problem } from '../kit/problem.ts';
import type { Accounts } from './accounts.ts';
import { ConnectionInput, type Connections } from './connections.ts';
import type { SigningKeys } from './keys.ts';

const Profile = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a profile is 1-64 letters, digits, dot, dash or underscore')
  .meta({ description: 'Which of your connections: a profile name of your choosing.' });

const Jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'JsonWebKeySet' });
const ServiceToken = z
  .object({
    token: z.string().meta({ description: 'A JWT for the audience asked for; sub is your account.' }),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().meta({ description: 'Seconds until it expires.' }),
    expires_at: z.string().meta({ description: 'When it expires (ISO 8601).' }),
  })
  .meta({ id: 'ServiceToken' });
const ConnectionSummary = z
  .object({ profile: z.string(), kind: z.enum(['token', 'app']), created_at: z.string(), updated_at: z.string() })
  .meta({ id: 'ConnectionSummary', description: 'A connection without its secret, which is never shown again.' });
const ResolvedCredential = z
  .object({
    profile: z.string(),
    kind: z.enum(['token', 'app']),
    token: z.string(),
    expires_at: z.string(),
    login: z.string().optional().meta({ description: 'For an app connection: the platform account the app is installed on.' }),
  })
  .meta({ id: 'ResolvedCredential', description: 'A platform credential; hold it in memory only, no longer than expires_at.' });

export interface IdentityParts {
  issuer: () => string;
  keys: SigningKeys;
  accounts: Accounts;
  connections: Connections;
  /** Registered services by name, with their service tokens. */
  services: Map<string, string>;
  tokenTtlSeconds: number;
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
    description: 'Authenticated with your session credential. Any audience may be asked for; the token names exactly that one.',
    body: z.object({ audience: z.string().min(1).max(200).regex(/^[\x21-\x7e]+$/, 'an audience is printable text without spaces') }),
    responses: { 200: { description: 'The token.', schema: ServiceToken } },
    handler: async ({ body, principal }) => {
      const { token, expiresAt } = await parts.keys.sign({ sub: principal.account, aud: body.audience, iss: parts.issuer() });
      return {
        body: { token, token_type: 'Bearer', expires_in: parts.tokenTtlSeconds, expires_at: expiresAt.toISOString() },
        headers: { 'Cache-Control': 'no-store' },
      };
    },
  });

  api.route({
    method: 'get',
    path: '/v1/account',
    operationId: 'get_account',
    summary: 'The account of this session credential',
    responses: { 200: { description: 'The account.', schema: z.object({ id: z.string(), name: z.string() }).meta({ id: 'Account' }) } },
    handler: async ({ principal }) => ({ body: await parts.accounts.get(principal.account) }),
  });

  api.route({
    method: 'get',
    path: '/v1/connections',
    operationId: 'list_connections',
    summary: 'Your platform connections, by profile, without secrets',
    responses: { 200: { description: 'The connections.', schema: z.object({ connections: z.array(ConnectionSummary) }) } },
    handler: async ({ principal }) => ({ body: { connections: await parts.connections.list(principal.account) } }),
  });

  api.route({
    method: 'put',
    path: '/v1/connections/{profile}',
    operationId: 'put_connection',
    summary: 'Add or replace the platform connection of a profile',
    params: z.object({ profile: Profile }),
    body: ConnectionInput,
    responses: { 200: { description: 'The connection, without its secret.', schema: ConnectionSummary } },
    handler: async ({ params, body, principal }) => ({
      body: await parts.connections.put(principal.account, params.profile, body),
      headers: { 'Cache-Control': 'no-store' },
    }),
  });

  api.route({
    method: 'delete',
    path: '/v1/connections/{profile}',
    operationId: 'delete_connection',
    summary: 'Remove the platform connection of a profile',
    params: z.object({ profile: Profile }),
    responses: { 204: { description: 'Removed.' } },
    problems: [404],
    handler: async ({ params, principal }) => {
      if (!(await parts.connections.remove(principal.account, params.profile))) {
        throw problem.notFound(`You have no connection for profile "${params.profile}".`);
      }
      return { status: 204 };
    },
  });

  const ownKeys = () => createLocalJWKSet(parts.keys.publicSet() as Parameters<typeof createLocalJWKSet>[0]);
  api.route({
    method: 'post',
    path: '/v1/credentials/resolve',
    operationId: 'resolve_credential',
    summary: 'For registered services: the platform credential of a caller\u2019s profile',
    description:
      'Authorization carries the service\u2019s own service token (IDENTITY_SERVICE_TOKENS). The body carries the caller\u2019s token, ' +
      'which must be minted by this service for exactly the audience the service is registered under.',
    auth: false,
    body: z.object({ caller_token: z.string().min(1).max(8192), profile: Profile }),
    responses: { 200: { description: 'The credential.', schema: ResolvedCredential } },
    problems: [401, 403, 404, 502],
    handler: async ({ req, body }) => {
      const service = matchServiceToken(parts.services, req.get('authorization'));
      if (!service) {
        throw problem.unauthorized(
          'Present your service token as "Authorization: Bearer <token>", as registered in IDENTITY_SERVICE_TOKENS.',
          req.get('authorization') !== undefined,
        );
      }
      let account: string;
      try {
        const { payload } = await jwtVerify(body.caller_token, ownKeys(), {
          issuer: parts.issuer(),
          algorithms: ALLOWED_ALGORITHMS,
          clockTolerance: 30,
          requiredClaims: ['sub', 'exp', 'aud'],
        });
        if (payload.aud !== service && !(Array.isArray(payload.aud) && payload.aud.length === 1 && payload.aud[0] === service)) {
          throw problem.forbidden(`The caller\u2019s token is not for "${service}"; a service may only resolve credentials for tokens minted for it.`);
        }
        account = payload.sub!;
      } catch (err) {
        if (err instanceof Error && err.name === 'Problem') throw err;
        throw problem.forbidden('The caller\u2019s token is not valid; the caller must ask for a new one.');
      }
      const force = req.get('cache-control')?.includes('no-cache') ?? false;
      return { body: await parts.connections.resolve(account, body.profile, force), headers: { 'Cache-Control': 'no-store' } };
    },
  });

  return api;
}

/** Which registered service presented this token, compared in constant time. */
function matchServiceToken(services: Map<string, string>, authorization: string | undefined): string | undefined {
  const presented = bearerToken(authorization);
  if (!presented) return undefined;
  const digest = createHash('sha256').update(presented).digest();
  let found: string | undefined;
  for (const [name, token] of services) {
    if (timingSafeEqual(digest, createHash('sha256').update(token).digest())) found = name;
  }
  return found;
}
