import { readFileSync, statSync } from 'node:fs';
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  type JWK,
  type JWTVerifyGetKey,
  type LocalJWKSet,
} from 'jose';
import { notOursBecause } from './identity-channel.ts';

/**
 * Where a service gets the identity service's public keys: never from whatever answers on identity's
 * port, but out of band. Either the key set identity writes into its own data folder (`file`), or, for
 * an identity service elsewhere, the key set it publishes of which only the keys whose RFC 7638
 * thumbprints the person pinned are used (`pinned`).
 */
export type IdentityKeys =
  { readonly file: string } | { readonly jwksUrl: string; readonly thumbprints: readonly string[] };

/** The keys of one source, as the kit's verifier uses them. */
export interface KeySource {
  /** jose's key resolver; throws `KeysUnavailable` when no trusted key is at hand. */
  readonly resolve: JWTVerifyGetKey;
  /** Whether a trusted key is at hand now (/ready). */
  available(): Promise<boolean>;
  /** How many times the key set was loaded (the file read, or the published set fetched). */
  readonly loads: number;
  /** Where the keys come from, for sentences. */
  readonly where: string;
}

/** No trusted key is at hand (the file is missing, not ours, not a key set; the published set cannot be fetched). */
export class KeysUnavailable extends Error {
  override name = 'KeysUnavailable';
}

export interface KeySourceOptions {
  /**
   * Least time between two loads for a token whose key id the set does not hold (default 5 s), so made-up
   * key ids cannot make the service re-read (or re-fetch) the set per request. A changed file is read at once.
   */
  cooldownMs?: number;
  now?: () => number;
}

/** A base64url SHA-256 JWK thumbprint (RFC 7638), as `calculateJwkThumbprint` writes it. */
export const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

export function keySource(keys: IdentityKeys, options: KeySourceOptions = {}): KeySource {
  return 'file' in keys ? keysFromFile(keys.file, options) : pinnedKeys(keys.jwksUrl, keys.thumbprints, options);
}

/**
 * The key set in `file`, which identity rewrites (atomically) at every rotation and prune. Each use
 * costs one stat: a changed file (another inode, size or time) is read again at once; a token whose
 * key id is not in the set reads it again at most once per cooldown, in case the change was too quick
 * for the file's times to show.
 */
function keysFromFile(file: string, { cooldownMs = 5_000, now = Date.now }: KeySourceOptions): KeySource {
  let stamp: string | undefined;
  let set: LocalJWKSet | undefined;
  let kids = new Set<string>();
  // Set by each refresh, which every use runs first.
  let why: string;
  let lastRead = -Infinity;
  let loads = 0;

  const stampNow = (): string | undefined => {
    try {
      const s = statSync(file, { bigint: true });
      return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
    } catch {
      return undefined;
    }
  };
  const load = (current: string) => {
    lastRead = now();
    loads += 1;
    stamp = current;
    set = undefined;
    kids = new Set();
    const refused = notOursBecause(file, 'keys file');
    if (refused) {
      why = refused;
      return;
    }
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as { keys?: unknown };
      const keys = (Array.isArray(parsed?.keys) ? parsed.keys : []).filter(isPublicJwk);
      if (keys.length === 0) {
        why = `${file} holds no public key`;
        return;
      }
      set = createLocalJWKSet({ keys });
      kids = new Set(keys.flatMap((k) => (typeof k.kid === 'string' ? [k.kid] : [])));
    } catch {
      why = `${file} is not a JSON Web Key Set`;
    }
  };
  const refresh = (force: boolean) => {
    const current = stampNow();
    if (current === undefined) {
      stamp = undefined;
      set = undefined;
      why = `there is no keys file at ${file} (the identity service writes it when it starts)`;
      return;
    }
    if (force || current !== stamp) load(current);
  };

  return {
    where: `the identity service's keys file ${file}`,
    async resolve(header, token) {
      refresh(false);
      if (set && typeof header.kid === 'string' && !kids.has(header.kid) && now() - lastRead >= cooldownMs)
        refresh(true);
      if (!set) throw new KeysUnavailable(why);
      return set(header, token);
    },
    async available() {
      refresh(false);
      return set !== undefined;
    },
    get loads() {
      return loads;
    },
  };
}

/**
 * The key set an identity service elsewhere publishes, of which only the keys with a pinned thumbprint
 * are kept: whoever answers at that URL can serve any set, but cannot make a key with a pinned thumbprint.
 */
function pinnedKeys(
  jwksUrl: string,
  thumbprints: readonly string[],
  { cooldownMs = 5_000 }: KeySourceOptions,
): KeySource {
  const pinned = new Set(thumbprints);
  let loads = 0;
  const remote = createRemoteJWKSet(new URL(jwksUrl), {
    cacheMaxAge: 10 * 60_000,
    cooldownDuration: cooldownMs,
    timeoutDuration: 3_000,
    [customFetch]: async (url, init) => {
      loads += 1;
      const res = await fetch(url, init);
      if (res.status !== 200) return res;
      const body = (await res.json().catch(() => undefined)) as { keys?: unknown } | undefined;
      const kept: JWK[] = [];
      for (const key of Array.isArray(body?.keys) ? body.keys : []) {
        if (!isPublicJwk(key)) continue;
        const thumbprint = await calculateJwkThumbprint(key, 'sha256').catch(() => undefined);
        if (thumbprint !== undefined && pinned.has(thumbprint)) kept.push(key);
      }
      return Response.json({ keys: kept });
    },
  });
  return {
    where: `the pinned keys of the identity service at ${jwksUrl}`,
    async resolve(header, token) {
      try {
        return await remote(header, token);
      } catch (err) {
        if (
          err instanceof Error &&
          (err.name === 'TypeError' || (err as { code?: string }).code === 'ERR_JWKS_TIMEOUT')
        )
          throw new KeysUnavailable(`the key set at ${jwksUrl} cannot be fetched`);
        throw err;
      }
    },
    async available() {
      if (!remote.jwks() || !remote.fresh) await remote.reload().catch(() => undefined);
      return (remote.jwks()?.keys.length ?? 0) > 0;
    },
    get loads() {
      return loads;
    },
  };
}

/** A JWK with no private member: a key set handed to a verifier holds public keys only. */
function isPublicJwk(key: unknown): key is JWK {
  return typeof key === 'object' && key !== null && typeof (key as JWK).kty === 'string' && !('d' in key);
}
