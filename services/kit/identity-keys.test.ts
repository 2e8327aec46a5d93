/**
 * Where a service gets identity's keys (identity-keys.ts), rule by rule: the keys file identity writes
 * into its own data folder, and the pinned keys of an identity elsewhere, fetched from a real HTTP server
 * that publishes what each test needs. Tokens are signed with real keys and checked by jose as the kit's
 * verifier checks them.
 */
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { calculateJwkThumbprint, errors, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  epoch,
  ownerOnlyFolder,
  sign,
  signingKey,
  writeKeySet,
  type SigningKey,
} from '../../test/support/signing-keys.ts';
import { keySource, KeysUnavailable, THUMBPRINT, type KeySource } from './identity-keys.ts';

const ISSUER = 'http://127.0.0.1:8001';
let key: SigningKey;
let other: SigningKey;

beforeAll(async () => {
  key = await signingKey('k1');
  other = await signingKey('k2');
});

const token = (k = key, kid?: string) =>
  sign(k, { issuer: ISSUER, audience: 'kit-test', subject: 'a', exp: epoch(300), kid });
/** The payload of `jwt` as `source` verifies it, or the error it refuses it with. */
async function check(source: KeySource, jwt: string): Promise<unknown> {
  try {
    return (await jwtVerify(jwt, source.resolve)).payload.sub;
  } catch (err) {
    return err;
  }
}

