/**
 * The verified-token cache's rules one at a time, in front of the kit's real verifier and real keys: the
 * byte budget to the byte, expiry to the millisecond (the cache's own clock option), what is never kept.
 * Tokens are signed here in any size (a claim pads them), which identity would not mint.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { jwtVerify } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  epoch,
  ownerOnlyFolder,
  sign,
  signingKey,
  writeKeySet,
  type SigningKey,
} from '../../test/support/signing-keys.ts';
import { createTokenVerifier, type TokenVerifier } from './auth.ts';
import { DEFAULT_VERIFIED_TOKENS_BYTES, rememberVerifiedTokens } from './verified-tokens.ts';

const ISSUER = 'http://127.0.0.1:8001';
const AUDIENCE = 'kit-test';
/** What one remembered token costs besides its characters and its account (verified-tokens.ts). */
const OVERHEAD = 200;

let key: SigningKey;
let keysFile: string;
let real: TokenVerifier;
let verifications = 0;
/** The real verifier, counted. */
let counted: TokenVerifier;

beforeAll(async () => {
  key = await signingKey('k1');
  keysFile = join(ownerOnlyFolder('verified-tokens'), 'public-keys.json');
  writeKeySet(keysFile, [key.jwk]);
  real = createTokenVerifier({ identityUrl: ISSUER, audience: AUDIENCE, keys: { file: keysFile } });
  counted = {
    verify: (authorization) => {
      verifications += 1;
      return real.verify(authorization);
    },
    keysAvailable: () => real.keysAvailable(),
    get keySetLoads() {
      return real.keySetLoads;
    },
  };
});

let serial = 0;
/**
 * A valid token of about `length` characters (padded with a claim) for account `sub`: tokens asked for with
 * the same length are exactly as long as each other (the serial that tells them apart has a fixed width).
 */
async function tokenOf(length: number, sub = 'acct', exp = epoch(600)): Promise<string> {
  const shape = (pad: number) => ({
    issuer: ISSUER,
    audience: AUDIENCE,
    subject: sub,
    exp,
    claims: { n: String((serial += 1)).padStart(6, '0'), pad: 'x'.repeat(pad), iat: 1_700_000_000 },
  });
  const base = await sign(key, shape(0));
  return sign(key, shape(Math.max(0, Math.floor(((length - base.length) * 3) / 4))));
}

/** What a token costs in the budget: its characters, its account, the overhead. */
const cost = (token: string, sub = 'acct') => token.length + sub.length + OVERHEAD;

async function verified(run: () => Promise<unknown>): Promise<number> {
  const before = verifications;
  await run();
  return verifications - before;
}

describe('the budget of remembered tokens', () => {
  it('is about a thousand tokens by default (1 MiB)', () => {
    expect(DEFAULT_VERIFIED_TOKENS_BYTES).toBe(1024 * 1024);
  });

  it('counts each token as its characters, its account and a fixed overhead', async () => {
    const token = await tokenOf(400, 'someone');
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 10_000 });
    await tokens.verify(`Bearer ${token}`);
    expect(tokens.held).toEqual({ entries: 1, bytes: token.length + 'someone'.length + OVERHEAD, maxBytes: 10_000 });
  });

  it('keeps a token that takes the whole budget to the byte, and no token one byte over it', async () => {
    const token = await tokenOf(400);
    const exact = rememberVerifiedTokens(counted, { maxBytes: cost(token) });
    expect(await verified(() => exact.verify(`Bearer ${token}`))).toBe(1);
    expect(exact.held).toMatchObject({ entries: 1, bytes: cost(token) });
    expect(await verified(() => exact.verify(`Bearer ${token}`))).toBe(0);
    const short = rememberVerifiedTokens(counted, { maxBytes: cost(token) - 1 });
    await short.verify(`Bearer ${token}`);
    expect(short.held).toMatchObject({ entries: 0, bytes: 0 });
  });

  it('keeps two tokens that fill the budget to the byte; a third lets go of the least recently used only', async () => {
    const [a, b, c] = [await tokenOf(400), await tokenOf(400), await tokenOf(400)];
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 2 * cost(a) });
    await tokens.verify(`Bearer ${a}`);
    await tokens.verify(`Bearer ${b}`);
    expect(tokens.held).toMatchObject({ entries: 2, bytes: 2 * cost(a) });
    await tokens.verify(`Bearer ${a}`); // a is now the most recently used
    await tokens.verify(`Bearer ${c}`);
    expect(tokens.held).toMatchObject({ entries: 2, bytes: 2 * cost(a) });
    expect(await verified(() => tokens.verify(`Bearer ${a}`))).toBe(0);
    expect(await verified(() => tokens.verify(`Bearer ${c}`))).toBe(0);
    expect(await verified(() => tokens.verify(`Bearer ${b}`))).toBe(1);
  });

  it('lets go of as many old tokens as a larger newcomer needs, and no more', async () => {
    const small = [await tokenOf(300), await tokenOf(300), await tokenOf(300)];
    const big = await tokenOf(500);
    // Room for the three small ones; the big one needs the room of two of them.
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 3 * cost(small[0]!) });
    for (const t of small) await tokens.verify(`Bearer ${t}`);
    expect(tokens.held.entries).toBe(3);
    await tokens.verify(`Bearer ${big}`);
    expect(tokens.held).toMatchObject({ entries: 2, bytes: cost(small[2]!) + cost(big) });
    expect(await verified(() => tokens.verify(`Bearer ${small[2]}`))).toBe(0);
    expect(await verified(() => tokens.verify(`Bearer ${big}`))).toBe(0);
  });

  it('a token larger than the whole budget is not kept and does not empty the cache', async () => {
    const kept = [await tokenOf(300), await tokenOf(300)];
    const huge = await tokenOf(1_000);
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 2 * cost(kept[0]!) });
    for (const t of kept) await tokens.verify(`Bearer ${t}`);
    expect((await tokens.verify(`Bearer ${huge}`)).account).toBe('acct');
    expect(tokens.held).toMatchObject({ entries: 2, bytes: 2 * cost(kept[0]!) });
    expect(await verified(() => Promise.all(kept.map((t) => tokens.verify(`Bearer ${t}`))))).toBe(0);
  });

  it('a token verified twice at once is kept once and counted once', async () => {
    const token = await tokenOf(400);
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 10_000 });
    const [first, second] = await Promise.all([tokens.verify(`Bearer ${token}`), tokens.verify(`bearer ${token}`)]);
    expect(first).toEqual(second);
    expect(tokens.held).toEqual({ entries: 1, bytes: cost(token), maxBytes: 10_000 });
  });
});

