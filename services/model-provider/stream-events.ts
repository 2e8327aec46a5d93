import type { Response } from 'express';
import type { ProviderError } from './errors.ts';
import type { ChatCompletion, ChatCompletionChunk, ProviderErrorBody } from './shapes.ts';

/** What every chunk of one reply repeats. */
type ReplyId = Pick<ChatCompletionChunk, 'id' | 'created' | 'model'>;
type Delta = ChatCompletionChunk['choices'][number]['delta'];

const HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

const event = (data: ChatCompletionChunk | ProviderErrorBody) => `data: ${JSON.stringify(data)}\n\n`;
const chunk = (r: ReplyId, rest: Pick<ChatCompletionChunk, 'choices' | 'usage'>): ChatCompletionChunk => ({
  id: r.id,
  object: 'chat.completion.chunk',
  created: r.created,
  model: r.model,
  ...rest,
});
const textChunk = (r: ReplyId, delta: Delta): ChatCompletionChunk =>
  chunk(r, { choices: [{ index: 0, delta, logprobs: null, finish_reason: null }] });

const EMPTY_CONTENT = '"content":""';

/** A text chunk's event before and after its content's JSON string. */
function aroundContent(r: ReplyId, delta: Omit<Delta, 'content'>): [before: string, after: string] {
  const whole = event(textChunk(r, { ...delta, content: '' }));
  // Every quote inside a JSON string is escaped, so only the member itself reads `"content":""`.
  const at = whole.lastIndexOf(EMPTY_CONTENT) + EMPTY_CONTENT.length;
  return [whole.slice(0, at - 2), whole.slice(at)];
}

/** The end of every finished reply: the finish-reason chunk (`stop`, or `length` when cut at max_tokens), the usage chunk (always sent, `choices: []`), [DONE]. */
function ending(c: ChatCompletion): string {
  const finish = chunk(c, {
    choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: c.choices[0].finish_reason }],
  });
  return `${event(finish)}${event(chunk(c, { choices: [], usage: c.usage }))}data: [DONE]\n\n`;
}

/**
 * MODELPROV_STREAM=whole: the whole reply as server-sent events, at once: text chunk, finish-reason chunk,
 * usage chunk, [DONE]. The text is empty only when the caller's own stop sequence or limit came first.
 */
export function sendWhole(res: Response, c: ChatCompletion): void {
  res.status(200).set(HEADERS);
  res.end(`${event(textChunk(c, { role: 'assistant', content: c.choices[0].message.content }))}${ending(c)}`);
}

/**
 * MODELPROV_STREAM=deltas: the reply's text as the CLI writes it. Nothing is sent (not even the status)
 * before the first text, so a run that fails before it still answers with its own error status.
 */
export class DeltaStream {
  /** The text sent so far. */
  sent = '';
  private started = false;
  /** A text chunk's event around its JSON-encoded content, made once per reply (see `frame`). */
  private framed?: { id: string; first: string; next: string; end: string };

  constructor(private readonly res: Response) {}

  /** Whether anything was sent: from then on a failure can only end the stream. */
  get hasSent(): boolean {
    return this.started;
  }

  /** A piece of text; the first carries the role, and the status and headers go with it. */
  text(reply: ReplyId, text: string): void {
    if (text === '' || this.res.destroyed) return;
    const frame = this.frame(reply);
    if (!this.started) {
      this.started = true;
      // Node's own writeHead: on the path from the CLI's first words to the client, Express's header helpers are not needed.
      this.res.writeHead(200, HEADERS);
      this.res.write(`${frame.first}${JSON.stringify(text)}${frame.end}`);
    } else this.res.write(`${frame.next}${JSON.stringify(text)}${frame.end}`);
    this.sent += text;
  }

  /**
   * `event(textChunk(reply, delta))` cut around its content, made once per reply: on the path of every delta
   * only the text is encoded, not the whole chunk object (streaming.test.ts checks each chunk's bytes).
   */
  private frame(reply: ReplyId): { first: string; next: string; end: string } {
    if (this.framed?.id === reply.id) return this.framed;
    const [first, end] = aroundContent(reply, { role: 'assistant' });
    const [next] = aroundContent(reply, {});
    this.framed = { id: reply.id, first, next, end };
    return this.framed;
  }

  /**
   * The finished reply: what of its text was held back (a tail that could have begun tool-call syntax), then
   * the ending every stream has. False when the CLI's final text does not continue what was sent (the rest is then not sent).
   */
  finish(c: ChatCompletion): boolean {
    const content = c.choices[0].message.content;
    const continues = content.startsWith(this.sent);
    if (continues && content.length > this.sent.length) this.text(c, content.slice(this.sent.length));
    this.res.end(ending(c));
    return continues;
  }

  /** A failure after text was sent: an error event in the error envelope, and no finish reason or [DONE] (a failed turn never looks finished). */
  fail(err: ProviderError): void {
    this.res.end(event(err.envelope()));
  }
}
