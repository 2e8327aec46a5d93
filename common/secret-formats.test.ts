import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  appSecretIn,
  randomPartPattern,
  randomPartsIn,
  SECRET_FORMATS,
  SECRET_PREFIXES,
  secretPattern,
  type SecretFormat,
} from './secret-formats.ts';

/**
 * The list of this app's secret formats and the patterns made from it, rule by rule. The issuers'
 * own secrets are checked against the list in test/app-secrets.test.ts; here each pattern's bounds.
 */
const { sessionCredential, signalSecret, gatewayServiceToken, consoleSecret } = SECRET_FORMATS;

/** A random part of `format`, as its issuer makes it. */
const part = (format: SecretFormat) => randomBytes(format.bytes).toString(format.encoding);

describe('the formats', () => {
  it('lists each secret the app issues with its prefix, size and encoding', () => {
    expect(SECRET_FORMATS).toEqual({
      sessionCredential: {
        kind: 'a session credential of this app\u2019s identity service',
        prefix: 'hubs_',
        bytes: 32,
        encoding: 'base64url',
      },
      signalSecret: {
        kind: 'a signal secret of this app\u2019s repository gateway',
        prefix: 'whsec_',
        bytes: 24,
        encoding: 'base64',
      },
      gatewayServiceToken: {
        kind: 'the service token of this app\u2019s repository gateway',
        prefix: 'hubsvc_',
        bytes: 32,
        encoding: 'base64url',
      },
      consoleSecret: { kind: 'the console secret of this app', prefix: 'hubcon_', bytes: 32, encoding: 'base64url' },
    });
    expect(SECRET_PREFIXES).toEqual(['hubs_', 'whsec_', 'hubsvc_', 'hubcon_']);
  });
});

describe('secretPattern', () => {
  it('finds a format\u2019s secret anywhere in a text, exactly as long as the format makes it', () => {
    const secret = `hubs_${'A'.repeat(43)}`;
    expect(secretPattern(sessionCredential).test(`HUB_SESSION_CREDENTIAL=${secret}\n`)).toBe(true);
    expect(secretPattern(sessionCredential).test(`hubs_${'A'.repeat(42)}`)).toBe(false);
    expect(secretPattern(sessionCredential).test(`hubs_${'-_aZ09'.repeat(7)}a`)).toBe(true);
    expect(secretPattern(sessionCredential).test(`hubs_${'A'.repeat(42)}+`)).toBe(false);
    expect(secretPattern(sessionCredential).test(`HUBS_${'A'.repeat(43)}`)).toBe(false);
    // base64: 24 bytes are 32 characters, no padding; + and / are its own.
    expect(secretPattern(signalSecret).test(`whsec_${'+/aZ09'.repeat(5)}ab`)).toBe(true);
    expect(secretPattern(signalSecret).test(`whsec_${'A'.repeat(31)}`)).toBe(false);
    expect(secretPattern(signalSecret).test(`whsec_${'A'.repeat(31)}-`)).toBe(false);
    for (let i = 0; i < 20; i++)
      for (const format of Object.values(SECRET_FORMATS))
        expect(new RegExp(`^${secretPattern(format).source}$`).test(`${format.prefix}${part(format)}`)).toBe(true);
  });

  it('pads base64 as the encoding does: one "=" for two bytes over a multiple of three, two for one', () => {
    const two: SecretFormat = { kind: 'k', prefix: 'p_', bytes: 32, encoding: 'base64' };
    const one: SecretFormat = { kind: 'k', prefix: 'p_', bytes: 31, encoding: 'base64' };
    for (const [format, body] of [
      [two, `${'A'.repeat(43)}=`],
      [one, `${'A'.repeat(42)}==`],
    ] as const) {
      const exact = new RegExp(`^${secretPattern(format).source}$`);
      expect(exact.test(`p_${body}`)).toBe(true);
      expect(exact.test(`p_${randomBytes(format.bytes).toString('base64')}`)).toBe(true);
      expect(exact.test(`p_${body.replace(/=+$/, '')}`)).toBe(false);
      expect(exact.test(`p_A${body}`)).toBe(false);
    }
    // base64url has no padding: 31 bytes are 42 characters.
    const url: SecretFormat = { kind: 'k', prefix: 'p_', bytes: 31, encoding: 'base64url' };
    expect(new RegExp(`^${secretPattern(url).source}$`).test(`p_${'A'.repeat(42)}`)).toBe(true);
    expect(new RegExp(`^${secretPattern(url).source}$`).test(`p_${'A'.repeat(41)}`)).toBe(false);
  });

  it('takes a prefix literally, whatever characters it holds', () => {
    const odd: SecretFormat = { kind: 'k', prefix: 'a.b*c+?^${}()|[]\\_', bytes: 3, encoding: 'base64url' };
    expect(secretPattern(odd).test('a.b*c+?^${}()|[]\\_AAAA')).toBe(true);
    expect(secretPattern(odd).test('aXb*c+?^${}()|[]\\_AAAA')).toBe(false);
    expect(secretPattern(odd).test('a.bbbc+?^${}()|[]\\_AAAA')).toBe(false);
  });
});

