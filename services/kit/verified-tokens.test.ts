/**
 * The kit's one verified-token cache, in front of the real verifier and the real identity service:
 * what it remembers, for how long, and within which budget. Counted verifications are the real
 * verifier's, wrapped; the clock is the cache's own option, so nothing waits for a token to expire.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIdentity, type TestIdentity } from '../../test/support/identity.ts';
import { createTokenVerifier, type TokenVerifier } from './auth.ts';
import { rememberVerifiedTokens } from './verified-tokens.ts';

let identity: TestIdentity;
let real: TokenVerifier;
let verifications = 0;
let counted: TokenVerifier;

beforeAll(async () => {
  identity = await startTestIdentity();
  real = createTokenVerifier({ identityUrl: identity.url, audience: 'kit-test', keys: { file: identity.keysFile } });
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
afterAll(() => identity?.close());

const mint = () => identity.mint(identity.localCredential, 'kit-test');
/** Verifications the real verifier did while `run` ran. */
async function verified(run: () => Promise<unknown>): Promise<number> {
  const before = verifications;
  await run();
  return verifications - before;
}

describe('remembered verified tokens', () => {
  it('verifies a token once and answers it from memory until its own exp, then verifies it again', async () => {
    const token = await mint();
    const exp = decodeJwt(token).exp! * 1000;
    let now = Date.now();
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 1 << 20, now: () => now });
    const first = await tokens.verify(`Bearer ${token}`);
    expect(
      await verified(async () => {
        for (let i = 0; i < 20; i++) expect(await tokens.verify(`Bearer ${token}`)).toEqual(first);
      }),
    ).toBe(0);
    now = exp;
    expect(await verified(() => tokens.verify(`Bearer ${token}`))).toBe(1);
  });

  it('keys by the token, not the header: every spelling of the scheme and its spaces is one entry', async () => {
    const token = await mint();
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 1 << 20 });
    expect(
      await verified(async () => {
        for (const header of [`Bearer ${token}`, `bearer ${token}`, `BEARER   ${token}`, ` Bearer ${token} `])
          await tokens.verify(header);
      }),
    ).toBe(1);
    expect(tokens.held.entries).toBe(1);
  });

  it('never remembers a refusal: a token that does not verify is checked, and refused, every time', async () => {
    const token = await mint();
    const broken = `${token.slice(0, -4)}${token.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    expect(broken).not.toBe(token);
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 1 << 20 });
    for (let i = 0; i < 3; i++) {
      expect(
        await verified(() => expect(tokens.verify(`Bearer ${broken}`)).rejects.toMatchObject({ status: 401 })),
      ).toBe(1);
    }
    expect(await verified(() => expect(tokens.verify(undefined)).rejects.toMatchObject({ status: 401 }))).toBe(1);
    expect(tokens.held).toMatchObject({ entries: 0, bytes: 0 });
  });

  it('holds at most its byte budget: the least recently used token goes first, and one let go still verifies', async () => {
    const [a, b, c] = await Promise.all([mint(), mint(), mint()]);
    // Room for two tokens and their entries, not three (the account and the overhead are under 300 bytes).
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 2 * (a!.length + 300) });
    expect(
      await verified(async () => {
        for (const t of [a, b, a, c]) await tokens.verify(`Bearer ${t}`); // c pushes out b, not a (used just before)
      }),
    ).toBe(3);
    expect(tokens.held.entries).toBe(2);
    expect(tokens.held.bytes).toBeLessThanOrEqual(tokens.held.maxBytes);
    expect(await verified(() => tokens.verify(`Bearer ${a}`))).toBe(0);
    expect((await tokens.verify(`Bearer ${b}`)).account).toBe((await real.verify(`Bearer ${a}`)).account);
    expect(tokens.held.bytes).toBeLessThanOrEqual(tokens.held.maxBytes);
  });

  it('remembers none with a budget of 0 or one smaller than a token, and still answers', async () => {
    const token = await mint();
    for (const maxBytes of [0, 100]) {
      const tokens = rememberVerifiedTokens(counted, { maxBytes });
      expect(
        await verified(async () => {
          await tokens.verify(`Bearer ${token}`);
          await tokens.verify(`Bearer ${token}`);
        }),
      ).toBe(2);
      expect(tokens.held).toEqual({ entries: 0, bytes: 0, maxBytes });
    }
  });

  it('passes the key set questions through to the verifier it wraps', async () => {
    const tokens = rememberVerifiedTokens(counted, { maxBytes: 1 << 20 });
    expect(await tokens.keysAvailable()).toBe(true);
    expect(tokens.keySetLoads).toBe(real.keySetLoads);
  });
});
