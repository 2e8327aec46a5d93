import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { processAlive } from './test-support/stand-in.ts';
import { startProvider } from './test-support/provider.ts';
import { waitFor } from '../../test/support/wait-for.ts';

const post = (url: string, content: string, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content }] }),
    ...(signal ? { signal } : {}),
  });

describe('the hard timeout', () => {
  it('kills a run that hangs past MODELPROV_TIMEOUT_SECONDS with its whole group and answers 504 timeout', async () => {
    const p = await startProvider({ env: { MODELPROV_TIMEOUT_SECONDS: '1' } });
    try {
      await p.service.lockdownProbed();
      let err: unknown;
      try {
        await p.client.chat.completions.create({
          model: 'sonnet',
          messages: [{ role: 'user', content: 'hang forever [stand-in:hang]' }],
        });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(OpenAI.APIError);
      const e = err as InstanceType<typeof OpenAI.APIError>;
      expect([e.status, e.code, e.type]).toEqual([504, 'timeout', 'timeout_error']);
      expect(e.headers?.get('x-should-retry')).toBe('false');
      const run = await waitFor('the run record', () => p.runs().find((r) => r.grandchildPid));
      await waitFor(
        'the timed-out run and its child to be gone',
        () => !processAlive(run.pid) && !processAlive(run.grandchildPid!),
      );
      expect(p.log()).toContain('"refusal":"timeout"');
    } finally {
      await p.close();
    }
  });
});

describe('the bounded queue', () => {
  it('refuses a request past the queue with 429 queue_full instead of letting it hang; the queued one still finishes', async () => {
    const p = await startProvider({ env: { MODELPROV_MAX_CONCURRENT: '1', MODELPROV_MAX_QUEUE: '1' } });
    try {
      await p.service.lockdownProbed();
      const holder = new AbortController();
      const first = post(p.url, 'hold the slot [stand-in:hang]', holder.signal).catch((e: unknown) => e);
      const run = await waitFor('the slot holder to run', () => p.runs().find((r) => r.grandchildPid));
      const queued = post(p.url, 'waiting in the queue');
      await waitFor('the second request to queue', async () => {
        const body = (await (await fetch(`${p.url}/ready`)).json()) as { runs: { queued: number } };
        return body.runs.queued === 1;
      });
      let refused: unknown;
      try {
        await p.client.chat.completions.create({
          model: 'sonnet',
          messages: [{ role: 'user', content: 'one too many' }],
        });
      } catch (e) {
        refused = e;
      }
      expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
      expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe('queue_full');
      expect((refused as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBe('1');
      expect(p.runs().some((r) => r.stdin === 'one too many')).toBe(false);

      holder.abort();
      await first;
      const done = await queued;
      expect(done.status).toBe(200);
      await waitFor('the abandoned run to be gone', () => !processAlive(run.pid) && !processAlive(run.grandchildPid!));
    } finally {
      await p.close();
    }
  });
});

describe('shutdown', () => {
  it('close() kills every running CLI group; their requests end with 503 shutting_down', async () => {
    const p = await startProvider({ env: { MODELPROV_MAX_CONCURRENT: '2' } });
    await p.service.lockdownProbed();
    const a = post(p.url, 'shutdown a [stand-in:hang]');
    const b = post(p.url, 'shutdown b [stand-in:hang]');
    const runs = await waitFor('both runs to start', () => {
      const r = p.runs().filter((x) => x.grandchildPid);
      return r.length === 2 ? r : undefined;
    });
    await p.close();
    const answers = await Promise.all([a, b]);
    expect(answers.map((r) => r.status)).toEqual([503, 503]);
    expect(((await answers[0]!.json()) as { error: { code: string } }).error.code).toBe('shutting_down');
    await waitFor('every run and child to be gone', () =>
      runs.every((r) => !processAlive(r.pid) && !processAlive(r.grandchildPid!)),
    );
  });

  it('starts no queued run once stopping: the queued request ends with 503 shutting_down too', async () => {
    const p = await startProvider({ env: { MODELPROV_MAX_CONCURRENT: '1' } });
    await p.service.lockdownProbed();
    const a = post(p.url, 'holder [stand-in:hang]');
    await waitFor('the holder to run', () => p.runs().find((x) => x.grandchildPid));
    const b = post(p.url, 'queued behind the holder');
    await waitFor(
      'the second request to queue',
      async () => ((await (await fetch(`${p.url}/ready`)).json()) as { runs: { queued: number } }).runs.queued === 1,
    );
    await p.close();
    const answers = await Promise.all([a, b]);
    expect(answers.map((r) => r.status)).toEqual([503, 503]);
    expect(p.runs().map((r) => r.stdin)).toEqual(['holder [stand-in:hang]']);
  });
});

describe('the answer comes with the result event, not with the process exit', () => {
  it('answers while the CLI is still exiting, gives the slot back then, and lets the process exit on its own', async () => {
    const p = await startProvider({ env: { MODELPROV_MAX_CONCURRENT: '1', MODELPROV_MAX_QUEUE: '0' } });
    try {
      await p.service.lockdownProbed();
      const answer = await p.client.chat.completions.create({
        model: 'sonnet',
        messages: [{ role: 'user', content: 'answer, then linger [stand-in:linger]' }],
      });
      expect(answer.choices[0]!.message.content).toContain('Stand-in reply');
      // The stand-in exits only once `release` exists, which this test has not made yet.
      const lingering = p.runs().find((r) => r.stdin.includes('[stand-in:linger]'))!;
      expect(processAlive(lingering.pid)).toBe(true);
      // The slot went back with the answer: with one slot and no queue, the next request runs (not 429).
      const next = await post(p.url, 'the next request');
      expect(next.status).toBe(200);
      writeFileSync(join(p.dir, 'runs', 'release'), '');
      await waitFor('the lingering CLI to exit', () => !processAlive(lingering.pid));
      expect(p.log()).not.toContain('did not exit');
    } finally {
      await p.close();
    }
  });

  it('stops a CLI that answered but does not exit, by the end of its timeout, and logs that', async () => {
    // Long enough that the stand-in surely answers first on a loaded machine (it starts in well under a second).
    const p = await startProvider({ env: { MODELPROV_TIMEOUT_SECONDS: '5' } });
    try {
      await p.service.lockdownProbed();
      const res = await post(p.url, 'answer, then never exit [stand-in:linger]');
      expect(res.status).toBe(200);
      const lingering = p.runs().find((r) => r.stdin.includes('[stand-in:linger]'))!;
      await waitFor('the lingering CLI to be stopped', () => !processAlive(lingering.pid));
      await waitFor('the warning in the log', () =>
        p.log().includes('the CLI printed its answer but did not exit; its process group was stopped'),
      );
    } finally {
      await p.close();
    }
  });

  it('close() stops a CLI still exiting after its answer and waits for it', async () => {
    const p = await startProvider();
    await p.service.lockdownProbed();
    expect((await post(p.url, 'answer, then linger at shutdown [stand-in:linger]')).status).toBe(200);
    const lingering = p.runs().find((r) => r.stdin.includes('[stand-in:linger]'))!;
    expect(processAlive(lingering.pid)).toBe(true);
    await p.close();
    expect(processAlive(lingering.pid)).toBe(false);
  });
});
