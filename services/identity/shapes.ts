import { z } from 'zod';
import { profileName } from '../kit/profile.ts';
import { SESSION_ID } from './accounts.ts';

/** One zod schema per shape that crosses identity's HTTP edge: request validation and /openapi.json both come from these. */

export const Profile = profileName().meta({
  description: 'Which of your connections: a profile name of your choosing.',
});

export const Jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())) }).meta({ id: 'JsonWebKeySet' });
export const ServiceToken = z
  .object({
    token: z.string().meta({ description: 'A JWT for the audience asked for; sub is your account.' }),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().meta({ description: 'Seconds until it expires.' }),
    expires_at: z.string().meta({ description: 'When it expires (ISO 8601).' }),
  })
  .meta({ id: 'ServiceToken' });
export const ConnectionSummary = z
  .object({ profile: z.string(), kind: z.enum(['token', 'app']), created_at: z.string(), updated_at: z.string() })
  .meta({ id: 'ConnectionSummary', description: 'A connection without its secret, which is never shown again.' });
export const ConnectionList = z.object({ connections: z.array(ConnectionSummary) });
export const ResolvedCredential = z
  .object({
    profile: z.string(),
    kind: z.enum(['token', 'app']),
    token: z.string(),
    expires_at: z.string(),
    login: z
      .string()
      .optional()
      .meta({ description: 'For an app connection: the platform account the app is installed on.' }),
    revision: z.string().meta({
      description:
        'Which version of the connection this is (new on every PUT). Before using a held copy again, ask POST /v1/credentials/check whether it is still current.',
    }),
  })
  .meta({
    id: 'ResolvedCredential',
    description: 'A platform credential; hold it in memory only, no longer than expires_at.',
  });
/** Why a resolved credential is no longer the current one. */
export const STALE_REASONS = [
  'account_removed',
  'session_revoked',
  'connection_removed',
  'connection_replaced',
] as const;
export type StaleReason = (typeof STALE_REASONS)[number];

export const CredentialStatus = z
  .object({
    current: z.boolean().meta({
      description: 'True while the connection is the one resolved and the caller\u2019s session credential stands.',
    }),
    reason: z.enum(STALE_REASONS).optional().meta({
      description:
        'Why it is no longer current: stop using the held credential (and resolve again with a caller token, if you have one).',
    }),
  })
  .meta({ id: 'CredentialStatus' });

export const TokenStatus = z
  .object({
    active: z.boolean().meta({
      description: 'True while the token verifies and the session credential it was minted with (its sid) stands.',
    }),
    reason: z.enum(['invalid_token', 'no_session', 'session_revoked']).optional().meta({
      description:
        'Why it is not active: not a valid token of this service; no sid; its session credential revoked, expired or its account removed.',
    }),
  })
  .meta({ id: 'TokenStatus' });

export const SessionId = z
  .string()
  .regex(SESSION_ID, 'a session credential id is ses_ and 24 hexadecimal digits')
  .meta({ description: 'The id of a session credential.' });
export const SessionCredential = z
  .object({
    id: z.string(),
    label: z.string().nullable(),
    created_at: z.string(),
    last_used_at: z
      .string()
      .nullable()
      .meta({ description: 'Last time it authenticated a request (to the minute); null: never.' }),
    expires_at: z.string().nullable().meta({ description: 'When it stops working; null: never.' }),
    current: z.boolean().meta({ description: 'Whether it is the credential this request was made with.' }),
    purpose: z.enum(['owner', 'hub']).meta({
      description:
        'owner: the account\u2019s own (the app\u2019s, or one the command line made): mints tokens for any audience, makes and revokes hub credentials, manages connections. hub: mints tokens for its audiences and nothing else.',
    }),
    audiences: z
      .array(z.string())
      .nullable()
      .meta({ description: 'The audiences a hub credential mints tokens for; null for an owner credential (any).' }),
  })
  .meta({
    id: 'SessionCredential',
    description: 'A session credential of your account, without its secret (shown once, when it is made).',
  });
export const NewSessionCredential = SessionCredential.extend({
  credential: z.string().meta({
    description:
      'The secret itself: shown this once, stored only as a hash. Present it as "Authorization: Bearer <credential>".',
  }),
}).meta({ id: 'NewSessionCredential' });
export const SessionCredentialList = z
  .object({ credentials: z.array(SessionCredential) })
  .meta({ id: 'SessionCredentialList' });

/** The answers' types, for the console and its page (imported with `import type`: nothing of this file is bundled there). */
export type ConnectionSummary = z.infer<typeof ConnectionSummary>;
export type ConnectionList = z.infer<typeof ConnectionList>;
export type SessionCredential = z.infer<typeof SessionCredential>;
export type NewSessionCredential = z.infer<typeof NewSessionCredential>;
export type SessionCredentialList = z.infer<typeof SessionCredentialList>;
