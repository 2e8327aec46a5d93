import { errors, jwtVerify, type JWTPayload } from 'jose';
import { keySource, KeysUnavailable, type IdentityKeys } from './identity-keys.ts';
import { problem } from './problem.ts';

/** Who made a request: the account (`sub`) and the audience the token was minted for. */
export interface Principal {
  readonly account: string;
  readonly audience: string;
  /**
   * The kind of session credential the token was minted with, as identity says in its `purpose` claim:
   * `owner` (the person's own: the app, the command line) or `hub`; undefined when the token does not say.
   */
  readonly purpose?: 'owner' | 'hub';
  /** The verified bearer token itself, for services that must present it onward (the gateway). */
  readonly token: string;
}

export interface TokenVerifierOptions {
  /** The identity service's base URL; tokens must carry exactly this as `iss`. */
  identityUrl: string;
  /** The one audience this service accepts. */
  audience: string;
  /** Where identity's public keys come from: never from identity's port (see identity-keys.ts). */
  keys: IdentityKeys;
  /** Seconds of clock skew tolerated on `exp` and `nbf`. */
  clockToleranceSeconds?: number;
  /** Least time between two loads of the key set for unknown key ids (default 5 s), so forged kids cost nothing. */
  keySetCooldownMs?: number;
}

/** Asymmetric algorithms only: never `none`, never an HMAC that could be keyed with a public key. */
export const ALLOWED_ALGORITHMS = ['ES256', 'EdDSA', 'RS256', 'PS256'];

export interface TokenVerifier {
  verify(authorization: string | undefined): Promise<Principal>;
  /** True when a trusted key of the identity service is at hand. */
  keysAvailable(): Promise<boolean>;
  /** How many times the key set was loaded (its file read, or the pinned set fetched): not once per request. */
  readonly keySetLoads: number;
}

export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const issuer = options.identityUrl.replace(/\/+$/, '');
  const keys = keySource(options.keys, { cooldownMs: options.keySetCooldownMs });

  async function verify(authorization: string | undefined): Promise<Principal> {
    const token = bearerToken(authorization);
    if (!token) {
      throw problem.unauthorized(
        `Send a token from the identity service as "Authorization: Bearer <token>", minted for the audience "${options.audience}".`,
        authorization !== undefined,
      );
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys.resolve, {
        issuer,
        audience: options.audience,
        algorithms: ALLOWED_ALGORITHMS,
        clockTolerance: options.clockToleranceSeconds ?? 30,
        requiredClaims: ['sub', 'exp'],
      }));
    } catch (err) {
      if (err instanceof KeysUnavailable) {
        // Failing closed: no token can be checked until the keys are back, and that is no fault of the caller's.
        // Where the keys are looked for is this service's /ready to say, not a caller's answer.
        throw problem.unavailable(
          'No token can be checked now: this service does not have the identity service\u2019s keys. Make sure the identity service is running, then try again.',
        );
      }
      throw problem.unauthorized(describeRejection(err, options.audience, issuer));
    }
    // jose has checked that this audience is among the token's: it must be the only one.
    if (Array.isArray(payload.aud) && payload.aud.length !== 1) {
      throw problem.unauthorized(
        `The token must be minted for exactly the audience "${options.audience}"; ask the identity service for one.`,
      );
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) {
      throw problem.unauthorized('The token names no account (sub); ask the identity service for a new one.');
    }
    const purpose = payload.purpose === 'owner' || payload.purpose === 'hub' ? payload.purpose : undefined;
    return { account: payload.sub, audience: options.audience, token, ...(purpose ? { purpose } : {}) };
  }

  return {
    verify,
    keysAvailable: () => keys.available(),
    get keySetLoads() {
      return keys.loads;
    },
  };
}

/** The credential of an `Authorization: Bearer <credential>` header; the scheme is case-insensitive (RFC 9110 §11.1). */
export function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : /^bearer +(\S+)$/i.exec(authorization.trim())?.[1];
}

function describeRejection(err: unknown, audience: string, issuer: string): string {
  if (err instanceof errors.JWTExpired) return 'The token has expired; ask the identity service for a new one.';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud')
      return `The token is for another audience; ask the identity service for one minted for "${audience}".`;
    if (err.claim === 'iss')
      return `The token was not issued by the identity service at ${issuer}; ask that service for one.`;
    if (err.claim === 'nbf')
      return 'The token is not valid yet (nbf is in the future); check the clock or ask for a new token.';
    if (err.claim === 'sub' || err.claim === 'exp')
      return `The token lacks the ${err.claim} claim; ask the identity service for a new one.`;
    return 'The token\u2019s claims are not acceptable; ask the identity service for a new one.';
  }
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys)
    return 'The token was not signed with a key this service holds from the identity service; ask it for a new token.';
  if (err instanceof errors.JOSEAlgNotAllowed)
    return 'The token\u2019s signing algorithm is not accepted; ask the identity service for a new one.';
  return 'The token is not valid; ask the identity service for a new one.';
}
