/**
 * How a service trusts identity (identity-trust.ts), rule by rule, in this process: which settings apply,
 * each refusal in its words, the socket path's length. identity-trust.test.ts does the same against a real
 * identity, a real impostor and a real service process.
 */
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVICE_CATALOGUE, IDENTITY_PLACES } from '../../common/services.ts';
import { appDataDir, ConfigError } from './config.ts';
import { identityTrustSettings, trustIdentity, type IdentityTrustValues } from './identity-trust.ts';

const places = { identity: SERVICE_CATALOGUE.identity, ...IDENTITY_PLACES };
const trust = (values: IdentityTrustValues) => trustIdentity('DEMO_', values, places);
const A = 'a'.repeat(43);
const B = `${'-_'.repeat(21)}Z`;
const folder = join(appDataDir(), 'identity');

function refusal(values: IdentityTrustValues): string {
  try {
    trust(values);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('not refused');
}

describe('trustIdentity', () => {
  it('on this machine with nothing set: the keys file and the socket in identity\u2019s default data folder', () => {
    for (const url of ['http://127.0.0.1:8001', 'http://localhost:9001', 'http://[::1]:8001']) {
      const t = trust({ identityUrl: url });
      expect(t.keys).toEqual({ file: join(folder, 'public-keys.json') });
      expect(t.channel.where).toBe(`its socket ${join(folder, 'identity.sock')}`);
      expect(t.channel.url).toBe(url);
    }
  });

  it('a keys file, made absolute, brings the socket beside it unless the socket is set, which is made absolute too', () => {
    const t = trust({ identityUrl: 'http://127.0.0.1:9001', identityKeysFile: 'rel/keys.json' });
    expect(t.keys).toEqual({ file: resolve('rel/keys.json') });
    expect(t.channel.where).toBe(`its socket ${resolve('rel/identity.sock')}`);
    const both = trust({
      identityUrl: 'http://127.0.0.1:9001',
      identityKeysFile: '/srv/id/k.json',
      identitySocket: 'id.sock',
    });
    expect(both.channel.where).toBe(`its socket ${resolve('id.sock')}`);
    // Elsewhere, a keys file kept on this machine is enough for the keys; the calls go over https.
    const far = trust({ identityUrl: 'https://id.example.com', identityKeysFile: '/srv/id/k.json' });
    expect(far.keys).toEqual({ file: '/srv/id/k.json' });
    expect(far.channel.where).toBe('https://id.example.com');
  });

  it('pinned thumbprints: only the pinned keys of the set published under the URL, on this machine too', () => {
    const t = trust({ identityUrl: 'https://id.example.com/identity', identityKeyThumbprints: [A, B] });
    expect(t.keys).toEqual({ jwksUrl: 'https://id.example.com/identity/.well-known/jwks.json', thumbprints: [A, B] });
    expect(t.channel.where).toBe('https://id.example.com/identity');
    const here = trust({ identityUrl: 'http://127.0.0.1:8001', identityKeyThumbprints: [A] });
    expect(here.keys).toEqual({ jwksUrl: 'http://127.0.0.1:8001/.well-known/jwks.json', thumbprints: [A] });
    expect(here.channel.where).toBe(`its socket ${join(folder, 'identity.sock')}`);
    const socket = trust({
      identityUrl: 'http://id.example.com',
      identityKeyThumbprints: [A],
      identitySocket: '/run/id.sock',
    });
    expect(socket.channel.where).toBe('its socket /run/id.sock');
  });

  it('refuses both a keys file and thumbprints', () => {
    expect(
      refusal({ identityUrl: 'http://127.0.0.1:8001', identityKeysFile: '/k.json', identityKeyThumbprints: [A] }),
    ).toBe(
      "Set one of DEMO_IDENTITY_KEYS_FILE and DEMO_IDENTITY_KEY_THUMBPRINTS, not both: the keys come from the file, or from the identity service's published set filtered by the thumbprints.",
    );
  });

  it('refuses an identity elsewhere whose keys are not named', () => {
    expect(refusal({ identityUrl: 'https://id.example.com' })).toBe(
      'DEMO_IDENTITY_URL names an identity service elsewhere (https://id.example.com), and this service never takes keys from whatever answers there. ' +
        'Say which keys it signs with: DEMO_IDENTITY_KEY_THUMBPRINTS (their SHA-256 thumbprints; `npm run identity -- keys list` prints them where it runs) or DEMO_IDENTITY_KEYS_FILE (its public key set, kept on this machine).',
    );
  });

  it('refuses plain http to another machine without a socket', () => {
    expect(refusal({ identityUrl: 'http://id.example.com', identityKeyThumbprints: [A] })).toBe(
      'DEMO_IDENTITY_URL is plain http to another machine (http://id.example.com): nothing proves who answers there, and this service sends it tokens and its own secrets. ' +
        'Use an https:// URL, or set DEMO_IDENTITY_SOCKET to the identity service\u2019s socket.'.replace(
          '\u2019',
          "'",
        ),
    );
  });

  it('refuses a socket path longer than the system takes (103 bytes), counting bytes, not characters', () => {
    const at = (bytes: number, char = 's') => `/${char.repeat(bytes - '/identity.sock'.length - 1)}/identity.sock`;
    expect(Buffer.byteLength(at(103))).toBe(103);
    expect(trust({ identityUrl: 'http://127.0.0.1:8001', identitySocket: at(103) }).channel.where).toBe(
      `its socket ${at(103)}`,
    );
    expect(refusal({ identityUrl: 'http://127.0.0.1:8001', identitySocket: at(104) })).toBe(
      `The identity service's socket ${at(104)} is 104 bytes long; the system takes at most 103. ` +
        'Give identity a shorter data folder (IDENTITY_DATA_DIR, or --data-dir) and DEMO_IDENTITY_SOCKET with it.',
    );
    // Two bytes a character: 89 characters of é are 178 bytes.
    const wide = `/${'\u00e9'.repeat(45)}/identity.sock`;
    expect(refusal({ identityUrl: 'http://127.0.0.1:8001', identitySocket: wide })).toMatch(/is 105 bytes long/);
  });

  it('on Windows, takes the pipe file\u2019s path as it is: no socket length applies', () => {
    const platform = Object.getOwnPropertyDescriptor(process, 'platform')!;
    Object.defineProperty(process, 'platform', { ...platform, value: 'win32' });
    try {
      const long = `/${'s'.repeat(200)}/identity.sock`;
      expect(trust({ identityUrl: 'http://127.0.0.1:8001', identitySocket: long }).channel.where).toBe(
        `its socket ${long}`,
      );
    } finally {
      Object.defineProperty(process, 'platform', platform);
    }
  });
});

describe('identityTrustSettings', () => {
  const settings = identityTrustSettings({ port: 8001 }, 'Where identity is.');

  it('names each setting, with identity\u2019s URL on its port by default and no other default', () => {
    expect(Object.fromEntries(Object.entries(settings).map(([k, s]) => [k, [s.name, s.fallback]]))).toEqual({
      identityUrl: ['IDENTITY_URL', 'http://127.0.0.1:8001'],
      identityKeysFile: ['IDENTITY_KEYS_FILE', undefined],
      identityKeyThumbprints: ['IDENTITY_KEY_THUMBPRINTS', undefined],
      identitySocket: ['IDENTITY_SOCKET', undefined],
    });
    expect(settings.identityUrl.description).toBe('Where identity is.');
  });

  it('says in its help text where each comes from by default and what it replaces', () => {
    expect(settings.identityKeysFile.description).toMatch(/\(a JWK set\).*\(public-keys\.json\).*Default: that file/);
    expect(settings.identityKeyThumbprints.description).toMatch(
      /thumbprints \(RFC 7638\).*Instead of IDENTITY_KEYS_FILE\.$/,
    );
    expect(settings.identitySocket.description).toMatch(
      /\(identity\.sock;.*Default: beside the keys file.*https:\/\/ IDENTITY_URL needs none\.$/,
    );
  });

  it('takes text for the keys file and the socket, and a list of thumbprints: at least one, each 43 base64url characters', () => {
    expect(settings.identityKeysFile.schema.parse('/k.json')).toBe('/k.json');
    expect(settings.identitySocket.schema.parse('/s.sock')).toBe('/s.sock');
    expect(settings.identityKeyThumbprints.schema.parse(`${A}, ${B}`)).toEqual([A, B]);
    const why = (text: string) => {
      const r = settings.identityKeyThumbprints.schema.safeParse(text);
      expect(r.success, text).toBe(false);
      return r.error!.issues.map((i) => i.message).join('; ');
    };
    expect(why(`${A}, sha256:abc`)).toBe(
      'must be comma-separated SHA-256 JWK thumbprints (RFC 7638), 43 base64url characters each',
    );
    expect(why('')).toMatch(/name at least one thumbprint/);
    expect(why(' , ')).toMatch(/name at least one thumbprint/);
  });
});
