import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatCompletionChunk } from './shapes.ts';
import { processAlive } from './test-support/stand-in.ts';
import { startProvider, type StartedProvider } from './test-support/provider.ts';
import { waitFor } from '../../test/support/wait-for.ts';

/*
 * MODELPROV_STREAM=deltas against the real service and the stand-in CLI printing partial messages
 * (`stream_event` lines, as the 2.1.197 CLI does with --include-partial-messages); MODELPROV_STREAM=whole
 * beside it for what must not change.
 */

let deltas: StartedProvider;
let whole: StartedProvider;

beforeAll(async () => {
  [deltas, whole] = await Promise.all([
    startProvider({
      env: {
        MODELPROV_STREAM: 'deltas',
        MODELPROV_MAX_QUEUE: '20',
        MODELPROV_FAILURE_MEMORY_SECONDS: '0',
        // A client that leaves stops its run at once here (client-retries.test.ts covers the retry window).
        MODELPROV_RETRY_GRACE_SECONDS: '0',
      },
    }),
    startProvider({ env: { MODELPROV_FAILURE_MEMORY_SECONDS: '0' } }),
  ]);
  await Promise.all([deltas.service.lockdownProbed(), whole.service.lockdownProbed()]);
});
afterAll(async () => {
  await Promise.all([deltas?.close(), whole?.close()]);
});

