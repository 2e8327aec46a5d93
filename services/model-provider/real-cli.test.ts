import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../test/support/process.ts';
import { cliArgs } from './invocation.ts';
import { startProvider, type StartedProvider } from './test-support/provider.ts';

/**
 * The real CLI package (@anthropic-ai/claude-code, pinned in package.json), never with a real login: the
 * service runs it with an environment of its own (PATH and an empty temporary HOME; the service passes on
 * nothing else but its own switches), so nothing of this machine's user reaches it. Not being signed in,
 * it needs no network to answer.
 */
const REAL_CLI = join(ROOT, 'node_modules', '.bin', 'claude');
const home = mkdtempSync(join(tmpdir(), 'modelprov-empty-home-'));
const wrapperDir = mkdtempSync(join(tmpdir(), 'modelprov-real-'));
/** The service's whole environment for a run of the real CLI with `home` as HOME. */
const homeEnv = (h: string) => ({ PATH: '/usr/bin:/bin', HOME: h });

let p: StartedProvider;

beforeAll(async () => {
  if (!existsSync(REAL_CLI)) throw new Error(`The pinned CLI package is not installed at ${REAL_CLI}; run npm ci.`);
  p = await startProvider({ binary: REAL_CLI, base: homeEnv(home) });
  await p.service.lockdownProbed();
});
afterAll(async () => {
  await p?.close();
});

describe('the real CLI, not signed in, empty HOME', () => {
  it('passes the startup probe: lockdown ok, no tools and no MCP servers loaded', async () => {
    const res = await fetch(`${p.url}/ready`);
    const body = (await res.json()) as {
      checks: { cli: { ok: boolean }; lockdown: Record<string, unknown>; login: Record<string, unknown> };
    };
    expect(body.checks.cli.ok).toBe(true);
    expect(body.checks.lockdown).toMatchObject({
      ok: true,
      state: 'ok',
      tools: [],
      mcp_servers: [],
      hooks: [],
      api_key_source: 'none',
    });
    // Not signed in, so a call would not work: readiness is 503 and says why.
    expect(body.checks.login).toMatchObject({ ok: false, state: 'not_signed_in' });
    expect(res.status).toBe(503);
  });

  it('answers a completion with 401 not_logged_in, as the openai client sees it', async () => {
    let err: unknown;
    try {
      await p.client.chat.completions.create({ model: 'haiku', messages: [{ role: 'user', content: 'Hello there' }] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('not_logged_in');
    expect((err as Error).message).toMatch(/not signed in/);
  });

  it('answers a streaming request and a json_schema request with not_logged_in too', async () => {
    const stream = await fetch(`${p.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', stream: true, messages: [{ role: 'user', content: '--help' }] }),
    });
    expect(stream.status).toBe(401);
    expect(((await stream.json()) as { error: { code: string } }).error.code).toBe('not_logged_in');
    const schema = await fetch(`${p.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sonnet',
        messages: [{ role: 'user', content: 'hi' }],
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'a', schema: { type: 'object', properties: { a: { type: 'string' } } } },
        },
      }),
    });
    expect(((await schema.json()) as { error: { code: string } }).error.code).toBe('not_logged_in');
  });

  it('leaves no session transcript in HOME and nothing in the working directory', async () => {
    const projects = join(home, '.claude', 'projects');
    const transcripts = existsSync(projects)
      ? readdirSync(projects, { recursive: true })
          .map(String)
          .filter((f) => f.endsWith('.jsonl'))
      : [];
    expect(transcripts).toEqual([]);
    expect(readdirSync(join(p.dataDir, 'empty-cwd'))).toEqual([]);
  });
});

/**
 * A user's own settings with a UserPromptSubmit hook (a prompt logger, say): the CLI runs it on every
 * call and hands it the prompt on stdin, whatever --tools says. Lockdown must see it and refuse.
 */
describe('the real CLI with a UserPromptSubmit hook in the user settings', () => {
  const hookHome = mkdtempSync(join(tmpdir(), 'modelprov-hook-home-'));
  const seen = join(hookHome, 'prompts-seen');
  let h: StartedProvider;

  beforeAll(async () => {
    mkdirSync(join(hookHome, '.claude'));
    writeFileSync(
      join(hookHome, '.claude', 'settings.json'),
      JSON.stringify({
        hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: `cat >> '${seen}'` }] }] },
      }),
    );
    h = await startProvider({ binary: REAL_CLI, base: homeEnv(hookHome) });
    await h.service.lockdownProbed();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('finds lockdown not ok, names the hook, and never hands a completion prompt to it', async () => {
    const res = await fetch(`${h.url}/ready`);
    const body = (await res.json()) as { checks: { lockdown: Record<string, unknown> } };
    expect(res.status).toBe(503);
    expect(body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok', hooks: ['UserPromptSubmit'] });
    const answer = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'haiku', messages: [{ role: 'user', content: 'private words for the model' }] }),
    });
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('not_locked_down');
    expect(existsSync(seen) ? readFileSync(seen, 'utf8') : '').not.toContain('private words');
  });
});

