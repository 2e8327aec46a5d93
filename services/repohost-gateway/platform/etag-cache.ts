/**
 * The answers kept for conditional reads (ETag revalidation), for every credential at once, within one
 * byte budget (REPOHOST_ETAG_CACHE_BYTES): whatever requests come, the gateway never holds more.
 */

/** One answer kept for revalidation: its ETag and the answer as it came (body bytes, headers, final URL). */
export interface KeptAnswer {
  readonly etag: string;
  readonly url: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: ArrayBuffer;
  /** What it is counted as against the budget (see `answerBytes`). */
  readonly bytes: number;
}

/**
 * What one kept answer costs besides its body and texts: the map entry, the record, the ArrayBuffer and
 * the header arrays. Measured with V8's heap figures: the count comes out 10-20 % above what is held.
 */
export const ENTRY_OVERHEAD_BYTES = 640;

/** The default budget, across all credentials: 32 MiB (see the gateway's README for what a sweep needs). */
export const DEFAULT_ETAG_CACHE_BYTES = 32 * 1024 * 1024;

/** An answer is kept only when it takes at most this share of the budget, so that one read never pushes out everything else. */
export const LARGEST_SHARE = 8;

export interface EtagCacheHeld {
  entries: number;
  /** Never more than `maxBytes`. */
  bytes: number;
  maxBytes: number;
  /** Credentials with at least one answer kept. */
  credentials: number;
}

/** The size an answer is counted as: its body's bytes, every text at two bytes a character (V8's widest), and the fixed overhead. */
export function answerBytes(key: string, answer: Omit<KeptAnswer, 'bytes'>): number {
  let texts = key.length + answer.etag.length + answer.url.length;
  for (const [name, value] of answer.headers) texts += name.length + value.length;
  return answer.body.byteLength + 2 * texts + ENTRY_OVERHEAD_BYTES;
}

interface Partition {
  /** Least recently used first. */
  readonly answers: Map<string, KeptAnswer>;
  bytes: number;
}

/**
 * Kept answers by credential (fingerprint) and read (URL and Accept): an answer is only ever served to
 * the credential it was read with. Over the budget, the credential holding the most bytes lets go of
 * its least recently used answer first, so a caller reading large answers pushes out its own before
 * anyone else's (another credential keeps at least an equal share).
 */
export class EtagCache {
  private readonly partitions = new Map<string, Partition>();
  private bytes = 0;
  private entries = 0;

  constructor(readonly maxBytes = DEFAULT_ETAG_CACHE_BYTES) {}

  /** The answer kept for `key` under `credential`, now the most recently used. */
  get(credential: string, key: string): KeptAnswer | undefined {
    const answers = this.partitions.get(credential)?.answers;
    const kept = answers?.get(key);
    if (!answers || !kept) return undefined;
    answers.delete(key);
    answers.set(key, kept);
    return kept;
  }

  /** Keeps an answer (replacing the one kept for `key`); one over an eighth of the budget is not kept. Returns whether it was. */
  keep(credential: string, key: string, answer: Omit<KeptAnswer, 'bytes'>): boolean {
    this.forget(credential, key);
    const bytes = answerBytes(key, answer);
    if (bytes > this.maxBytes / LARGEST_SHARE) return false;
    let partition = this.partitions.get(credential);
    if (!partition) {
      partition = { answers: new Map(), bytes: 0 };
      this.partitions.set(credential, partition);
    }
    partition.answers.set(key, { ...answer, bytes });
    partition.bytes += bytes;
    this.bytes += bytes;
    this.entries += 1;
    while (this.bytes > this.maxBytes) this.evictFromLargest();
    return true;
  }

  /** Forgets the answer kept for `key` (a newer answer came without an ETag: the kept one is stale). */
  forget(credential: string, key: string): void {
    const partition = this.partitions.get(credential);
    const kept = partition?.answers.get(key);
    if (!partition || !kept) return;
    partition.answers.delete(key);
    this.release(credential, partition, kept.bytes);
  }

  /** Forgets every answer of a credential (it is no longer usable, or its client was let go). */
  drop(credential: string): void {
    const partition = this.partitions.get(credential);
    if (!partition) return;
    this.partitions.delete(credential);
    this.bytes -= partition.bytes;
    this.entries -= partition.answers.size;
  }

  /** Forgets the answers of every credential not in `credentials`. */
  retainOnly(credentials: ReadonlySet<string>): void {
    for (const credential of [...this.partitions.keys()]) if (!credentials.has(credential)) this.drop(credential);
  }

  /** What is held now (for tests, diagnostics and the benchmark). */
  held(): EtagCacheHeld {
    return { entries: this.entries, bytes: this.bytes, maxBytes: this.maxBytes, credentials: this.partitions.size };
  }

  /** What one credential holds (for tests: whose answers went). */
  heldBy(credential: string): { entries: number; bytes: number } {
    const partition = this.partitions.get(credential);
    return { entries: partition?.answers.size ?? 0, bytes: partition?.bytes ?? 0 };
  }

  private evictFromLargest(): void {
    let largest: [string, Partition] | undefined;
    for (const entry of this.partitions) if (!largest || entry[1].bytes > largest[1].bytes) largest = entry;
    if (!largest) return;
    const [credential, partition] = largest;
    const [key, oldest] = partition.answers.entries().next().value!;
    partition.answers.delete(key);
    this.release(credential, partition, oldest.bytes);
  }

  private release(credential: string, partition: Partition, bytes: number): void {
    partition.bytes -= bytes;
    this.bytes -= bytes;
    this.entries -= 1;
    if (partition.answers.size === 0) this.partitions.delete(credential);
  }
}