const ask = (
  p: StartedProvider,
  content: string,
  extra: Partial<OpenAI.ChatCompletionCreateParamsStreaming> = {},
  signal?: AbortSignal,
) =>
  p.client.chat.completions.create(
    { model: 'sonnet', messages: [{ role: 'user', content }], stream: true, ...extra },
    signal ? { signal } : {},
  );

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<OpenAI.ChatCompletionChunk[]> {
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

const textOf = (chunks: OpenAI.ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

/** The raw server-sent events of a streamed completion: status and the `data:` lines. */
async function raw(
  p: StartedProvider,
  content: string,
  extra: Record<string, unknown> = {},
): Promise<{ status: number; type: string | null; body: string; data: string[] }> {
  const res = await fetch(`${p.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content }], stream: true, ...extra }),
  });
  const text = await res.text();
  const data = text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice('data: '.length));
  return { status: res.status, type: res.headers.get('content-type'), body: text, data };
}

async function apiError(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('the call succeeded but an error was expected');
}

const runsWith = (p: StartedProvider, marker: string) => p.runs().filter((r) => r.stdin.includes(marker));
const release = (p: StartedProvider) => writeFileSync(join(p.dir, 'runs', 'release'), '');
/** Runs that hold their reply wait for `release` (one file for all of a stand-in's runs): gone before each such test. */
const hold = (p: StartedProvider) => rmSync(join(p.dir, 'runs', 'release'), { force: true });

describe('MODELPROV_STREAM=deltas', () => {
  it('sends the first words while the CLI is still writing, then the rest, the finish reason, usage and [DONE]', async () => {
    hold(deltas);
    const marker = 'first words early [stand-in:hold-after-text]';
    const stream = await ask(deltas, marker);
    const iterator = stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    // The run is still holding the rest of its reply back: this chunk came before the CLI finished.
    const run = runsWith(deltas, marker)[0]!;
    expect(run.endedAt).toBeUndefined();
    expect(first.value?.choices[0]).toMatchObject({
      index: 0,
      delta: { role: 'assistant', content: 'Stand-in ' },
      finish_reason: null,
    });
    release(deltas);
    const rest: OpenAI.ChatCompletionChunk[] = [first.value!];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    const finish = rest.at(-2)!;
    const usage = rest.at(-1)!;
    expect(finish.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({
      prompt_tokens: 2042,
      completion_tokens: 9,
      total_tokens: 2051,
      prompt_tokens_details: { cached_tokens: 2000 },
    });
    expect(textOf(rest)).toMatch(/^Stand-in reply to \d+ bytes \(sha256 [0-9a-f]{16}\)\.$/);
    expect(new Set(rest.map((c) => c.id)).size).toBe(1);
    expect(rest.length).toBeGreaterThan(5);
  });

  it('ends with the same text and usage as the whole reply, and the same completion without stream', async () => {
    const prompt = 'same text both ways';
    const [streamed, wholeChunks, plain] = await Promise.all([
      collect(await ask(deltas, prompt)),
      collect(await ask(whole, prompt)),
      deltas.client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: prompt }] }),
    ]);
    expect(wholeChunks).toHaveLength(3);
    expect(streamed.length).toBeGreaterThan(3);
    expect(textOf(streamed)).toBe(textOf(wholeChunks));
    expect(plain.choices[0]!.message.content).toBe(textOf(wholeChunks));
    expect(streamed.at(-1)!.usage).toEqual(wholeChunks.at(-1)!.usage);
  });

  it('sends each text chunk as the chunk object serialized whole would be, byte for byte', async () => {
    const r = await raw(deltas, 'bytes of each chunk [stand-in:text=12]');
    expect(r.status).toBe(200);
    const texts = r.data.slice(0, -3);
    expect(texts.length).toBeGreaterThan(1);
    for (const [i, line] of texts.entries()) {
      const c = JSON.parse(line) as {
        id: string;
        created: number;
        model: string;
        choices: [{ delta: { content: string } }];
      };
      const delta =
        i === 0 ? { role: 'assistant', content: c.choices[0].delta.content } : { content: c.choices[0].delta.content };
      const chunk = {
        id: c.id,
        object: 'chat.completion.chunk',
        created: c.created,
        model: c.model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
      };
      expect(line).toBe(JSON.stringify(chunk));
    }
    // Every chunk, the finish and usage chunks too, is what the service's own schema declares, member for member.
    expect(r.data.at(-1)).toBe('[DONE]');
    for (const line of r.data.slice(0, -1)) {
      const chunk: unknown = JSON.parse(line);
      expect(ChatCompletionChunk.parse(chunk)).toEqual(chunk);
    }
  });

  it('asks the CLI for partial messages in every plain run and in the probe, never for a schema run', async () => {
    await collect(await ask(deltas, 'argv check'));
    expect(runsWith(deltas, 'argv check')[0]!.argv).toContain('--include-partial-messages');
    expect(deltas.probeRuns()[0]!.argv).toContain('--include-partial-messages');
    const schema = await raw(deltas, 'schema run', {
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'n', schema: { type: 'object', properties: { n: { type: 'number' } } } },
      },
    });
    expect(runsWith(deltas, 'schema run')[0]!.argv).not.toContain('--include-partial-messages');
    // Where deltas cannot apply the reply comes whole, in the four events of the whole mode.
    expect(schema.status).toBe(200);
    expect(schema.data).toHaveLength(4);
    expect(JSON.parse(schema.data[0]!).choices[0].delta).toEqual({ role: 'assistant', content: '{"n":42}' });
    expect(schema.data[3]).toBe('[DONE]');
  });

  it('answers a run that fails before any text with the error status it always had', async () => {
    const cases: [string, number, string][] = [
      ['[stand-in:not-logged-in]', 401, 'not_logged_in'],
      ['[stand-in:empty]', 502, 'empty_reply'],
      ['[stand-in:crash]', 502, 'cli_failed'],
      ['[stand-in:tool-call-always]', 502, 'tool_call_reply'],
    ];
    for (const [marker, status, code] of cases) {
      const err = await apiError(ask(deltas, `fails early ${marker}`).then(collect));
      expect([marker, err.status, err.code]).toEqual([marker, status, code]);
    }
    // Tool-call syntax is held back while it could still be one, so the run is asked for again unseen.
    const retried = await collect(await ask(deltas, 'retried unseen [stand-in:tool-call-once]'));
    expect(textOf(retried)).toMatch(/^Stand-in reply to/);
    expect(runsWith(deltas, 'retried unseen')).toHaveLength(2);
  });

  it('sends nothing from a run whose own init event breaks lockdown: 503 not_locked_down, the run stopped', async () => {
    const p = await startProvider({ env: { MODELPROV_STREAM: 'deltas' } });
    try {
      await p.service.lockdownProbed();
      const r = await raw(p, 'breach [stand-in:loads-tool]');
      expect(r.status).toBe(503);
      expect(r.type).toMatch(/^application\/json/);
      expect(r.data).toEqual([]);
      expect((JSON.parse(r.body) as { error: { code: string } }).error.code).toBe('not_locked_down');
      expect(r.body).not.toContain('Stand-in reply');
      const again = await apiError(ask(p, 'after the breach'));
      expect([again.status, again.code]).toEqual([503, 'not_locked_down']);
    } finally {
      await p.close();
    }
  });

  it('ends a stream whose run fails after its first words with an error event: no finish reason, no [DONE]', async () => {
    const r = await raw(deltas, 'cut off [stand-in:fail-after-text]');
    expect(r.status).toBe(200);
    const last = JSON.parse(r.data.at(-1)!) as { error: { code: string; message: string } };
    expect(last.error.code).toBe('cli_failed');
    expect(r.data).not.toContain('[DONE]');
    expect(r.data.some((d) => d.includes('"finish_reason":"stop"'))).toBe(false);
    const text = r.data
      .slice(0, -1)
      .map((d) => (JSON.parse(d) as OpenAI.ChatCompletionChunk).choices[0]!.delta.content)
      .join('');
    expect(text).toBe('The first words ');
    // The official client throws rather than ending the turn as if finished.
    const err = await apiError(ask(deltas, 'cut off for the client [stand-in:fail-after-text]').then(collect));
    expect(err.code).toBe('cli_failed');
    expect(deltas.log()).toContain('the run failed after part of its reply was sent');
  });

  it('ends with tool_call_reply, not asked again, a run that goes on to a tool after its first words', async () => {
    const r = await raw(deltas, 'then a tool [stand-in:text-then-tool]');
    expect(r.status).toBe(200);
    expect((JSON.parse(r.data.at(-1)!) as { error: { code: string } }).error.code).toBe('tool_call_reply');
    expect(runsWith(deltas, 'then a tool')).toHaveLength(1);
    // Without anyone having seen its words, the same run is a 502 as before, after being asked once more.
    const plain = await apiError(
      deltas.client.chat.completions.create({
        model: 'sonnet',
        messages: [{ role: 'user', content: 'unseen tool [stand-in:text-then-tool]' }],
      }),
    );
    expect([plain.status, plain.code]).toEqual([502, 'tool_call_reply']);
    expect(runsWith(deltas, 'unseen tool')).toHaveLength(2);
  });

  it('stops the run when the client leaves in the middle of the stream', async () => {
    hold(deltas);
    const marker = 'leaves mid-stream [stand-in:hold-after-text]';
    const controller = new AbortController();
    const stream = await ask(deltas, marker, {}, controller.signal);
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    const run = runsWith(deltas, marker)[0]!;
    controller.abort();
    await waitFor('the run to be stopped', () => !processAlive(run.pid));
    expect(runsWith(deltas, marker)[0]!.endedAt).toBeUndefined();
  });

  it('gives an identical request that joins a run in flight the words already sent, then the rest', async () => {
    hold(deltas);
    const marker = 'joined mid-stream [stand-in:hold-after-text]';
    const firstStream = await ask(deltas, marker);
    const iterator = firstStream[Symbol.asyncIterator]();
    const first = await iterator.next();
    const second = collect(await ask(deltas, marker));
    await waitFor('the second request to join', () =>
      deltas.log().includes('identical request in flight; sharing its run'),
    );
    release(deltas);
    const rest: OpenAI.ChatCompletionChunk[] = [first.value!];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    const joined = await second;
    expect(textOf(joined)).toBe(textOf(rest));
    expect(joined[0]!.id).toBe(rest[0]!.id);
    expect(runsWith(deltas, marker)).toHaveLength(1);
  });
});

describe('MODELPROV_STREAM=whole (the default)', () => {
  it('sends the whole reply as four events, the CLI asked for no partial messages', async () => {
    const r = await raw(whole, 'whole as before');
    expect(r.data).toHaveLength(4);
    expect(Object.keys(JSON.parse(r.data[0]!) as object)).toEqual(['id', 'object', 'created', 'model', 'choices']);
    expect(JSON.parse(r.data[1]!).choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
    expect(JSON.parse(r.data[2]!).choices).toEqual([]);
    expect(r.data[3]).toBe('[DONE]');
    expect(runsWith(whole, 'whole as before')[0]!.argv).not.toContain('--include-partial-messages');
  });

  it('refuses another value of MODELPROV_STREAM at start, naming the setting', async () => {
    await expect(startProvider({ env: { MODELPROV_STREAM: 'tokens' } })).rejects.toThrow(
      /MODELPROV_STREAM.*whole, deltas/,
    );
  });
});
