import { decodeJwt } from 'jose';
import type { Principal, TokenVerifier } from '../kit/auth.ts';

const REMEMBERED = 10_000;

/**
 * The kit's verifier, remembering each token it accepted until that token's own expiry: a hub sends
 * the same token for many calls, and checking its signature again proves nothing new (the identity
 * service has no revocation; keys stay published while tokens they signed are valid). Refusals are
 * never remembered, and expiry is checked on every use.
 */
export function rememberingVerifier(verifier: TokenVerifier): TokenVerifier {
  const accepted = new Map<string, { principal: Principal; expiresAt: number }>();
  return {
    async verify(authorization) {
      const hit = authorization ? accepted.get(authorization) : undefined;
      if (hit && hit.expiresAt > Date.now()) return hit.principal;
      if (hit) accepted.delete(authorization!);
      const principal = await verifier.verify(authorization);
      const exp = decodeJwt(principal.token).exp;
      if (typeof exp === 'number') {
        accepted.set(authorization!, { principal, expiresAt: exp * 1000 });
        while (accepted.size > REMEMBERED) accepted.delete(accepted.keys().next().value!);
      }
      return principal;
    },
    keysAvailable: () => verifier.keysAvailable(),
    get keySetFetches() {
      return verifier.keySetFetches;
    },
  };
}
