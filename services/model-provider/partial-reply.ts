import { randomBytes } from 'node:crypto';
import { showableLength } from './cli-output.ts';

/** How far back from what was shown a call block may have begun (its opening tag was held back; the JSON form may be spaced out). */
const CALL_BLOCK_REACH = 64;

/** Where the first of `stops` begins in `text`, looking from `from` on; undefined when none does. */
export function firstStop(text: string, stops: readonly string[], from = 0): number | undefined {
  let first: number | undefined;
  for (const stop of stops) {
    const at = text.indexOf(stop, from);
    if (at >= 0 && (first === undefined || at < first)) first = at;
  }
  return first;
}

/** How many characters at the end of `text` could be the beginning of one of `stops` (held back until the next text says). */
export function stopPrefixAtEnd(text: string, stops: readonly string[]): number {
  let held = 0;
  for (const stop of stops) {
    // The earliest place in the last stop.length - 1 characters from which the rest of the text begins `stop`.
    for (
      let j = text.indexOf(stop[0]!, Math.max(0, text.length - stop.length + 1));
      j >= 0;
      j = text.indexOf(stop[0]!, j + 1)
    ) {
      if (text.length - j <= held) break;
      if (stop.startsWith(text.slice(j))) {
        held = text.length - j;
        break;
      }
    }
  }
  return held;
}

/**
 * One reply as the CLI writes it: its completion id, its text so far, and what of that may be shown (see
 * showableLength), told to every request streaming it (MODELPROV_STREAM=deltas). What was shown is never
 * taken back. Identical requests sharing the run share this too: one that joins late is told what was
 * shown so far, then the rest. With stop sequences, the text ends before the first one written (and
 * `stopped` says so); a tail that could still begin one is not shown until the next text decides.
 */
export class PartialReply {
  readonly id = `chatcmpl-${randomBytes(12).toString('base64url')}`;
  readonly created = Math.floor(Date.now() / 1000);
  /** Whether a follower was told any text: a run whose first words were seen cannot be asked for again unseen. */
  seen = false;
  /** The reply reached a stop sequence: its text ends before it, and nothing more is taken. */
  stopped = false;
  private written = '';
  private shown = '';
  private closed = false;
  private readonly followers = new Set<(text: string) => void>();
  private readonly longestStop: number;

  constructor(
    readonly model: string,
    private readonly stops: readonly string[] = [],
  ) {
    this.longestStop = stops.reduce((n, s) => Math.max(n, s.length), 0);
  }

  /** The text the CLI wrote so far (up to a stop sequence). */
  get text(): string {
    return this.written;
  }

  /** Text the CLI wrote; what of it may now be shown goes to every follower. */
  write(delta: string): void {
    if (this.closed) return;
    const before = this.written.length;
    this.written += delta;
    if (this.longestStop > 0) {
      // A stop sequence may have begun in the text before this delta.
      const at = firstStop(this.written, this.stops, Math.max(0, before - this.longestStop + 1));
      if (at !== undefined) {
        this.written = this.written.slice(0, at);
        this.stopped = true;
        this.closed = true;
      }
    }
    const from = this.shown === '' ? 0 : Math.max(1, this.shown.length - CALL_BLOCK_REACH);
    let showable = showableLength(this.written, from);
    if (!this.stopped && this.longestStop > 0)
      showable = Math.min(showable, this.written.length - stopPrefixAtEnd(this.written, this.stops));
    if (showable <= this.shown.length) return;
    const more = this.written.slice(this.shown.length, showable);
    this.shown += more;
    if (this.followers.size > 0) this.seen = true;
    for (const follower of this.followers) follower(more);
  }

  /** The model went on to something that is not text (a tool call): nothing more is shown. */
  close(): void {
    this.closed = true;
  }

  /** The same request is run once more (its reply was tool-call syntax nobody saw): a new text. */
  restart(): void {
    this.written = '';
    this.shown = '';
    this.closed = false;
    this.stopped = false;
  }

  /** Tells `follower` what was shown so far, then each new piece; returns the way to stop. */
  follow(follower: (text: string) => void): () => void {
    if (this.shown !== '') {
      this.seen = true;
      follower(this.shown);
    }
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }
}
