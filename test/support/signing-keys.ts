import { chmodSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';

/**
 * Real signing keys and a keys file as identity keeps one (a JWK set, `public-keys.json` in an owner-only
 * folder), without starting identity: for the unit tests of the kit's token rules, which sign tokens of any
 * shape (no `exp`, two audiences, a huge claim) that identity would never mint.
 */
export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  /** The public JWK, with `kid`, `alg` and `use` as identity publishes it. */
  readonly jwk: JWK;
}

export async function signingKey(kid: string, alg = 'ES256'): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A folder only its owner may write (0700), as identity's data folder is. */
export function ownerOnlyFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), `${prefix}-`));
  chmodSync(folder, 0o700);
  return folder;
}

/** Writes `keys` (public JWKs, or anything to test what is refused) as a JWK set, replacing the file whole as identity does. */
export function writeKeySet(file: string, keys: unknown[]): void {
  writeFileSync(`${file}.tmp`, JSON.stringify({ keys }));
  renameSync(`${file}.tmp`, file);
}

export interface TokenShape {
  issuer: string;
  audience?: string | string[];
  subject?: string;
  /** Seconds since the epoch; omitted: none. */
  exp?: number;
  nbf?: number;
  /** Any members, of any type (a sub that is a number, an iat that is text): what a token may carry, not what identity mints. */
  claims?: Record<string, unknown>;
  /** Overrides the header's kid (the key's own otherwise). */
  kid?: string;
  alg?: string;
}

/** A token signed with `key`, carrying exactly the claims given. */
export function sign(key: SigningKey, shape: TokenShape): Promise<string> {
  const jwt = new SignJWT((shape.claims ?? {}) as JWTPayload).setProtectedHeader({
    alg: shape.alg ?? (key.jwk.alg as string),
    kid: shape.kid ?? key.kid,
  });
  jwt.setIssuer(shape.issuer);
  if (shape.claims?.iat === undefined) jwt.setIssuedAt();
  if (shape.audience !== undefined) jwt.setAudience(shape.audience);
  if (shape.subject !== undefined) jwt.setSubject(shape.subject);
  if (shape.exp !== undefined) jwt.setExpirationTime(shape.exp);
  if (shape.nbf !== undefined) jwt.setNotBefore(shape.nbf);
  return jwt.sign(key.privateKey);
}

/** Seconds since the epoch, `offset` seconds from now. */
export const epoch = (offset = 0) => Math.floor(Date.now() / 1000) + offset;
