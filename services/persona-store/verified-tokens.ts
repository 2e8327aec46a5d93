import { decodeJwt } from 'jose';
import type { Principal, TokenVerifier } from '../kit/auth.ts';

const MAX_ENTRIES = 1000;

/**
 * Remembers tokens the kit's verifier accepted, until their own `exp`, so that a caller sending the
 * same token again is not verified again (signature checks are most of a small read's cost). Only
 * accepted tokens are remembered, keyed by the whole token string; anything else goes to the verifier.
 */
export function rememberVerifiedTokens(verifier: TokenVerifier, now: () => number = Date.now): TokenVerifier {
  const accepted = new Map<string, { principal: Principal; expiresAtMs: number }>();
  return {
    async verify(authorization) {
      const hit = authorization === undefined ? undefined : accepted.get(authorization);
      if (hit && now() < hit.expiresAtMs) return hit.principal;
      if (hit) accepted.delete(authorization!);
      const principal = await verifier.verify(authorization);
      const exp = decodeJwt(principal.token).exp;
      if (exp !== undefined) {
        if (accepted.size >= MAX_ENTRIES) accepted.delete(accepted.keys().next().value!);
        accepted.set(authorization!, { principal, expiresAtMs: exp * 1000 });
      }
      return principal;
    },
    keysAvailable: () => verifier.keysAvailable(),
    get keySetFetches() {
      return verifier.keySetFetches;
    },
  };
}
