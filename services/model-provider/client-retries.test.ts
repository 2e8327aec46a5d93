import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { APICallError, generateText, RetryError, streamText } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { processAlive } from './test-support/stand-in.ts';
import { startProvider, type StartedProvider } from './test-support/provider.ts';
import { llamaIndexChat, llamaIndexClient } from './test-support/llama-index.ts';
import { RETRY_WAIT_CODE, withoutRetryWaits } from './test-support/retry-waits.ts';
import { waitFor } from '../../test/support/wait-for.ts';

/*
 * The Vercel AI SDK and LangChain as the hub would use them, with their default retry settings, against
 * the real provider and the stand-in CLI. Their waits between attempts are skipped (withoutRetryWaits),
 * their retry counts are not: the AI SDK makes 3 attempts, LangChain 7. Runs are counted from the
 * stand-in's own records; attempts from the service's request log.
 */

let p: StartedProvider | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

/**
 * A provider whose failure memory cannot lapse during a test (the window is a setting; the rule is what is
 * tested), and whose runs stop as soon as their last client leaves unless a test gives a retry window.
 */
async function provider(env: Record<string, string> = {}): Promise<StartedProvider> {
  p = await startProvider({
    env: { MODELPROV_FAILURE_MEMORY_SECONDS: '3600', MODELPROV_RETRY_GRACE_SECONDS: '0', ...env },
  });
  await p.service.lockdownProbed();
  return p;
}

const aiSdk = (url: string, apiKey = 'hub-key') =>
  createOpenAICompatible({ name: 'local-cli', baseURL: `${url}/v1`, apiKey });
const langChain = (url: string, apiKey = 'hub-key') =>
  new ChatOpenAI({ model: 'sonnet', apiKey, configuration: { baseURL: `${url}/v1` } });

const runsOf = (prov: StartedProvider, prompt: string) => prov.runs().filter((r) => r.stdin === prompt);

/** The service's request lines for completions, in order: one per attempt a client made. */
function attempts(prov: StartedProvider): { status: number; refusal?: string }[] {
  return prov
    .log()
    .split('\n')
    .filter((line) => line.includes('"path":"/v1/chat/completions"') && line.includes('"status":'))
    .map((line) => JSON.parse(line) as { status: number; refusal?: string });
}

const logLines = (prov: StartedProvider, msg: string) =>
  prov
    .log()
    .split('\n')
    .filter((line) => line.includes(`"msg":"${msg}"`)).length;

function rejection(outcome: PromiseSettledResult<unknown>): unknown {
  if (outcome.status === 'fulfilled') throw new Error('the call succeeded but a failure was expected');
  return outcome.reason;
}

