import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_MEMBERS } from './shapes.ts';
import { processAlive } from './test-support/stand-in.ts';
import { startProvider, type StartedProvider } from './test-support/provider.ts';
import { findPython, PYTHON_CLIENT } from './test-support/python.ts';
import { waitFor } from '../../test/support/wait-for.ts';

/*
 * Every request member is honoured or refused in words (README, "Request members"): stop sequences and
 * the output limit through the CLI's own settings, sampling and effort where the model takes them, and
 * everything else that would change the answer refused with 400 naming it. The official openai client
 * (Node, and Python where it is installed) against the stand-in CLI, in both stream modes.
 */

const { python, reason } = findPython();
if (!python && process.env.CI !== 'true')
  console.log(`members.test.ts: the Python client cases are skipped: ${reason}`);

let whole: StartedProvider;
let deltas: StartedProvider;
beforeAll(async () => {
  [whole, deltas] = await Promise.all([
    startProvider({ env: { MODELPROV_MAX_QUEUE: '50', MODELPROV_FAILURE_MEMORY_SECONDS: '0' } }),
    startProvider({ env: { MODELPROV_STREAM: 'deltas', MODELPROV_FAILURE_MEMORY_SECONDS: '0' } }),
  ]);
  await Promise.all([whole.service.lockdownProbed(), deltas.service.lockdownProbed()]);
});
afterAll(async () => {
  await Promise.all([whole?.close(), deltas?.close()]);
});

type Members = Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> & Record<string, unknown>;

const ask = (p: StartedProvider, content: string, members: Members = {}) =>
  p.client.chat.completions.create({
    model: 'sonnet',
    messages: [{ role: 'user', content }],
    ...members,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);

/** A streamed completion, collected: its text, its finish reason and the text of each chunk. */
async function streamed(p: StartedProvider, content: string, members: Members = {}) {
  const stream = await p.client.chat.completions.create({
    model: 'sonnet',
    messages: [{ role: 'user', content }],
    ...members,
    stream: true,
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  const pieces: string[] = [];
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    const piece = chunk.choices[0]?.delta.content;
    if (piece) pieces.push(piece);
    finish = chunk.choices[0]?.finish_reason ?? finish;
    usage = chunk.usage ?? usage;
  }
  return { text: pieces.join(''), pieces, finish, usage };
}

async function refusal(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('the call succeeded but a refusal was expected');
}

const runsWith = (p: StartedProvider, marker: string) => p.runs().filter((r) => r.stdin.includes(marker));
const words = (n: number, from = 1) =>
  Array.from({ length: n }, (_, i) => `word${from + i}`)
    .map((w) => `${w} `)
    .join('');

describe('stop', () => {
  it('ends the reply before the first stop sequence with finish_reason stop, plain and streamed in both modes, the model given the sequence', async () => {
    const prompt = 'Count [stand-in:text=20] stop-plain';
    const plain = await ask(whole, prompt, { stop: 'word5' });
    expect(plain.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: words(4) } });
    for (const p of [whole, deltas]) {
      const s = await streamed(p, prompt, { stop: ['word5', 'never seen'] });
      expect([s.text, s.finish]).toEqual([words(4), 'stop']);
    }
    const run = runsWith(whole, 'stop-plain')[0]!;
    expect(JSON.parse(run.cliVars.CLAUDE_CODE_EXTRA_BODY!)).toEqual({ stop_sequences: ['word5'] });
    // The text is watched as it comes, in whole mode too, so that the run can be stopped there.
    expect(run.argv).toContain('--include-partial-messages');
  });

  it('cuts at a stop sequence of blanks (which the model is not given) itself, and stops the run once it is seen', async () => {
    const prompt = 'Hold on [stand-in:hold-after-text] blank-stop';
    // The stand-in writes "Stand-in " and then waits for ever: only the service's own cut can end this run.
    const c = await ask(whole, prompt, { stop: [' '] });
    expect(c.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Stand-in' } });
    const run = runsWith(whole, 'blank-stop')[0]!;
    expect(run.cliVars.CLAUDE_CODE_EXTRA_BODY).toBeUndefined();
    await waitFor('the run to be stopped', () => !processAlive(run.pid));
    expect(runsWith(whole, 'blank-stop')[0]!.endedAt).toBeUndefined();
  });

  it('in deltas mode holds back only a tail that could begin a stop sequence, until the next text says', async () => {
    const s = await streamed(deltas, 'Count [stand-in:text=8] tail', { stop: 'word3 wordX' });
    // "word3 " could begin the stop sequence: it waits for "word4 ", which shows it cannot, and both go together.
    expect(s.pieces).toEqual(['word1 ', 'word2 ', 'word3 word4 ', 'word5 ', 'word6 ', 'word7 ', 'word8.']);
    expect([s.text, s.finish]).toEqual([`${words(7)}word8.`, 'stop']);
  });

  it('answers a reply that begins with a stop sequence as empty, finish_reason stop (not empty_reply)', async () => {
    const c = await ask(whole, 'Count [stand-in:text=5] at start', { stop: ['word1'] });
    expect(c.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: '' } });
  });

  it('refuses stop with a structured answer, more than four sequences and an empty one, naming the member, before any run', async () => {
    const before = whole.runs().length;
    const schema = await refusal(
      ask(whole, 'schema and stop', {
        stop: 'x',
        response_format: { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' } } },
      }),
    );
    expect([schema.status, schema.code, schema.param]).toEqual([400, 'unsupported_parameter', 'stop']);
    const five = await refusal(ask(whole, 'five stops', { stop: ['a', 'b', 'c', 'd', 'e'] }));
    expect([five.status, five.param]).toEqual([400, 'stop']);
    const empty = await refusal(ask(whole, 'empty stop', { stop: ['a', ''] }));
    expect([empty.status, empty.param]).toEqual([400, 'stop.1']);
    expect(whole.runs()).toHaveLength(before);
  });
});

