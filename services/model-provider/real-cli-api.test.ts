import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../test/support/process.ts';
import { startMessagesApi, type ModelRequest } from './test-support/messages-api.ts';
import { startProvider, type StartedProvider } from './test-support/provider.ts';

/**
 * The real CLI package, signed in, through the service, with a double of the model's Messages API in
 * place of Anthropic's (test-support/messages-api.ts): the person's settings point the CLI at it (the
 * `env` of ~/.claude/settings.json), and a long-lived sign-in token (CLAUDE_CODE_OAUTH_TOKEN, which the
 * service passes on) signs it in, so the CLI reports the API key source of a subscription login (none)
 * and runs as it would for a person. The test sees the very request the model would get: what the
 * service's flags and switches make of a completion, in the pinned binary itself.
 */
const REAL_CLI = join(ROOT, 'node_modules', '.bin', 'claude');
const NOTES = 'Private notes nobody else may read: the code is 4711.';

let api: Awaited<ReturnType<typeof startMessagesApi>>;
let p: StartedProvider;
const home = mkdtempSync(join(tmpdir(), 'modelprov-api-home-'));

beforeAll(async () => {
  if (!existsSync(REAL_CLI)) throw new Error(`The pinned CLI package is not installed at ${REAL_CLI}; run npm ci.`);
  api = await startMessagesApi();
  mkdirSync(join(home, '.claude'));
  writeFileSync(join(home, '.claude', 'settings.json'), JSON.stringify({ env: { ANTHROPIC_BASE_URL: api.url } }));
  // The person's own instructions, which the CLI would add to every prompt.
  writeFileSync(join(home, '.claude', 'CLAUDE.md'), `# About me\n${NOTES}\n`);
  p = await startProvider({
    binary: REAL_CLI,
    base: { PATH: '/usr/bin:/bin', HOME: home, CLAUDE_CODE_OAUTH_TOKEN: 'sk-ant-oat01-not-a-real-token' },
    env: { MODELPROV_FAILURE_MEMORY_SECONDS: '0' },
  });
  await p.service.lockdownProbed();
});
afterAll(async () => {
  await p?.close();
  await api?.close();
});

const ask = (content: string, members: Record<string, unknown> = {}) =>
  p.client.chat.completions.create({
    model: 'sonnet',
    messages: [{ role: 'user', content }],
    ...members,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);

/** The model requests that carried `marker` in their prompt. */
const requestsWith = (marker: string): ModelRequest[] =>
  api.requests.filter((r) => JSON.stringify(r.body.messages).includes(marker));

describe('the real CLI, signed in, against a double of the Messages API', () => {
  it('is ready: lockdown ok, signed in, its API key source that of a subscription login', async () => {
    const res = await fetch(`${p.url}/ready`);
    const body = (await res.json()) as {
      checks: { lockdown: Record<string, unknown>; login: Record<string, unknown> };
    };
    expect(res.status).toBe(200);
    expect(body.checks.lockdown).toMatchObject({ ok: true, api_key_source: 'none' });
    expect(body.checks.login).toMatchObject({ ok: true, state: 'signed_in' });
  });

  it('sends the model none of the person\u2019s CLAUDE.md or auto memory', async () => {
    const c = await ask('What do you know about me? notes-check');
    expect(c.choices[0]!.message.content).toBe('Hello there, this is a reply.');
    const [sent] = requestsWith('notes-check');
    expect(sent).toBeDefined();
    expect(JSON.stringify(sent!.body)).not.toContain('4711');
    expect(JSON.stringify(sent!.body)).not.toContain('claudeMd');
  });

  it('asks the model once per completion: the session has a name, so the CLI asks for no title of it', async () => {
    const before = api.requests.length;
    await ask('A prompt long enough for the CLI to want a title for it: title-check');
    expect(api.requests.slice(before)).toHaveLength(1);
    expect(api.requests.filter((r) => JSON.stringify(r.body.messages).includes('Write the title'))).toEqual([]);
  });

  it('gives the model the output limit; a reply cut there is answered with finish_reason length, not continued', async () => {
    const c = await ask('Say something long limit-check', { max_tokens: 3 });
    expect(c.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: 'Hello there, this ' } });
    expect(c.usage?.completion_tokens).toBe(3);
    const [sent] = requestsWith('limit-check');
    expect(sent!.body.max_tokens).toBe(3);
    // Thinking off: the limit counts the reply, and a limit below the thinking budget is valid for every model.
    expect(sent!.body.thinking).toBeUndefined();
  });

  it('gives the model the stop sequences; the reply ends before the first, finish_reason stop', async () => {
    const c = await ask('Greet me stop-check', { stop: ['this', 'never'] });
    expect(c.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Hello there, ' } });
    expect(requestsWith('stop-check')[0]!.body.stop_sequences).toEqual(['this', 'never']);
  });

  it('gives the model behind haiku a temperature, and the others an effort level', async () => {
    await ask('Warm up sampling-check', { model: 'haiku', temperature: 0.3 });
    const sampled = requestsWith('sampling-check')[0]!.body;
    expect([sampled.temperature, sampled.thinking]).toEqual([0.3, undefined]);
    await ask('Think less effort-check', { reasoning_effort: 'low' });
    expect(requestsWith('effort-check')[0]!.body.output_config?.effort).toBe('low');
  });

  it('answers a prompt over the context window with 400 context_length_exceeded, in the CLI\u2019s own words', async () => {
    let err: unknown;
    try {
      await ask('A very long conversation [api:too-long]');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect([e.status, e.code, e.param]).toEqual([400, 'context_length_exceeded', 'messages']);
    expect(e.message).toContain('Prompt is too long');
  });
});