describe('a blind retry of a failure another run would repeat costs no run', () => {
  it('AI SDK, default retries: a tool-call reply costs the runs of one request (asked once more: two), not of three attempts', async () => {
    const prov = await provider();
    const prompt = 'List the files [stand-in:tool-call-always]';
    const { outcome, waits } = await withoutRetryWaits(RETRY_WAIT_CODE.aiSdk, () =>
      generateText({ model: aiSdk(prov.url)('sonnet'), prompt }),
    );
    const err = rejection(outcome);
    expect(RetryError.isInstance(err)).toBe(true);
    const errors = (err as RetryError).errors;
    expect(errors).toHaveLength(3);
    expect(errors.every((e) => APICallError.isInstance(e) && e.statusCode === 502)).toBe(true);
    expect(waits).toHaveLength(2);
    expect(attempts(prov).map((a) => a.refusal)).toEqual(['tool_call_reply', 'tool_call_reply', 'tool_call_reply']);
    expect(runsOf(prov, prompt)).toHaveLength(2);
    expect(prov.started()).toHaveLength(2);
    // The answers from memory say so, and what to do.
    expect((errors[2] as APICallError).responseBody).toContain('without running the CLI again');
    expect(logLines(prov, 'identical request failed moments ago; answered from that failure without a run')).toBe(2);
  });

  it('LangChain, default retries: a tool-call reply costs the runs of one request, not of seven attempts', async () => {
    const prov = await provider();
    const prompt = 'Run ls for me [stand-in:tool-call-always]';
    const { outcome, waits } = await withoutRetryWaits(RETRY_WAIT_CODE.langChain, () =>
      langChain(prov.url).invoke(prompt),
    );
    const err = rejection(outcome) as { status?: number; code?: string };
    expect([err.status, err.code]).toEqual([502, 'tool_call_reply']);
    expect(waits).toHaveLength(6);
    expect(attempts(prov)).toHaveLength(7);
    expect(attempts(prov).every((a) => a.status === 502 && a.refusal === 'tool_call_reply')).toBe(true);
    expect(runsOf(prov, prompt)).toHaveLength(2);
    expect(prov.started()).toHaveLength(2);
  });

  it('AI SDK, default retries: a timeout costs exactly one CLI run', async () => {
    const prov = await provider({ MODELPROV_TIMEOUT_SECONDS: '1' });
    const prompt = 'Think for ever [stand-in:hang]';
    const { outcome, waits } = await withoutRetryWaits(RETRY_WAIT_CODE.aiSdk, () =>
      generateText({ model: aiSdk(prov.url)('sonnet'), prompt }),
    );
    const err = rejection(outcome) as RetryError;
    expect(RetryError.isInstance(err)).toBe(true);
    expect(err.errors.map((e) => (e as APICallError).statusCode)).toEqual([504, 504, 504]);
    expect(waits).toHaveLength(2);
    // Counted as it started: a run killed at the timeout before it wrote its record counts too.
    const [pid, ...more] = prov.started();
    expect(more).toEqual([]);
    await waitFor('the timed-out run to be gone', () => !processAlive(pid!));
  });

  it('LangChain, default retries: a timeout costs exactly one CLI run', async () => {
    const prov = await provider({ MODELPROV_TIMEOUT_SECONDS: '1' });
    const prompt = 'Think for ever, LangChain [stand-in:hang]';
    const { outcome, waits } = await withoutRetryWaits(RETRY_WAIT_CODE.langChain, () =>
      langChain(prov.url).invoke(prompt),
    );
    const err = rejection(outcome) as { status?: number; code?: string };
    expect([err.status, err.code]).toEqual([504, 'timeout']);
    expect(waits).toHaveLength(6);
    expect(attempts(prov).map((a) => a.status)).toEqual([504, 504, 504, 504, 504, 504, 504]);
    expect(prov.started()).toHaveLength(1);
  });

  it('runs a changed request at once, while the identical one is still answered from its failure', async () => {
    const prov = await provider();
    const model = aiSdk(prov.url)('sonnet');
    const first = await withoutRetryWaits(RETRY_WAIT_CODE.aiSdk, () =>
      generateText({ model, prompt: 'Use a tool [stand-in:tool-call-always]' }),
    );
    expect(first.outcome.status).toBe('rejected');
    const changed = await generateText({ model, prompt: 'Use a tool, please [stand-in:tool-call-once]' });
    expect(changed.text).toContain('Stand-in reply');
    expect(runsOf(prov, 'Use a tool, please [stand-in:tool-call-once]')).toHaveLength(2);
    expect(runsOf(prov, 'Use a tool [stand-in:tool-call-always]')).toHaveLength(2);
  });

  it('remembers nothing with MODELPROV_FAILURE_MEMORY_SECONDS=0: every attempt runs again', async () => {
    const prov = await provider({ MODELPROV_FAILURE_MEMORY_SECONDS: '0' });
    const prompt = 'No memory [stand-in:tool-call-always]';
    const { outcome } = await withoutRetryWaits(RETRY_WAIT_CODE.aiSdk, () =>
      generateText({ model: aiSdk(prov.url)('sonnet'), prompt }),
    );
    expect(outcome.status).toBe('rejected');
    expect(runsOf(prov, prompt)).toHaveLength(6);
  });

  it('answers a not-signed-in failure from memory, and runs again once a run shows the CLI signed in', async () => {
    const prov = await provider();
    const prompt = 'Who am I [stand-in:not-logged-in]';
    const model = aiSdk(prov.url)('sonnet');
    // 401 is not retried by the client: each call below is one attempt.
    for (let i = 0; i < 2; i++) {
      const { outcome } = await withoutRetryWaits(RETRY_WAIT_CODE.aiSdk, () => generateText({ model, prompt }));
      expect((rejection(outcome) as APICallError).statusCode).toBe(401);
    }
    expect(runsOf(prov, prompt)).toHaveLength(1);
    await generateText({ model, prompt: 'Any answer shows the sign-in' });
    const { outcome } = await withoutRetryWaits(RETRY_WAIT_CODE.aiSdk, () => generateText({ model, prompt }));
    expect((rejection(outcome) as APICallError).statusCode).toBe(401);
    expect(runsOf(prov, prompt)).toHaveLength(2);
  });
});