describe('appSecretIn', () => {
  it('names the format of the first of this app\u2019s secrets a text holds, and nothing for a text without one', () => {
    expect(appSecretIn(`token: hubsvc_${part(gatewayServiceToken)}`)).toBe(gatewayServiceToken);
    expect(appSecretIn(`hubcon_${part(consoleSecret)}`)).toBe(consoleSecret);
    expect(appSecretIn(`whsec_${part(signalSecret)}`)).toBe(signalSecret);
    expect(appSecretIn(`"hubs_${part(sessionCredential)}"`)).toBe(sessionCredential);
    expect(appSecretIn(`hubs_ ${part(sessionCredential)}`)).toBeUndefined();
    expect(appSecretIn('an ordinary sentence about hubs_ and whsec_')).toBeUndefined();
  });
});

describe('randomPartPattern and randomPartsIn', () => {
  const body = 'aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9q'; // 43 base64url characters
  it('finds a random part bare, or behind up to three words ending in _ or -, and nothing longer or behind more', () => {
    expect(body).toHaveLength(43);
    const pattern = randomPartPattern(sessionCredential);
    for (const run of [
      body,
      `HUBS_${body}`,
      `hubs-${body}`,
      `my_hubs_${body}`,
      `a_b_c-${body}`,
      `Abcdefghijkl_${body}`,
      `a1_${body}`,
    ])
      expect(pattern.exec(run)?.[1], run).toBe(body);
    for (const run of [
      `a_b_c_d_${body}`,
      `Abcdefghijklm_${body}`,
      `1a_${body}`,
      `_${body}`,
      `${body}A`,
      `${body.slice(1)}`,
      `x${body}`,
      `hubs.${body}`,
    ])
      expect(pattern.exec(run), run).toBeNull();
  });

  it('yields each random part in a text once, whichever formats share its size and encoding', () => {
    expect([...randomPartsIn(`the credential is ${body}, keep it`)]).toEqual([body]);
    expect([...randomPartsIn(`HUB_SESSION_CREDENTIAL=my_hubs_${body}`)]).toEqual([body]);
    const signal = 'aB3dE5gH7jK9mN1p+3sT5vW7yZ9b/1eF'; // 32 base64 characters
    expect([...randomPartsIn(`secret: ${signal} and ${body}`)]).toEqual([signal, body]);
  });

  it('reads runs of token characters at least as long as the shortest part, a "=" ending one', () => {
    const signal = 'aB3dE5gH7jK9mN1p+3sT5vW7yZ9b/1eF';
    // What a "=" ends is taken with it (a NAME=, or padding this 24-byte part never has); what follows is read anew.
    expect([...randomPartsIn(`${signal}=${body}`)]).toEqual([body]);
    expect([...randomPartsIn(`${signal} ${body}`)]).toEqual([signal, body]);
    expect([...randomPartsIn(`${signal}==`)]).toEqual([]);
    // Inside a longer run (a base64 image, say), neither is one.
    expect([...randomPartsIn(`${body}${body}`)]).toEqual([]);
    expect([...randomPartsIn(`${signal.slice(1)} ${body.slice(2)}`)]).toEqual([]);
    expect([...randomPartsIn('')]).toEqual([]);
    expect([...randomPartsIn(`.${body}.`)]).toEqual([body]);
  });
});