describe('max_tokens and max_completion_tokens', () => {
  it('cuts the reply at the limit with finish_reason length, through the CLI\u2019s own limit, and stops the run before the CLI asks the model to go on', async () => {
    const c = await ask(whole, 'Count [stand-in:text=20] limit-plain', { max_tokens: 3 });
    expect(c.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: words(3) } });
    expect(c.usage).toMatchObject({ completion_tokens: 3, prompt_tokens: 2042 });
    const run = runsWith(whole, 'limit-plain')[0]!;
    expect(run.cliVars).toMatchObject({ CLAUDE_CODE_MAX_OUTPUT_TOKENS: '3', CLAUDE_CODE_DISABLE_THINKING: '1' });
    // The stand-in, like the CLI, asks the model to go on after a cut; that continuation never answers here.
    await waitFor('the run to be stopped', () => !processAlive(run.pid));
    expect(runsWith(whole, 'limit-plain')[0]!.endedAt).toBeUndefined();
  });

  it('ends a streamed reply cut at the limit with finish_reason length, in both modes', async () => {
    for (const p of [whole, deltas]) {
      const s = await streamed(p, 'Count [stand-in:text=20] limit-stream', { max_completion_tokens: 4 });
      expect([s.text, s.finish, s.usage?.completion_tokens]).toEqual([words(4), 'length', 4]);
    }
  });

  it('applies the smaller of max_tokens and max_completion_tokens; a reply within the limit ends with stop', async () => {
    const both = await ask(whole, 'Count [stand-in:text=20] both limits', { max_tokens: 6, max_completion_tokens: 2 });
    expect(both.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: words(2) } });
    const within = await ask(whole, 'Count [stand-in:text=3] within', { max_tokens: 50 });
    expect(within.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'word1 word2 word3.' } });
    expect(runsWith(whole, 'within')[0]!.cliVars.CLAUDE_CODE_MAX_OUTPUT_TOKENS).toBe('50');
  });

  it('refuses a limit below 1 naming the member, before any run', async () => {
    const before = whole.runs().length;
    const zero = await refusal(ask(whole, 'zero limit', { max_tokens: 0 }));
    expect([zero.status, zero.code, zero.param]).toEqual([400, 'invalid_request', 'max_tokens']);
    const negative = await refusal(ask(whole, 'negative limit', { max_completion_tokens: -5 }));
    expect(negative.param).toBe('max_completion_tokens');
    expect(whole.runs()).toHaveLength(before);
  });

  it.skipIf(!python && process.env.CI !== 'true')(
    'the official openai client (Python) gets finish_reason length and stop, plain and streamed',
    async () => {
      expect(python, reason).toBeDefined();
      const run = async (p: StartedProvider, mode: string, members: Record<string, unknown>) =>
        JSON.parse(
          (
            await execa(python!, [
              PYTHON_CLIENT,
              `${p.url}/v1`,
              'Count [stand-in:text=12] py',
              mode,
              JSON.stringify(members),
            ])
          ).stdout,
        ) as { text: string; finish: string };
      expect(await run(whole, 'plain', { max_tokens: 2 })).toMatchObject({ text: words(2), finish: 'length' });
      expect(await run(deltas, 'stream', { max_tokens: 2 })).toMatchObject({ text: words(2), finish: 'length' });
      expect(await run(deltas, 'stream', { stop: ['word4'] })).toMatchObject({ text: words(3), finish: 'stop' });
      const refused = await execa(
        python!,
        [PYTHON_CLIENT, `${whole.url}/v1`, 'py logprobs', 'plain', '{"logprobs": true}'],
        {
          reject: false,
        },
      );
      expect(JSON.parse(refused.stdout)).toEqual({ error: 400, code: 'unsupported_parameter', param: 'logprobs' });
    },
  );
});

