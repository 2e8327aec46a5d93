/**
 * Every rule of the kit's token verifier, one at a time, with real keys and real signatures: tokens of
 * every shape identity would never mint (no exp, two audiences, an empty sub, another issuer), signed by
 * a key in a keys file as identity writes it. Which words each refusal says is part of the rule: a caller
 * must learn what to fix.
 */
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  epoch,
  ownerOnlyFolder,
  sign,
  signingKey,
  writeKeySet,
  type SigningKey,
} from '../../test/support/signing-keys.ts';
import { ALLOWED_ALGORITHMS, bearerToken, createTokenVerifier, type TokenVerifier } from './auth.ts';
import { Problem } from './problem.ts';

const ISSUER = 'http://127.0.0.1:8001';
const AUDIENCE = 'kit-test';
let key: SigningKey;
let stranger: SigningKey;
let keysFile: string;
let verifier: TokenVerifier;

beforeAll(async () => {
  key = await signingKey('k1');
  stranger = await signingKey('k1');
  keysFile = join(ownerOnlyFolder('auth-rules'), 'public-keys.json');
  writeKeySet(keysFile, [key.jwk]);
  // The issuer as configured may end in slashes: tokens carry it without.
  verifier = createTokenVerifier({ identityUrl: `${ISSUER}//`, audience: AUDIENCE, keys: { file: keysFile } });
});

const good = (over: Partial<Parameters<typeof sign>[1]> = {}, k = key) =>
  sign(k, { issuer: ISSUER, audience: AUDIENCE, subject: 'acct-1', exp: epoch(300), ...over });

/** The refusal `verify` throws, as a Problem. */
async function refusal(authorization: string | undefined, v = verifier): Promise<Problem> {
  try {
    await v.verify(authorization);
  } catch (err) {
    expect(err).toBeInstanceOf(Problem);
    return err as Problem;
  }
  throw new Error('the token was accepted');
}

describe('bearerToken', () => {
  it('takes the credential of a Bearer header, the scheme in any case, after one or more spaces, the header trimmed', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('BEARER abc')).toBe('abc');
    expect(bearerToken('Bearer    abc')).toBe('abc');
    expect(bearerToken('  Bearer abc  ')).toBe('abc');
  });

  it('takes nothing else: another scheme, no space, no credential, two words, text before the scheme, no header', () => {
    for (const header of [
      'Basic abc',
      'Bearerabc',
      'Bearer ',
      'Bearer',
      'Bearer a b',
      'x Bearer abc',
      'Bearer\tabc',
      '',
    ])
      expect(bearerToken(header), header).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});