describe('a failure that another run could change is not remembered', () => {
  it.each([
    ['a crash (cli_failed)', 'Crash now [stand-in:crash]', 502],
    ['a rate limit (rate_limited)', 'Too much [stand-in:rate-limit]', 429],
  ])('AI SDK, default retries: %s costs a run per attempt', async (_what, prompt, status) => {
    const prov = await provider();
    const { outcome, waits } = await withoutRetryWaits(RETRY_WAIT_CODE.aiSdk, () =>
      generateText({ model: aiSdk(prov.url)('sonnet'), prompt }),
    );
    const err = rejection(outcome) as RetryError;
    expect(err.errors.map((e) => (e as APICallError).statusCode)).toEqual([status, status, status]);
    expect(waits).toHaveLength(2);
    expect(runsOf(prov, prompt)).toHaveLength(3);
  });

  it('a request refused because every slot and the queue were full runs when sent again', async () => {
    const prov = await provider({ MODELPROV_MAX_CONCURRENT: '1', MODELPROV_MAX_QUEUE: '0' });
    const client = aiSdk(prov.url)('sonnet');
    const holder = generateText({ model: client, prompt: 'Hold the only slot [stand-in:hold]' });
    await waitFor('the slot holder to run', () => runsOf(prov, 'Hold the only slot [stand-in:hold]').length === 1);
    const refused = await generateText({ model: client, prompt: 'Slot full', maxRetries: 0 }).catch((e: unknown) => e);
    expect((refused as APICallError).statusCode).toBe(429);
    writeFileSync(join(prov.dir, 'runs', 'release'), '');
    await holder;
    const again = await generateText({ model: client, prompt: 'Slot full', maxRetries: 0 });
    expect(again.text).toContain('Stand-in reply');
    expect(runsOf(prov, 'Slot full')).toHaveLength(1);
  });
});

describe('identical requests in flight share one run', () => {
  it('five concurrent identical requests from the AI SDK (plain and streaming) and LangChain get one run and the same answer; another key gets its own', async () => {
    const prov = await provider();
    const prompt = 'Say something once [stand-in:hold]';
    const sdk = aiSdk(prov.url)('sonnet');
    const lc = langChain(prov.url);
    const first = generateText({ model: sdk, prompt });
    await waitFor('the first run to start', () => runsOf(prov, prompt).length === 1);
    const streamed = streamText({ model: sdk, prompt });
    const others = [
      generateText({ model: sdk, prompt }).then((r) => r.text),
      lc.invoke(prompt).then((m) => String(m.content)),
      lc.invoke(prompt).then((m) => String(m.content)),
    ];
    await waitFor(
      'four requests to join the run in flight',
      () => logLines(prov, 'identical request in flight; sharing its run') === 4,
    );
    const otherCaller = generateText({ model: aiSdk(prov.url, 'another-program')('sonnet'), prompt });
    await waitFor("the other caller's own run to start", () => runsOf(prov, prompt).length === 2);
    writeFileSync(join(prov.dir, 'runs', 'release'), '');

    const texts = [(await first).text, await streamed.text, ...(await Promise.all(others))];
    expect(texts[0]).toContain('Stand-in reply');
    expect(new Set(texts)).toEqual(new Set([texts[0]]));
    expect((await otherCaller).text).toBe(texts[0]);
    expect(runsOf(prov, prompt)).toHaveLength(2);
    expect(prov.started()).toHaveLength(2);
    expect(attempts(prov).filter((a) => a.status === 200)).toHaveLength(6);
  });

  it('a request that leaves does not stop the run another waits for; when the last one leaves the run is stopped', async () => {
    const prov = await provider();
    const prompt = 'Wait with me [stand-in:hold]';
    const body = JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: prompt }] });
    const send = (signal?: AbortSignal) =>
      fetch(`${prov.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        ...(signal ? { signal } : {}),
      });
    const leaver = new AbortController();
    const staying = send();
    await waitFor('the run to start', () => runsOf(prov, prompt).length === 1);
    const left = send(leaver.signal).catch((e: unknown) => e);
    await waitFor(
      'the second request to join',
      () => logLines(prov, 'identical request in flight; sharing its run') === 1,
    );
    leaver.abort();
    await left;
    await waitFor('the service to see it leave', () => logLines(prov, 'client went away before the answer') === 1);
    writeFileSync(join(prov.dir, 'runs', 'release'), '');
    const answer = await staying;
    expect(answer.status).toBe(200);
    expect(runsOf(prov, prompt)).toHaveLength(1);

    // Now everyone leaves a run that would hold for ever.
    const holdPrompt = 'Nobody waits [stand-in:hang]';
    const holdBody = JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: holdPrompt }] });
    const a = new AbortController();
    const b = new AbortController();
    const post = (signal: AbortSignal) =>
      fetch(`${prov.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: holdBody,
        signal,
      }).catch((e: unknown) => e);
    const first = post(a.signal);
    const run = await waitFor('the run to start', () =>
      prov.runs().find((r) => r.stdin === holdPrompt && r.grandchildPid),
    );
    const second = post(b.signal);
    await waitFor(
      'the second request to join',
      () => logLines(prov, 'identical request in flight; sharing its run') === 2,
    );
    a.abort();
    b.abort();
    await Promise.all([first, second]);
    await waitFor(
      'the run nobody waits for to be stopped with its child',
      () => !processAlive(run.pid) && !processAlive(run.grandchildPid!),
    );
  });
});