describe('the keys file identity writes', () => {
  it('verifies a token signed by a key in the file, reading the file once while it is unchanged', async () => {
    const file = join(ownerOnlyFolder('keys-file'), 'public-keys.json');
    writeKeySet(file, [key.jwk, other.jwk]);
    const source = keySource({ file });
    expect(source.where).toBe(`the identity service's keys file ${file}`);
    expect(await source.available()).toBe(true);
    expect(await check(source, await token())).toBe('a');
    expect(await check(source, await token(other))).toBe('a');
    expect(source.loads).toBe(1);
  });

  it('reads a file rewritten in place, of the same size, again at once: its times tell, to the nanosecond', async () => {
    const file = join(ownerOnlyFolder('keys-in-place'), 'public-keys.json');
    writeKeySet(file, [key.jwk]);
    const source = keySource({ file }, { cooldownMs: 600_000 });
    expect(await check(source, await token())).toBe('a');
    const before = JSON.stringify({ keys: [key.jwk] });
    const after = JSON.stringify({ keys: [other.jwk] });
    expect(after.length).toBe(before.length);
    writeFileSync(file, after);
    expect(await check(source, await token(other))).toBe('a');
    expect(source.loads).toBe(2);
    // Asking whether keys are at hand reads nothing again while the file is unchanged.
    expect(await source.available()).toBe(true);
    expect(await source.available()).toBe(true);
    expect(source.loads).toBe(2);
  });

  it('reads the file again at once when identity rewrites it, and lets go of a key it removed', async () => {
    const file = join(ownerOnlyFolder('keys-rotate'), 'public-keys.json');
    writeKeySet(file, [key.jwk]);
    const source = keySource({ file }, { cooldownMs: 600_000 });
    expect(await check(source, await token())).toBe('a');
    writeKeySet(file, [other.jwk]);
    expect(await check(source, await token(other))).toBe('a');
    expect(await check(source, await token())).toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect(source.loads).toBe(2);
  });

  it('says why no key is at hand, failing closed: no file, a file that is not a key set, one with no public key', async () => {
    const folder = ownerOnlyFolder('keys-why');
    const file = join(folder, 'public-keys.json');
    const source = keySource({ file });
    const why = async () => {
      const err = await check(source, await token());
      expect(err).toBeInstanceOf(KeysUnavailable);
      expect(await source.available()).toBe(false);
      return (err as Error).message;
    };
    expect(await why()).toBe(`there is no keys file at ${file} (the identity service writes it when it starts)`);
    expect(new KeysUnavailable('x').name).toBe('KeysUnavailable');
    expect(source.loads).toBe(0);
    for (const [content, message] of [
      ['{not json', `${file} is not a JSON Web Key Set`],
      ['null', `${file} holds no public key`],
      ['{"keys":"k1"}', `${file} holds no public key`],
      ['{"keys":[]}', `${file} holds no public key`],
      // Private keys are never handed to a verifier, nor members that are not keys at all.
      [
        JSON.stringify({ keys: [{ ...key.jwk, d: 'private' }, null, 'k1', { kid: 'k1' }, { kty: 1 }] }),
        `${file} holds no public key`,
      ],
      [JSON.stringify({ keys: [{ kty: 'EC', kid: 'k1' }] }), undefined],
    ] as const) {
      writeFileSync(file, content);
      if (message !== undefined) expect(await why(), content).toBe(message);
      else expect(await check(source, await token())).not.toBeInstanceOf(KeysUnavailable);
    }
    writeKeySet(file, [{ ...other.jwk, d: 'private' }, key.jwk]);
    expect(await check(source, await token())).toBe('a');
    // The file goes: no key at hand; it comes back unchanged: read again.
    rmSync(file);
    expect(await why()).toMatch(/^there is no keys file at/);
    writeKeySet(file, [key.jwk]);
    expect(await check(source, await token())).toBe('a');
  });

  const windows = process.platform === 'win32';
  it.skipIf(windows)(
    `never trusts a file in a folder others may write, nor a symbolic link${windows ? ' (skipped: Windows has no such modes)' : ''}`,
    async () => {
      const folder = ownerOnlyFolder('keys-open');
      const file = join(folder, 'public-keys.json');
      writeKeySet(file, [key.jwk]);
      chmodSync(folder, 0o777);
      const source = keySource({ file });
      const err = await check(source, await token());
      expect(err).toBeInstanceOf(KeysUnavailable);
      expect((err as Error).message).toMatch(/is not yours alone/);
      expect(source.loads).toBe(1);
      const linked = join(ownerOnlyFolder('keys-link'), 'public-keys.json');
      symlinkSync(file, linked);
      chmodSync(folder, 0o700);
      expect(await check(keySource({ file: linked }), await token())).toMatchObject({
        message: `${linked} is a symbolic link, not identity's keys file`,
      });
    },
  );

  it('reads an unchanged file again for an unknown key id only once the cooldown has passed, and never for a known one', async () => {
    const file = join(ownerOnlyFolder('keys-cooldown'), 'public-keys.json');
    writeKeySet(file, [key.jwk]);
    let now = 1_000_000;
    const source = keySource({ file }, { cooldownMs: 5_000, now: () => now });
    expect(await check(source, await token())).toBe('a');
    expect(source.loads).toBe(1);
    const unknown = await token(key, 'made-up');
    now += 4_999;
    expect(await check(source, unknown)).toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect(source.loads).toBe(1);
    now += 1;
    expect(await check(source, unknown)).toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect(source.loads).toBe(2);
    // A known kid, or none at all, never reads it again, however long it has been.
    now += 60_000;
    expect(await check(source, await token())).toBe('a');
    // A header without kid (its signature no longer matches, which is beside the point here).
    const kidless = (await token()).replace(/^[^.]+/, Buffer.from('{"alg":"ES256"}').toString('base64url'));
    expect(await check(source, kidless)).toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    expect(source.loads).toBe(2);
  });

  it('the default cooldown is 5 seconds', async () => {
    const file = join(ownerOnlyFolder('keys-default'), 'public-keys.json');
    writeKeySet(file, [key.jwk]);
    let now = 1_000_000;
    const source = keySource({ file }, { now: () => now });
    await check(source, await token());
    const unknown = await token(key, 'made-up');
    now += 4_999;
    await check(source, unknown);
    expect(source.loads).toBe(1);
    now += 1;
    await check(source, unknown);
    expect(source.loads).toBe(2);
  });
});