describe('createTokenVerifier', () => {
  it('names the account and the audience of a valid token, and its purpose only when it is owner or hub', async () => {
    expect(await verifier.verify(`Bearer ${await good()}`)).toEqual({
      account: 'acct-1',
      audience: AUDIENCE,
      token: expect.any(String),
    });
    const owner = await good({ claims: { purpose: 'owner' } });
    expect(await verifier.verify(`Bearer ${owner}`)).toEqual({
      account: 'acct-1',
      audience: AUDIENCE,
      purpose: 'owner',
      token: owner,
    });
    expect((await verifier.verify(`Bearer ${await good({ claims: { purpose: 'hub' } })}`)).purpose).toBe('hub');
    for (const purpose of ['admin', 'Owner', 1, true]) {
      const principal = await verifier.verify(`Bearer ${await good({ claims: { purpose } })}`);
      expect('purpose' in principal, String(purpose)).toBe(false);
    }
    // An audience given as a list of exactly this one is the same audience.
    expect((await verifier.verify(`Bearer ${await good({ audience: [AUDIENCE] })}`)).account).toBe('acct-1');
  });

  it('without a Bearer credential: 401 saying how to send one and for which audience; an invalid_token challenge only when something was sent', async () => {
    const none = await refusal(undefined);
    expect(none.status).toBe(401);
    expect(none.detail).toBe(
      `Send a token from the identity service as "Authorization: Bearer <token>", minted for the audience "${AUDIENCE}".`,
    );
    expect(none.extra.headers).toEqual({ 'WWW-Authenticate': 'Bearer' });
    const basic = await refusal('Basic YWRhOnB3');
    expect(basic.detail).toBe(none.detail);
    expect(basic.extra.headers).toEqual({ 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  });

  it('refuses an expired token, tolerating 30 seconds of clock skew unless told otherwise', async () => {
    expect((await verifier.verify(`Bearer ${await good({ exp: epoch(-20) })}`)).account).toBe('acct-1');
    const expired = await refusal(`Bearer ${await good({ exp: epoch(-40) })}`);
    expect(expired.status).toBe(401);
    expect(expired.detail).toBe('The token has expired; ask the identity service for a new one.');
    expect(expired.extra.headers).toEqual({ 'WWW-Authenticate': 'Bearer error="invalid_token"' });
    const strict = createTokenVerifier({
      identityUrl: ISSUER,
      audience: AUDIENCE,
      keys: { file: keysFile },
      clockToleranceSeconds: 0,
    });
    expect((await refusal(`Bearer ${await good({ exp: epoch(-20) })}`, strict)).detail).toMatch(/has expired/);
  });

  it('refuses a token not valid yet, naming nbf', async () => {
    expect((await refusal(`Bearer ${await good({ nbf: epoch(120) })}`)).detail).toBe(
      'The token is not valid yet (nbf is in the future); check the clock or ask for a new token.',
    );
    expect((await verifier.verify(`Bearer ${await good({ nbf: epoch(10) })}`)).account).toBe('acct-1');
  });

  it('refuses a token for another audience, or for this one and another, naming the audience it takes', async () => {
    expect((await refusal(`Bearer ${await good({ audience: 'persona-store' })}`)).detail).toBe(
      `The token is for another audience; ask the identity service for one minted for "${AUDIENCE}".`,
    );
    expect((await refusal(`Bearer ${await good({ audience: [AUDIENCE, 'persona-store'] })}`)).detail).toBe(
      `The token must be minted for exactly the audience "${AUDIENCE}"; ask the identity service for one.`,
    );
    expect((await refusal(`Bearer ${await good({ audience: [] })}`)).status).toBe(401);
  });

  it('refuses a token from another issuer, naming the issuer it takes (without trailing slashes)', async () => {
    for (const issuer of ['http://127.0.0.1:8002', `${ISSUER}/`])
      expect((await refusal(`Bearer ${await good({ issuer })}`)).detail).toBe(
        `The token was not issued by the identity service at ${ISSUER}; ask that service for one.`,
      );
  });

  it('refuses a token without sub or exp by name, and one whose sub is not an account (empty, not text)', async () => {
    expect((await refusal(`Bearer ${await good({ subject: undefined })}`)).detail).toBe(
      'The token lacks the sub claim; ask the identity service for a new one.',
    );
    expect((await refusal(`Bearer ${await good({ exp: undefined })}`)).detail).toBe(
      'The token lacks the exp claim; ask the identity service for a new one.',
    );
    for (const sub of ['', 42, ['acct-1']])
      expect((await refusal(`Bearer ${await good({ subject: undefined, claims: { sub } })}`)).detail).toBe(
        'The token names no account (sub); ask the identity service for a new one.',
      );
  });

  it('refuses other unacceptable claims in general words', async () => {
    expect((await refusal(`Bearer ${await good({ claims: { iat: 'yesterday' } })}`)).detail).toBe(
      'The token\u2019s claims are not acceptable; ask the identity service for a new one.',
    );
  });

  it('refuses a token signed with a key it does not hold, or with its kid but not its key', async () => {
    expect((await refusal(`Bearer ${await good({ kid: 'made-up' })}`)).detail).toBe(
      'The token was not signed with a key this service holds from the identity service; ask it for a new token.',
    );
    // The same kid, another key: the signature does not verify.
    expect((await refusal(`Bearer ${await good({}, stranger)}`)).detail).toBe(
      'The token is not valid; ask the identity service for a new one.',
    );
    for (const junk of ['not-a-jwt', 'a.b.c'])
      expect((await refusal(`Bearer ${junk}`)).detail).toBe(
        'The token is not valid; ask the identity service for a new one.',
      );
  });

  it('accepts asymmetric algorithms only: an HMAC keyed with anything, and none, are refused', async () => {
    expect(ALLOWED_ALGORITHMS).toEqual(['ES256', 'EdDSA', 'RS256', 'PS256']);
    const hmac = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject('acct-1')
      .setExpirationTime(epoch(300))
      .sign(new TextEncoder().encode('x'.repeat(32)));
    expect((await refusal(`Bearer ${hmac}`)).detail).toBe(
      'The token\u2019s signing algorithm is not accepted; ask the identity service for a new one.',
    );
    const [header, payload] = (await good()).split('.');
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'k1' })).toString('base64url')}.${payload}.`;
    expect(header).toBeTruthy();
    expect((await refusal(`Bearer ${unsigned}`)).status).toBe(401);
  });

  it('accepts each allowed algorithm with a key of its kind in the set', async () => {
    const keys = await Promise.all(ALLOWED_ALGORITHMS.map((alg) => signingKey(`kid-${alg}`, alg)));
    const file = join(ownerOnlyFolder('auth-algs'), 'public-keys.json');
    writeKeySet(
      file,
      keys.map((k) => k.jwk),
    );
    const v = createTokenVerifier({ identityUrl: ISSUER, audience: AUDIENCE, keys: { file } });
    for (const k of keys) expect((await v.verify(`Bearer ${await good({}, k)}`)).account, k.kid).toBe('acct-1');
  });

  it('fails closed with 503 while no key is at hand, saying so without naming where it looks, and says keys are missing', async () => {
    const folder = ownerOnlyFolder('auth-none');
    const v = createTokenVerifier({
      identityUrl: ISSUER,
      audience: AUDIENCE,
      keys: { file: join(folder, 'public-keys.json') },
    });
    expect(await v.keysAvailable()).toBe(false);
    const unavailable = await refusal(`Bearer ${await good()}`, v);
    expect(unavailable.status).toBe(503);
    expect(unavailable.detail).toBe(
      'No token can be checked now: this service does not have the identity service\u2019s keys. Make sure the identity service is running, then try again.',
    );
    expect(v.keySetLoads).toBe(0);
    writeKeySet(join(folder, 'public-keys.json'), [key.jwk]);
    expect(await v.keysAvailable()).toBe(true);
    expect(v.keySetLoads).toBe(1);
  });

  it('waits the key set cooldown it is given before reading an unchanged file again for an unknown kid', async () => {
    const folder = ownerOnlyFolder('auth-cooldown');
    writeKeySet(join(folder, 'public-keys.json'), [key.jwk]);
    const eager = createTokenVerifier({
      identityUrl: ISSUER,
      audience: AUDIENCE,
      keys: { file: join(folder, 'public-keys.json') },
      keySetCooldownMs: 0,
    });
    await eager.verify(`Bearer ${await good()}`);
    expect(eager.keySetLoads).toBe(1);
    await refusal(`Bearer ${await good({ kid: 'made-up' })}`, eager);
    expect(eager.keySetLoads).toBe(2);
  });
});
