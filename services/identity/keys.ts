import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from 'jose';
import { writeOwnerOnly } from '../kit/owner-only-file.ts';

const ALG = 'ES256';

interface StoredKey {
  kid: string;
  alg: string;
  privateJwk: JWK;
  publicJwk: JWK;
  createdAt: string;
  /** When a newer key took over; the public half stays published until tokens it signed have expired. */
  retiredAt: string | null;
  /** The longest lifetime of a token this key signed, so a later, shorter setting cannot unpublish it early. */
  maxTtlSeconds?: number;
}

/**
 * The signing keys, kept in `<data>/keys/signing-keys.json` with owner-only permissions. The newest
 * key signs; older ones are published until every token they signed has expired, then dropped. What
 * is published is also written to `publicFile` (identity's data folder, owner-only, atomically, at
 * every change): the services that take tokens read their keys there, never from identity's port.
 */
export class SigningKeys {
  private readonly file: string;
  private keys: StoredKey[] = [];
  private loadedMtime = 0;

  constructor(
    keysDir: string,
    private readonly tokenTtlSeconds: number,
    private readonly rotationDays: number,
    private readonly publicFile?: string,
  ) {
    mkdirSync(keysDir, { recursive: true, mode: 0o700 });
    chmodSync(keysDir, 0o700);
    this.file = join(keysDir, 'signing-keys.json');
  }

  /** Loads the keys, creating the first on first run and rotating when the active one is due. */
  async prepare(now = new Date()): Promise<void> {
    this.reloadIfChanged();
    const active = this.active();
    const due = active && now.getTime() - Date.parse(active.createdAt) > this.rotationDays * 86_400_000;
    if (!active || due) await this.rotate(now);
    else this.prune(now);
    // A data folder from before the public file, or a file removed by hand: written again now.
    this.publish(now);
  }

  /** Makes a new signing key; the old one stays published until its tokens have expired. */
  async rotate(now = new Date()): Promise<string> {
    this.reloadIfChanged();
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
    const kid = randomBytes(12).toString('base64url');
    const fresh: StoredKey = {
      kid,
      alg: ALG,
      privateJwk: { ...(await exportJWK(privateKey)), kid, alg: ALG },
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' },
      createdAt: now.toISOString(),
      retiredAt: null,
      maxTtlSeconds: this.tokenTtlSeconds,
    };
    for (const k of this.keys) k.retiredAt ??= now.toISOString();
    this.keys.push(fresh);
    this.prune(now);
    this.save(now);
    return kid;
  }

  /** The public key set: the active key and retired keys whose tokens may still be valid. */
  publicSet(now = new Date()): { keys: JWK[] } {
    this.reloadIfChanged();
    return { keys: this.keys.filter((k) => this.stillPublished(k, now)).map((k) => k.publicJwk) };
  }

  /**
   * `sid`: the public id of the session credential the token was minted with, so holders can ask whether
   * it still stands. `purpose`: that credential's kind (owner or hub), so a service can record who acted.
   * `notAfter`: that credential's expiry; the token never outlives it.
   */
  async sign(
    claims: { sub: string; aud: string; iss: string; sid?: string; purpose?: 'owner' | 'hub' },
    now = new Date(),
    notAfter?: Date,
  ): Promise<{ token: string; expiresAt: Date }> {
    this.reloadIfChanged();
    const key = this.active();
    if (!key) throw new Error('no signing key');
    if ((key.maxTtlSeconds ?? 0) < this.tokenTtlSeconds) {
      // Once per key and longer lifetime (a raised setting, or a key made by the CLI with another one).
      key.maxTtlSeconds = this.tokenTtlSeconds;
      this.save();
    }
    const iat = Math.floor(now.getTime() / 1000);
    const exp = Math.min(
      iat + this.tokenTtlSeconds,
      notAfter === undefined ? Infinity : Math.floor(notAfter.getTime() / 1000),
    );
    const token = await new SignJWT({
      ...(claims.sid ? { sid: claims.sid } : {}),
      ...(claims.purpose ? { purpose: claims.purpose } : {}),
    })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(claims.iss)
      .setSubject(claims.sub)
      .setAudience(claims.aud)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(exp)
      .setJti(randomBytes(12).toString('base64url'))
      .sign(await importJWK(key.privateJwk, key.alg));
    return { token, expiresAt: new Date(exp * 1000) };
  }

  get ready(): boolean {
    return this.active() !== undefined;
  }

  /** The id of the key that signs now. */
  get activeKid(): string | undefined {
    this.reloadIfChanged();
    return this.active()?.kid;
  }

  private active(): StoredKey | undefined {
    return this.keys.find((k) => k.retiredAt === null);
  }

  private stillPublished(k: StoredKey, now: Date): boolean {
    if (k.retiredAt === null) return true;
    // Keep publishing past the last token's expiry, plus the verifiers' clock skew.
    const ttl = Math.max(k.maxTtlSeconds ?? 0, this.tokenTtlSeconds);
    return now.getTime() < Date.parse(k.retiredAt) + (ttl + 300) * 1000;
  }

  private prune(now: Date): void {
    const before = this.keys.length;
    this.keys = this.keys.filter((k) => this.stillPublished(k, now));
    if (this.keys.length !== before) this.save(now);
  }

  private reloadIfChanged(): void {
    if (!existsSync(this.file)) return;
    const mtime = statSync(this.file).mtimeMs;
    if (mtime === this.loadedMtime) return;
    this.keys = JSON.parse(readFileSync(this.file, 'utf8')) as StoredKey[];
    this.loadedMtime = mtime;
  }

  private save(now = new Date()): void {
    writeOwnerOnly(this.file, JSON.stringify(this.keys, null, 2));
    this.loadedMtime = statSync(this.file).mtimeMs;
    this.publish(now);
  }

  /** Writes the public set to `publicFile` when it differs from what is there (a rewrite makes every verifier read it again). */
  private publish(now: Date): void {
    if (!this.publicFile) return;
    const text = `${JSON.stringify(this.publicSet(now), null, 2)}\n`;
    let current: string | undefined;
    try {
      current = readFileSync(this.publicFile, 'utf8');
    } catch {
      current = undefined;
    }
    if (current !== text) writeOwnerOnly(this.publicFile, text);
  }
}