/**
 * The person's own notes: ~/.claude/CLAUDE.md, which the CLI reads from HOME whatever the working
 * directory, and auto memory. Every run carries the CLI's two switches (CLAUDE_CODE_DISABLE_CLAUDE_MDS,
 * CLAUDE_CODE_DISABLE_AUTO_MEMORY): the real CLI, signed out, still looks for its context before it
 * finds it has no login, so the files it opens show whether it would have read them (strace).
 */
const strace = spawnSync('strace', ['-V'], { encoding: 'utf8' }).status === 0;
if (!strace && process.env.CI !== 'true')
  console.log('real-cli.test.ts: the CLAUDE.md case is skipped: strace is not installed (apt-get install strace)');

describe('the real CLI with a CLAUDE.md and auto memory in HOME', () => {
  const notesHome = mkdtempSync(join(tmpdir(), 'modelprov-notes-home-'));
  const claudeMd = join(notesHome, '.claude', 'CLAUDE.md');
  const traces = mkdtempSync(join(tmpdir(), 'modelprov-traces-'));
  let n: StartedProvider;

  beforeAll(async () => {
    mkdirSync(join(notesHome, '.claude'));
    writeFileSync(claudeMd, '# My own notes\nNever share these with a hub.\n');
    // The binary the service runs: the real CLI under strace, each run's file opens in a trace of its own.
    const traced = join(wrapperDir, 'claude-traced');
    writeFileSync(
      traced,
      `#!/bin/sh\nexec strace -f -qq -e trace=open,openat,stat,statx,newfstatat -o '${traces}/run-'$$ '${REAL_CLI}' "$@"\n`,
    );
    chmodSync(traced, 0o755);
    n = await startProvider({ binary: strace ? traced : REAL_CLI, base: homeEnv(notesHome) });
    await n.service.lockdownProbed();
  });
  afterAll(async () => {
    await n?.close();
  });

  it('reports no auto memory folder at the probe: lockdown ok, its API key source none', async () => {
    const body = (await (await fetch(`${n.url}/ready`)).json()) as { checks: { lockdown: Record<string, unknown> } };
    expect(body.checks.lockdown).toMatchObject({ ok: true, state: 'ok', api_key_source: 'none' });
    // The same CLI without the switch lists its auto memory folder (the recorded runs show it too).
    const plain = spawnSync(REAL_CLI, cliArgs({ model: 'sonnet', systemPrompt: 'x' }), {
      cwd: mkdtempSync(join(tmpdir(), 'modelprov-cwd-')),
      env: homeEnv(notesHome),
      input: 'hello',
      encoding: 'utf8',
    });
    expect(plain.stdout).toContain('"memory_paths":{"auto":');
  });

  it.skipIf(!strace && process.env.CI !== 'true')(
    'never opens the person\u2019s CLAUDE.md, in the probe or a completion; the same CLI without the switch does',
    async () => {
      expect(strace, 'strace is needed to see what the CLI opens (apt-get install strace)').toBe(true);
      const answer = await fetch(`${n.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'what do my notes say?' }] }),
      });
      expect(answer.status).toBe(401);
      const runs = readdirSync(traces).map((f) => readFileSync(join(traces, f), 'utf8'));
      expect(runs.length).toBeGreaterThanOrEqual(2);
      for (const trace of runs) expect(trace).not.toContain(claudeMd);
      // The control: without the switches the CLI reads it (so the trace above could have shown it).
      const control = join(traces, 'control');
      spawnSync(
        'strace',
        [
          '-f',
          '-qq',
          '-e',
          'trace=open,openat,stat,statx,newfstatat',
          '-o',
          control,
          REAL_CLI,
          ...cliArgs({ model: 'sonnet', systemPrompt: 'x' }),
        ],
        {
          cwd: mkdtempSync(join(tmpdir(), 'modelprov-cwd-')),
          env: homeEnv(notesHome),
          input: 'hello',
        },
      );
      expect(readFileSync(control, 'utf8')).toContain(claudeMd);
    },
  );
});

/** A person's own apiKeyHelper (or a Console login) would move billing from their subscription to an API account. */
describe('the real CLI with an apiKeyHelper in the user settings', () => {
  const keyHome = mkdtempSync(join(tmpdir(), 'modelprov-key-home-'));
  let k: StartedProvider;

  beforeAll(async () => {
    mkdirSync(join(keyHome, '.claude'));
    writeFileSync(join(keyHome, '.claude', 'settings.json'), JSON.stringify({ apiKeyHelper: 'echo not-a-real-key' }));
    k = await startProvider({ binary: REAL_CLI, base: homeEnv(keyHome) });
    await k.service.lockdownProbed();
  });
  afterAll(async () => {
    await k?.close();
  });

  it('finds lockdown not ok: readiness names the source (apiKeyHelper) and what to change; completions are refused', async () => {
    const res = await fetch(`${k.url}/ready`);
    const body = (await res.json()) as { checks: { lockdown: { detail: string } & Record<string, unknown> } };
    expect(res.status).toBe(503);
    expect(body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok', api_key_source: 'apiKeyHelper' });
    expect(body.checks.lockdown.detail).toMatch(/remove "apiKeyHelper" from the CLI's settings/);
    const answer = await fetch(`${k.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'haiku', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('not_locked_down');
  });
});
