import { randomBytes } from 'node:crypto';
import { showableLength } from './cli-output.ts';

/** How far back from what was shown a call block may have begun (its opening tag was held back; the JSON form may be spaced out). */
const CALL_BLOCK_REACH = 64;

/**
 * One reply as the CLI writes it (MODELPROV_STREAM=deltas): its completion id, its text so far, and what
 * of that may be shown (see showableLength), told to every request streaming it. What was shown is never
 * taken back. Identical requests sharing the run share this too: one that joins late is told what was
 * shown so far, then the rest.
 */
export class PartialReply {
  readonly id = `chatcmpl-${randomBytes(12).toString('base64url')}`;
  readonly created = Math.floor(Date.now() / 1000);
  /** Whether a follower was told any text: a run whose first words were seen cannot be asked for again unseen. */
  seen = false;
  private text = '';
  private shown = '';
  private closed = false;
  private readonly followers = new Set<(text: string) => void>();

  constructor(readonly model: string) {}

  /** Text the CLI wrote; what of it may now be shown goes to every follower. */
  write(delta: string): void {
    if (this.closed) return;
    this.text += delta;
    const from = this.shown === '' ? 0 : Math.max(1, this.shown.length - CALL_BLOCK_REACH);
    const showable = showableLength(this.text, from);
    if (showable <= this.shown.length) return;
    const more = this.text.slice(this.shown.length, showable);
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
    this.text = '';
    this.shown = '';
    this.closed = false;
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
