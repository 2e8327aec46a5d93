import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the double received: its path and its JSON body. */
export interface ModelRequest {
  path: string;
  body: {
    model?: string;
    max_tokens?: number;
    thinking?: unknown;
    temperature?: number;
    stop_sequences?: string[];
    output_config?: { effort?: string };
    system?: unknown;
    messages?: { role: string; content: unknown }[];
  } & Record<string, unknown>;
}

/**
 * A double of the model's Messages API (`POST /v1/messages`, streamed), for the real CLI to call instead
 * of Anthropic's: the real CLI, signed in by a token and pointed here by its settings, then runs exactly as
 * it would for a person, and the test sees the very request the model would get. What it answers is
 * chosen by a marker in the prompt:
 *   (none)              "Hello there, this is a reply." as text deltas, stop_reason end_turn
 *   [api:too-long]      400 invalid_request_error "prompt is too long: 250123 tokens > 200000 maximum"
 * It honours `max_tokens` (one word is one token: cut there, stop_reason max_tokens) and `stop_sequences`
 * (the text ends before the first, stop_reason stop_sequence), as the model does. A continuation the CLI
 * asks for on its own after a cut ("Output token limit hit") is held open and never answered.
 */
export async function startMessagesApi(): Promise<{
  url: string;
  requests: ModelRequest[];
  close(): Promise<void>;
}> {
  const requests: ModelRequest[] = [];
  const held = new Set<ServerResponse>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method !== 'POST' || path !== '/v1/messages') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"type":"error","error":{"type":"not_found_error","message":"not here"}}');
        return;
      }
      const body = JSON.parse(raw) as ModelRequest['body'];
      requests.push({ path, body });
      const prompt = JSON.stringify(body.messages ?? []);
      if (prompt.includes('Output token limit hit')) {
        held.add(res);
        return;
      }
      if (prompt.includes('[api:too-long]')) {
        res.writeHead(400, { 'content-type': 'application/json', 'request-id': 'req_double' });
        res.end(
          JSON.stringify({
            type: 'error',
            error: { type: 'invalid_request_error', message: 'prompt is too long: 250123 tokens > 200000 maximum' },
          }),
        );
        return;
      }
      stream(res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The reply as the API streams it, words as text deltas, ending at the limit or a stop sequence when asked. */
function stream(res: ServerResponse, body: ModelRequest['body']): void {
  let text = 'Hello there, this is a reply.';
  let stop: { reason: string; sequence: string | null } = { reason: 'end_turn', sequence: null };
  const first = (body.stop_sequences ?? [])
    .map((seq) => ({ seq, at: text.indexOf(seq) }))
    .filter((s) => s.at >= 0)
    .sort((a, b) => a.at - b.at)[0];
  if (first) {
    text = text.slice(0, first.at);
    stop = { reason: 'stop_sequence', sequence: first.seq };
  }
  let words: string[] = text.match(/\S+\s*/g) ?? [];
  if (body.max_tokens !== undefined && words.length > body.max_tokens) {
    words = words.slice(0, body.max_tokens);
    stop = { reason: 'max_tokens', sequence: null };
  }
  const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_double' });
  const usage = { input_tokens: 25, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 };
  send('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_double',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  });
  send('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  for (const w of words)
    send('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: w } });
  send('content_block_stop', { type: 'content_block_stop', index: 0 });
  send('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stop.reason, stop_sequence: stop.sequence },
    usage: { output_tokens: words.length },
  });
  send('message_stop', { type: 'message_stop' });
  res.end();
}
