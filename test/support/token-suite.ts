import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt, exportSPKI, generateKeyPair, importJWK, type JWK, SignJWT, UnsecuredJWT } from 'jose';
import { expect, it } from 'vitest';
import { startTestIdentity, type TestIdentity } from './identity.ts';

interface StoredKey {
  kid: string;
  alg: string;
  privateJwk: JWK;
  publicJwk: JWK;
  retiredAt: string | null;
}

function activeKey(identity: TestIdentity): StoredKey {
  const keys = JSON.parse(readFileSync(join(identity.dataDir, 'keys', 'signing-keys.json'), 'utf8')) as StoredKey[];
  return keys.find((k) => k.retiredAt === null)!;
}

interface Claims {
  iss?: string;
  aud?: string;
  sub?: string;
  exp?: number;
  nbf?: number;
}

/** Signs claims with the identity service's own active key: every forged token differs in one thing only. */
async function signWith(key: StoredKey, claims: Claims, kid = key.kid): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({}).setProtectedHeader({ alg: key.alg, kid, typ: 'JWT' }).setIssuedAt(now);
  if (claims.iss !== undefined) jwt.setIssuer(claims.iss);
  if (claims.aud !== undefined) jwt.setAudience(claims.aud);
  if (claims.sub !== undefined) jwt.setSubject(claims.sub);
  jwt.setExpirationTime(claims.exp ?? now + 600);
  if (claims.nbf !== undefined) jwt.setNotBefore(claims.nbf);
  return jwt.sign(await importJWK(key.privateJwk, key.alg));
}

/** Tokens that must each be refused with 401 by a service whose audience is `audience`. */
export async function forgedTokens(identity: TestIdentity, audience: string): Promise<Record<string, string>> {
  const key = activeKey(identity);
  const now = Math.floor(Date.now() / 1000);
  const valid = await identity.mint(identity.localCredential, audience);
  const sub = decodeJwt(valid).sub!;
  const base = { iss: identity.url, aud: audience, sub };

  const [h, p, s] = valid.split('.') as [string, string, string];
  const payload = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
  const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: `${sub}x` })).toString('base64url')}.${s}`;

  const publicKey = await importJWK(key.publicJwk, key.alg);
  const pem = await exportSPKI(publicKey as CryptoKey);
  const hmacWithPublicKey = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(base.iss)
    .setAudience(audience)
    .setSubject(sub)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(new TextEncoder().encode(pem));

  const stranger = await generateKeyPair('ES256', { extractable: true });
  const strangerJwt = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'not-a-published-kid', typ: 'JWT' })
    .setIssuer(base.iss)
    .setAudience(audience)
    .setSubject(sub)
    .setIssuedAt(now)
    .setExpirationTime(now + 600)
    .sign(stranger.privateKey);

  const other = await startTestIdentity();
  let fromOtherService: string;
  let otherKeyOurIssuer: string;
  try {
    fromOtherService = await other.mint(other.localCredential, audience);
    otherKeyOurIssuer = await signWith(activeKey(other), base);
  } finally {
    await other.close();
  }

  return {
    'alg none': new UnsecuredJWT({})
      .setIssuer(base.iss)
      .setAudience(audience)
      .setSubject(sub)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .encode(),
    'HS256 keyed with the public key': hmacWithPublicKey,
    'wrong audience': await signWith(key, { ...base, aud: `${audience}-other` }),
    'wrong issuer': await signWith(key, { ...base, iss: 'http://127.0.0.1:1' }),
    expired: await signWith(key, { ...base, exp: now - 3600 }),
    'nbf in the future': await signWith(key, { ...base, nbf: now + 3600 }),
    'unknown kid': strangerJwt,
    'tampered payload': tampered,
    'missing sub': await signWith(key, { iss: base.iss, aud: audience }),
    'token of another identity service': fromOtherService,
    'key of another identity service claiming our issuer': otherKeyOurIssuer,
  };
}

/**
 * The reusable negative suite: every service that verifies tokens runs it against itself.
 * `call` makes one authenticated request with the given Authorization header and returns the response.
 */
export function tokenRejectionSuite(options: {
  audience: string;
  identity: () => TestIdentity;
  call: (authorization: string | undefined) => Promise<Response>;
}): void {
  it('accepts a token minted by the identity service for its audience (control)', async () => {
    const identity = options.identity();
    const res = await options.call(`Bearer ${await identity.mint(identity.localCredential, options.audience)}`);
    expect(res.status).toBe(200);
  });

  it('takes the scheme in any case ("bearer", "BEARER"), as HTTP defines it', async () => {
    const identity = options.identity();
    const token = await identity.mint(identity.localCredential, options.audience);
    expect((await options.call(`bearer ${token}`)).status).toBe(200);
    expect((await options.call(`BEARER ${token}`)).status).toBe(200);
  });

  it('refuses a request without a token with the bare challenge "WWW-Authenticate: Bearer" (no error code, RFC 6750)', async () => {
    const res = await options.call(undefined);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.headers.get('content-type')).toMatch(/application\/(problem\+)?json/);
  });

  it('refuses a malformed Authorization header with error="invalid_token"', async () => {
    for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b']) {
      const res = await options.call(header);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    }
  });

  it('refuses every forged or misdirected token with 401', async () => {
    const tokens = await forgedTokens(options.identity(), options.audience);
    const outcomes: Record<string, number> = {};
    const challenges = new Set<string | null>();
    for (const [name, token] of Object.entries(tokens)) {
      const res = await options.call(`Bearer ${token}`);
      outcomes[name] = res.status;
      challenges.add(res.headers.get('www-authenticate'));
    }
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(tokens).map((n) => [n, 401])));
    expect([...challenges]).toEqual(['Bearer error="invalid_token"']);
  });
}
