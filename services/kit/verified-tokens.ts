import { decodeJwt } from 'jose';
import { bearerToken, type Principal, type TokenVerifier } from './auth.ts';

/** What one remembered token costs besides its characters: the map entry, the principal, the expiry. */
const ENTRY_OVERHEAD_BYTES = 200;

/** The budget a service gives the remembered tokens unless it has a setting of its own: about a thousand tokens. */
export const DEFAULT_VERIFIED_TOKENS_BYTES = 1_048_576;

export interface RememberedTokens extends TokenVerifier {
  /** What is held now, for tests and diagnostics; `bytes` never exceeds `maxBytes`. */
  readonly held: { entries: number; bytes: number; maxBytes: number };
}

export interface RememberOptions {
  /** Most bytes the remembered tokens may take (each token's characters, its account and a fixed overhead); 0 remembers none. */
  maxBytes: number;
  now?: () => number;
}

/**
 * Remembers tokens the kit's verifier accepted, until their own `exp`, so that a caller sending the
 * same token again is not verified again (signature checks are most of a small read's cost; the
 * identity service keeps a key published while tokens it signed are valid, so checking again proves
 * nothing new). Only accepted tokens are remembered, keyed by the token itself (not the header, whose
 * spelling a caller may vary at will), within a byte budget: the least recently used go first. A
 * token that was let go still verifies; it only costs a verification again. Expiry is checked on
 * every use.
 */
export function rememberVerifiedTokens(
  verifier: TokenVerifier,
  { maxBytes, now = Date.now }: RememberOptions,
): RememberedTokens {
  // Keyed by the token; a header without one (undefined) is never a key, so asking for it finds nothing.
  const accepted = new Map<string | undefined, { principal: Principal; expiresAtMs: number; bytes: number }>();
  let bytes = 0;
  const forget = (token: string | undefined) => {
    const entry = accepted.get(token);
    if (!entry) return;
    accepted.delete(token);
    bytes -= entry.bytes;
  };
  return {
    async verify(authorization) {
      const token = bearerToken(authorization);
      const hit = accepted.get(token);
      if (hit && now() < hit.expiresAtMs) {
        // Most recently used goes last, so the budget lets go of tokens nobody sends any more.
        accepted.delete(token);
        accepted.set(token, hit);
        return hit.principal;
      }
      // Expired (or never here): let go of it before it is verified again, which may fail.
      forget(token);
      const principal = await verifier.verify(authorization);
      const exp = decodeJwt(principal.token).exp;
      const size = principal.token.length + principal.account.length + ENTRY_OVERHEAD_BYTES;
      if (exp !== undefined && size <= maxBytes) {
        forget(principal.token);
        accepted.set(principal.token, { principal, expiresAtMs: exp * 1000, bytes: size });
        bytes += size;
        for (const oldest of accepted.keys()) {
          if (bytes <= maxBytes) break;
          forget(oldest);
        }
      }
      return principal;
    },
    keysAvailable: () => verifier.keysAvailable(),
    get keySetLoads() {
      return verifier.keySetLoads;
    },
    get held() {
      return { entries: accepted.size, bytes, maxBytes };
    },
  };
}