describe('how long a token is remembered', () => {
  it('until the millisecond its exp names, then verified again (and kept again while valid)', async () => {
    const exp = epoch(600);
    const token = await tokenOf(400, 'acct', exp);
    let now = exp * 1000 - 1;
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 10_000, now: () => now });
    expect(await verified(() => tokens.verify(`Bearer ${token}`))).toBe(1);
    expect(await verified(() => tokens.verify(`Bearer ${token}`))).toBe(0);
    now = exp * 1000;
    expect(await verified(() => tokens.verify(`Bearer ${token}`))).toBe(1);
    // Re-verified: one entry, counted once.
    expect(tokens.held).toMatchObject({ entries: 1, bytes: cost(token) });
  });

  it('lets go of an expired entry even when verifying it again fails', async () => {
    const exp = epoch(600);
    const token = await tokenOf(400, 'acct', exp);
    const folder = ownerOnlyFolder('verified-gone');
    const file = join(folder, 'public-keys.json');
    writeKeySet(file, [key.jwk]);
    const verifier = createTokenVerifier({ identityUrl: ISSUER, audience: AUDIENCE, keys: { file } });
    let now = Date.now();
    const tokens = rememberVerifiedTokens(verifier, { maxBytes: 10_000, now: () => now });
    await tokens.verify(`Bearer ${token}`);
    expect(tokens.held.entries).toBe(1);
    rmSync(file);
    now = exp * 1000;
    await expect(tokens.verify(`Bearer ${token}`)).rejects.toMatchObject({ status: 503 });
    expect(tokens.held).toMatchObject({ entries: 0, bytes: 0 });
  });

  it('never keeps a token whose verifier accepts it without exp: nothing says until when', async () => {
    // Another TokenVerifier, one that does not require exp (the kit's own always does).
    const lenient: TokenVerifier = {
      async verify(authorization) {
        const token = authorization!.slice('Bearer '.length);
        const { payload } = await jwtVerify(token, async () => (await import('jose')).importJWK(key.jwk, 'ES256'));
        return { account: payload.sub!, audience: AUDIENCE, token };
      },
      keysAvailable: async () => true,
      keySetLoads: 0,
    };
    const timeless = await sign(key, { issuer: ISSUER, audience: AUDIENCE, subject: 'acct' });
    const tokens = rememberVerifiedTokens(lenient, { maxBytes: 10_000 });
    expect((await tokens.verify(`Bearer ${timeless}`)).account).toBe('acct');
    expect(tokens.held).toMatchObject({ entries: 0, bytes: 0 });
  });

  it('answers a remembered token with the principal it was verified as', async () => {
    const token = await tokenOf(400, 'someone');
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 10_000 });
    const first = await tokens.verify(`Bearer ${token}`);
    expect(first).toEqual({ account: 'someone', audience: AUDIENCE, token });
    expect(await tokens.verify(`Bearer ${token}`)).toBe(first);
  });

  it('passes a header without a token to the verifier, which refuses it', async () => {
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 10_000 });
    for (const header of [undefined, 'Basic abc', 'Bearer'])
      expect(await verified(() => expect(tokens.verify(header)).rejects.toMatchObject({ status: 401 }))).toBe(1);
    expect(tokens.held).toEqual({ entries: 0, bytes: 0, maxBytes: 10_000 });
  });

  it('passes the key questions to the verifier it wraps', async () => {
    const folder = ownerOnlyFolder('verified-keys');
    const verifier = createTokenVerifier({
      identityUrl: ISSUER,
      audience: AUDIENCE,
      keys: { file: join(folder, 'public-keys.json') },
    });
    const tokens = rememberVerifiedTokens(verifier, { maxBytes: 10_000 });
    expect(await tokens.keysAvailable()).toBe(false);
    expect(tokens.keySetLoads).toBe(0);
    writeKeySet(join(folder, 'public-keys.json'), [key.jwk]);
    expect(await tokens.keysAvailable()).toBe(true);
    expect(tokens.keySetLoads).toBe(1);
  });
});