describe('the pinned keys of an identity elsewhere', () => {
  let server: Server;
  let base: string;
  let pinnedThumbprint: string;
  /** What the server answers next, per path. */
  const answers = new Map<string, (res: ServerResponse) => void>();
  const fetched: string[] = [];

  beforeAll(async () => {
    pinnedThumbprint = await calculateJwkThumbprint(key.jwk, 'sha256');
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      fetched.push(req.url!);
      const answer = answers.get(req.url!);
      if (answer) answer(res);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  let serial = 0;
  /** A path that publishes `body` (JSON unless a string) with `status`. */
  function publish(body: unknown, status = 200): string {
    const path = `/set-${(serial += 1)}/jwks.json`;
    answers.set(path, (res) =>
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(typeof body === 'string' ? body : JSON.stringify(body)),
    );
    return path;
  }
  const count = (path: string) => fetched.filter((p) => p === path).length;

  it('keeps only the published keys whose thumbprint is pinned, fetching the set once while it is fresh', async () => {
    const path = publish({ keys: [other.jwk, key.jwk] });
    const source = keySource({ jwksUrl: `${base}${path}`, thumbprints: [pinnedThumbprint] });
    expect(source.where).toBe(`the pinned keys of the identity service at ${base}${path}`);
    // Asked first, it fetches the set to answer.
    expect(await source.available()).toBe(true);
    expect(await check(source, await token())).toBe('a');
    expect(await check(source, await token(other))).toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect(await source.available()).toBe(true);
    expect(await check(source, await token())).toBe('a');
    expect(source.loads).toBe(1);
    expect(count(path)).toBe(1);
  });

  it('keeps no private key, nothing that is not a key, and nothing whose thumbprint cannot be computed', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const privateJwk = { ...(await exportJWK(privateKey)), kid: 'k1' };
    // The private JWK's thumbprint is its public key's: pinned, yet refused for holding `d`.
    const path = publish({ keys: [privateJwk, null, 'k1', { kty: 'EC', kid: 'k1' }] });
    const source = keySource({
      jwksUrl: `${base}${path}`,
      thumbprints: [await calculateJwkThumbprint(privateJwk, 'sha256')],
    });
    expect(await source.available()).toBe(false);
    for (const body of ['not json', 'null', '{"keys":"k1"}']) {
      const p = publish(body);
      const s = keySource({ jwksUrl: `${base}${p}`, thumbprints: [pinnedThumbprint] });
      expect(await s.available(), body).toBe(false);
      expect(await check(s, await token()), body).toBeInstanceOf(errors.JWKSNoMatchingKey);
      expect(s.loads).toBe(1);
    }
  });

  it('passes on an answer other than 200 as the failure it is, and says when the set cannot be fetched at all', async () => {
    const path = publish({ keys: [key.jwk] }, 500);
    const source = keySource({ jwksUrl: `${base}${path}`, thumbprints: [pinnedThumbprint] });
    const err = await check(source, await token());
    expect(err).toBeInstanceOf(errors.JOSEError);
    expect(err).not.toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect(err).not.toBeInstanceOf(KeysUnavailable);
    expect(await source.available()).toBe(false);

    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/jwks.json`;
    await new Promise((resolve) => gone.close(resolve));
    const nothing = keySource({ jwksUrl: url, thumbprints: [pinnedThumbprint] });
    const refused = await check(nothing, await token());
    expect(refused).toBeInstanceOf(KeysUnavailable);
    expect((refused as Error).message).toBe(`the key set at ${url} cannot be fetched`);
    expect(await nothing.available()).toBe(false);
  });

  it('fetches the set again for an unknown key id only after its cooldown', async () => {
    const path = publish({ keys: [key.jwk] });
    const patient = keySource({ jwksUrl: `${base}${path}`, thumbprints: [pinnedThumbprint] }, { cooldownMs: 600_000 });
    expect(await check(patient, await token())).toBe('a');
    expect(await check(patient, await token(key, 'made-up'))).toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect(patient.loads).toBe(1);
    const eager = keySource({ jwksUrl: `${base}${path}`, thumbprints: [pinnedThumbprint] }, { cooldownMs: 0 });
    expect(await check(eager, await token())).toBe('a');
    expect(await check(eager, await token(key, 'made-up'))).toBeInstanceOf(errors.JWKSNoMatchingKey);
    expect(eager.loads).toBe(2);
  });

  it('a thumbprint is 43 base64url characters (RFC 7638, SHA-256)', () => {
    expect(THUMBPRINT.test(pinnedThumbprint)).toBe(true);
    for (const bad of [
      'a'.repeat(42),
      'a'.repeat(44),
      `${'a'.repeat(42)}=`,
      `${'a'.repeat(42)}+`,
      ` ${'a'.repeat(43)}`,
    ])
      expect(THUMBPRINT.test(bad), bad).toBe(false);
    expect(THUMBPRINT.test(`-_${'Az09'.repeat(10)}a`)).toBe(true);
  });
});

describe('keySource', () => {
  it('takes a file when given one, whatever else is given', async () => {
    const folder = ownerOnlyFolder('keys-choice');
    mkdirSync(join(folder, 'sub'));
    const file = join(folder, 'sub', 'public-keys.json');
    writeKeySet(file, [key.jwk]);
    const source = keySource({ file, jwksUrl: 'http://127.0.0.1:9/jwks.json', thumbprints: [] } as never);
    expect(source.where).toBe(`the identity service's keys file ${file}`);
    expect(await check(source, await token())).toBe('a');
  });
});