describe('a retry of a slow request joins the run its earlier attempt left (MODELPROV_RETRY_GRACE_SECONDS)', () => {
  it('llama-index at its defaults with a client timeout shorter than the reply: one call, up to twelve attempts, one run, and the answer', async () => {
    const prov = await provider({ MODELPROV_RETRY_GRACE_SECONDS: '30' });
    const prompt = 'A slow answer [stand-in:hold]';
    // Its own waits and the client's are skipped (the window is what is tested, not their length); its client timeout is kept, short.
    const call = withoutRetryWaits(RETRY_WAIT_CODE.openai, () =>
      llamaIndexChat(
        llamaIndexClient(`${prov.url}/v1`, 300),
        {
          model: 'sonnet',
          messages: [{ role: 'user', content: prompt }],
        },
        async () => {},
      ),
    );
    await waitFor(
      'three later attempts to join the run',
      () => logLines(prov, 'identical request in flight; sharing its run') >= 3,
      30_000,
    );
    writeFileSync(join(prov.dir, 'runs', 'release'), '');
    const { outcome } = await call;
    expect(outcome.status).toBe('fulfilled');
    if (outcome.status === 'fulfilled') expect(outcome.value.choices[0]!.message.content).toContain('Stand-in reply');
    expect(runsOf(prov, prompt)).toHaveLength(1);
    expect(prov.started()).toHaveLength(1);
    // Attempts that timed out (each a request whose client went away), all on the one run.
    expect(logLines(prov, 'client went away before the answer')).toBeGreaterThanOrEqual(3);
  });

  it('gives the answer of a run that ended while nobody waited to the next identical request, once, with its completion id', async () => {
    const prov = await provider({ MODELPROV_RETRY_GRACE_SECONDS: '120' });
    const prompt = 'Answered to nobody [stand-in:hold]';
    const body = JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: prompt }] });
    const send = (signal?: AbortSignal) =>
      fetch(`${prov.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        ...(signal ? { signal } : {}),
      });
    const gone = new AbortController();
    const first = send(gone.signal).catch((e: unknown) => e);
    await waitFor('the run to start', () => runsOf(prov, prompt).length === 1);
    gone.abort();
    await first;
    await waitFor(
      'the run to be left alone',
      () => logLines(prov, 'every client of a run went away; it goes on for an identical retry to join') === 1,
    );
    writeFileSync(join(prov.dir, 'runs', 'release'), '');
    await waitFor('the run to answer', () => runsOf(prov, prompt)[0]?.endedAt !== undefined);

    const retry = await send();
    expect(retry.status).toBe(200);
    const answer = (await retry.json()) as { id: string; choices: { message: { content: string } }[] };
    expect(answer.choices[0]!.message.content).toContain('Stand-in reply');
    expect(logLines(prov, 'identical request; answered from the run its earlier attempt left behind')).toBe(1);
    expect(runsOf(prov, prompt)).toHaveLength(1);
    // Given once: the same request sent again is a new request, with a run of its own.
    const again = (await (await send()).json()) as { id: string };
    expect(again.id).not.toBe(answer.id);
    expect(runsOf(prov, prompt)).toHaveLength(2);
  });

  it('stops a run nobody came back for once the window has passed, with its whole group', async () => {
    const prov = await provider({ MODELPROV_RETRY_GRACE_SECONDS: '1' });
    const prompt = 'Nobody comes back [stand-in:hang]';
    const gone = new AbortController();
    const sent = fetch(`${prov.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: prompt }] }),
      signal: gone.signal,
    }).catch((e: unknown) => e);
    const run = await waitFor('the run to start its child', () =>
      prov.runs().find((r) => r.stdin === prompt && r.grandchildPid),
    );
    gone.abort();
    await sent;
    await waitFor(
      'the run to be left alone',
      () => logLines(prov, 'every client of a run went away; it goes on for an identical retry to join') === 1,
    );
    await waitFor(
      'the run and its child to be stopped',
      () => !processAlive(run.pid) && !processAlive(run.grandchildPid!),
    );
    expect(prov.started()).toHaveLength(1);
  });
});