describe('members that would change the answer and cannot be honoured are refused in words', () => {
  const refused: [string, Members][] = [
    ['logprobs', { logprobs: true }],
    ['top_logprobs', { top_logprobs: 2 }],
    ['n', { n: 2 }],
    ['seed', { seed: 7 }],
    ['frequency_penalty', { frequency_penalty: 0.5 }],
    ['presence_penalty', { presence_penalty: -1 }],
    ['logit_bias', { logit_bias: { '50256': -100 } }],
    ['modalities', { modalities: ['text', 'audio'] }],
    ['audio', { audio: { voice: 'alloy', format: 'mp3' } }],
    ['verbosity', { verbosity: 'low' }],
    ['web_search_options', { web_search_options: {} }],
    ['top_k', { top_k: 5 }],
    ['repetition_penalty', { repetition_penalty: 1.1 }],
  ];
  for (const [member, members] of refused) {
    it(`${member}: 400 unsupported_parameter with param ${member}, before any run`, async () => {
      const before = whole.runs().length;
      const err = await refusal(ask(whole, `refused ${member}`, members));
      expect([err.status, err.code, err.param]).toEqual([400, 'unsupported_parameter', member]);
      expect(err.message).toContain(member);
      expect(whole.runs()).toHaveLength(before);
    });
  }

  it('accepts each of them at the value that asks for nothing, and members that change nothing', async () => {
    const c = await ask(whole, 'defaults only', {
      logprobs: false,
      top_logprobs: 0,
      n: 1,
      frequency_penalty: 0,
      presence_penalty: 0,
      logit_bias: {},
      seed: null,
      modalities: ['text'],
      temperature: 1,
      top_p: 1,
      user: 'someone',
      safety_identifier: 'hash',
      store: false,
      metadata: { purpose: 'test' },
      service_tier: 'auto',
      parallel_tool_calls: false,
      prompt_cache_key: 'k',
      stream_options: null,
    });
    expect(c.choices[0]!.message.content).toMatch(/^Stand-in reply/);
    // Nothing asked of the model: no run variables but the switches every run has.
    expect(Object.keys(runsWith(whole, 'defaults only')[0]!.cliVars).sort()).toEqual([
      'CLAUDE_CODE_DISABLE_AUTO_MEMORY',
      'CLAUDE_CODE_DISABLE_CLAUDE_MDS',
    ]);
  });
});

describe('sampling and effort, where the model takes them', () => {
  it('refuses a temperature or top_p other than 1 for the aliases whose model takes none, naming the member', async () => {
    for (const model of ['sonnet', 'opus', 'fable']) {
      const err = await refusal(ask(whole, `temperature ${model}`, { model, temperature: 0.2 }));
      expect([err.status, err.code, err.param]).toEqual([400, 'unsupported_parameter', 'temperature']);
      expect(err.message).toContain('haiku');
    }
    const topP = await refusal(ask(whole, 'top_p sonnet', { top_p: 0.5 }));
    expect(topP.param).toBe('top_p');
  });

  it('passes a temperature or top_p to the model behind haiku, thinking off; refuses one above 1, and both together', async () => {
    await ask(whole, 'haiku sampling', { model: 'haiku', temperature: 0.2 });
    expect(runsWith(whole, 'haiku sampling')[0]!.cliVars).toMatchObject({
      CLAUDE_CODE_EXTRA_BODY: '{"temperature":0.2}',
      CLAUDE_CODE_DISABLE_THINKING: '1',
    });
    await ask(whole, 'haiku nucleus', { model: 'haiku', top_p: 0.9 });
    expect(runsWith(whole, 'haiku nucleus')[0]!.cliVars.CLAUDE_CODE_EXTRA_BODY).toBe('{"top_p":0.9}');
    const high = await refusal(ask(whole, 'haiku hot', { model: 'haiku', temperature: 1.5 }));
    expect([high.code, high.param]).toEqual(['unsupported_parameter', 'temperature']);
    const out = await refusal(ask(whole, 'haiku out of range', { model: 'haiku', temperature: 2.5 }));
    expect([out.code, out.param]).toEqual(['invalid_request', 'temperature']);
    const both = await refusal(ask(whole, 'haiku both', { model: 'haiku', temperature: 0.2, top_p: 0.9 }));
    expect([both.code, both.param]).toEqual(['unsupported_parameter', 'top_p']);
  });

  it('passes reasoning_effort to the CLI as --effort where the model takes one; refuses it for haiku and below low', async () => {
    await ask(whole, 'effort please', { reasoning_effort: 'low' });
    const argv = runsWith(whole, 'effort please')[0]!.argv;
    expect(argv[argv.indexOf('--effort') + 1]).toBe('low');
    const haiku = await refusal(ask(whole, 'effort haiku', { model: 'haiku', reasoning_effort: 'high' }));
    expect([haiku.code, haiku.param]).toEqual(['unsupported_parameter', 'reasoning_effort']);
    const minimal = await refusal(ask(whole, 'effort minimal', { reasoning_effort: 'minimal' }));
    expect(minimal.param).toBe('reasoning_effort');
  });
});

describe('the README', () => {
  it('lists every request member accepted, beside what it does', () => {
    const readme = readFileSync(join(import.meta.dirname, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Request members'));
    for (const member of REQUEST_MEMBERS) expect(section).toContain(`\`${member}\``);
  });
});
