import type { Response } from 'express';
import type { Completion } from './completions.ts';
import type { ProviderError } from './errors.ts';

/** One chat.completion.chunk of a reply, as server-sent events carry it. */
type Chunk = {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: unknown[];
  usage?: unknown;
};
type ReplyId = { id: string; created: number; model: string };

const HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
const base = (r: ReplyId): Omit<Chunk, 'choices'> => ({
  id: r.id,
  object: 'chat.completion.chunk',
  created: r.created,
  model: r.model,
});
const textChunk = (r: ReplyId, delta: Record<string, string>): Chunk => ({
  ...base(r),
  choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
});

/** The end of every finished reply: the finish-reason chunk (`stop`, or `length` when cut at max_tokens), the usage chunk (always sent, `choices: []`), [DONE]. */
function ending(c: Completion): string {
  const finish = c.choices[0].finish_reason;
  return `${event({ ...base(c), choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finish }] })}${event({ ...base(c), choices: [], usage: c.usage })}data: [DONE]\n\n`;
}

/**
 * MODELPROV_STREAM=whole: the whole reply as server-sent events, at once: text chunk, finish-reason chunk,
 * usage chunk, [DONE]. The text is empty only when the caller's own stop sequence or limit came first.
 */
export function sendWhole(res: Response, c: Completion): void {
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
   * The bytes `event(textChunk(reply, delta))` gives, written around the content: on the path of every delta
   * only the text is encoded, not the whole chunk object (streaming.test.ts checks each chunk against it).
   */
  private frame(reply: ReplyId): { first: string; next: string; end: string } {
    if (this.framed?.id === reply.id) return this.framed;
    const head = `data: {"id":${JSON.stringify(reply.id)},"object":"chat.completion.chunk","created":${JSON.stringify(reply.created)},"model":${JSON.stringify(reply.model)},"choices":[{"index":0,"delta":{`;
    this.framed = {
      id: reply.id,
      first: `${head}"role":"assistant","content":`,
      next: `${head}"content":`,
      end: '},"logprobs":null,"finish_reason":null}]}\n\n',
    };
    return this.framed;
  }

  /**
   * The finished reply: what of its text was held back (a tail that could have begun tool-call syntax), then
   * the ending every stream has. False when the CLI's final text does not continue what was sent (the rest is then not sent).
   */
  finish(c: Completion): boolean {
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
