import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { streamText } from 'ai';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProvider, type StartedProvider } from './test-support/provider.ts';
import { findPython, PYTHON_CLIENT } from './test-support/python.ts';

/*
 * The clients people use, streaming from MODELPROV_STREAM=deltas, end with the same text and usage as
 * the whole reply (MODELPROV_STREAM=whole) gives them, having received it in pieces.
 */

const { python, reason } = findPython();
if (!python && process.env.CI !== 'true')
  console.log(`clients-streaming.test.ts: the Python client test is skipped: ${reason}`);

let deltas: StartedProvider;
let whole: StartedProvider;
beforeAll(async () => {
  [deltas, whole] = await Promise.all([startProvider({ env: { MODELPROV_STREAM: 'deltas' } }), startProvider()]);
  await Promise.all([deltas.service.lockdownProbed(), whole.service.lockdownProbed()]);
});
afterAll(async () => {
  await Promise.all([deltas?.close(), whole?.close()]);
});

/** What the stand-in answers for 40 words: one delta per word. */
const PROMPT = 'Tell me forty words [stand-in:text=40]';
const WORDS = `${Array.from({ length: 40 }, (_, i) => `word${i + 1}`).join(' ')}.`;
/** The stand-in's usage, as each client reports it. */
const USAGE = { prompt: 2042, completion: 9, total: 2051 };

interface Outcome {
  text: string;
  prompt: number | undefined;
  completion: number | undefined;
  /** How many pieces of text the client received. */
  pieces: number;
}

async function openaiNode(p: StartedProvider): Promise<Outcome> {
  const stream = await p.client.chat.completions.create({
    model: 'sonnet',
    messages: [{ role: 'user', content: PROMPT }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const out: Outcome = { text: '', prompt: undefined, completion: undefined, pieces: 0 };
  for await (const chunk of stream) {
    const piece = chunk.choices[0]?.delta.content;
    if (piece) [out.text, out.pieces] = [out.text + piece, out.pieces + 1];
    if (chunk.usage) [out.prompt, out.completion] = [chunk.usage.prompt_tokens, chunk.usage.completion_tokens];
  }
  return out;
}

async function aiSdk(p: StartedProvider): Promise<Outcome> {
  const model = createOpenAICompatible({
    name: 'local-cli',
    baseURL: `${p.url}/v1`,
    apiKey: 'hub-key',
    includeUsage: true,
  })('sonnet');
  const result = streamText({ model, prompt: PROMPT, maxRetries: 0 });
  const out: Outcome = { text: '', prompt: undefined, completion: undefined, pieces: 0 };
  for await (const piece of result.textStream) [out.text, out.pieces] = [out.text + piece, out.pieces + 1];
  const usage = await result.usage;
  return { ...out, prompt: usage.inputTokens, completion: usage.outputTokens };
}

async function langChain(p: StartedProvider): Promise<Outcome> {
  const chat = new ChatOpenAI({
    model: 'sonnet',
    apiKey: 'hub-key',
    maxRetries: 0,
    configuration: { baseURL: `${p.url}/v1` },
  });
  const out: Outcome = { text: '', prompt: undefined, completion: undefined, pieces: 0 };
  for await (const chunk of await chat.stream(PROMPT)) {
    const piece = typeof chunk.content === 'string' ? chunk.content : '';
    if (piece) [out.text, out.pieces] = [out.text + piece, out.pieces + 1];
    if (chunk.usage_metadata)
      [out.prompt, out.completion] = [chunk.usage_metadata.input_tokens, chunk.usage_metadata.output_tokens];
  }
  return out;
}

async function pythonOpenai(p: StartedProvider): Promise<Outcome> {
  const { stdout } = await execa(python!, [PYTHON_CLIENT, `${p.url}/v1`, PROMPT, 'stream']);
  const r = JSON.parse(stdout) as {
    text: string;
    usage: { prompt_tokens: number; completion_tokens: number };
    pieces: number;
  };
  return { text: r.text, prompt: r.usage.prompt_tokens, completion: r.usage.completion_tokens, pieces: r.pieces };
}

describe('the clients people use stream in deltas mode and end with what the whole reply gives them', () => {
  const clients: [string, (p: StartedProvider) => Promise<Outcome>][] = [
    ['the official openai client (Node)', openaiNode],
    ['the AI SDK (@ai-sdk/openai-compatible, streamText)', aiSdk],
    ['LangChain (@langchain/openai, stream)', langChain],
  ];
  for (const [name, client] of clients) {
    it(`${name}: the same text and usage, received in pieces`, async () => {
      const [streamed, wholeReply] = await Promise.all([client(deltas), client(whole)]);
      expect(wholeReply).toMatchObject({ text: WORDS, prompt: USAGE.prompt, completion: USAGE.completion });
      expect(streamed).toMatchObject({
        text: wholeReply.text,
        prompt: wholeReply.prompt,
        completion: wholeReply.completion,
      });
      expect(streamed.pieces).toBeGreaterThanOrEqual(20);
    });
  }

  it.skipIf(!python && process.env.CI !== 'true')(
    'the official openai client (Python): the same text and usage, received in pieces',
    async () => {
      // In CI the client is installed by .ci/run; missing there, it is a failure, not a skip.
      expect(python, reason).toBeDefined();
      const [streamed, wholeReply] = await Promise.all([pythonOpenai(deltas), pythonOpenai(whole)]);
      expect(wholeReply).toMatchObject({ text: WORDS, prompt: USAGE.prompt, completion: USAGE.completion });
      expect(streamed).toMatchObject({
        text: wholeReply.text,
        prompt: wholeReply.prompt,
        completion: wholeReply.completion,
      });
      expect(streamed.pieces).toBeGreaterThanOrEqual(20);
    },
  );
});
