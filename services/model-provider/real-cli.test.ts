import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../test/support/process.ts';
import { startProvider, type StartedProvider } from './test-support/provider.ts';

/**
 * The real CLI package (@anthropic-ai/claude-code, pinned in package.json), never with a real login:
 * a wrapper runs it with an empty temporary HOME and a bare environment, so nothing of this machine's
 * user reaches it. Not being signed in, it needs no network to answer.
 */
const REAL_CLI = join(ROOT, 'node_modules', '.bin', 'claude');
const home = mkdtempSync(join(tmpdir(), 'modelprov-empty-home-'));
const wrapperDir = mkdtempSync(join(tmpdir(), 'modelprov-real-'));
const wrapper = join(wrapperDir, 'claude');

let p: StartedProvider;

beforeAll(async () => {
  if (!existsSync(REAL_CLI)) throw new Error(`The pinned CLI package is not installed at ${REAL_CLI}; run npm ci.`);
  writeFileSync(wrapper, `#!/bin/sh\nexec env -i PATH=/usr/bin:/bin HOME='${home}' TERM=dumb '${REAL_CLI}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  p = await startProvider({ binary: wrapper });
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
    expect(body.checks.lockdown).toMatchObject({ ok: true, state: 'ok', tools: [], mcp_servers: [], hooks: [] });
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
  const hookWrapper = join(wrapperDir, 'claude-hook-home');
  let h: StartedProvider;

  beforeAll(async () => {
    mkdirSync(join(hookHome, '.claude'));
    writeFileSync(
      join(hookHome, '.claude', 'settings.json'),
      JSON.stringify({
        hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: `cat >> '${seen}'` }] }] },
      }),
    );
    writeFileSync(
      hookWrapper,
      `#!/bin/sh\nexec env -i PATH=/usr/bin:/bin HOME='${hookHome}' TERM=dumb '${REAL_CLI}' "$@"\n`,
    );
    chmodSync(hookWrapper, 0o755);
    h = await startProvider({ binary: hookWrapper });
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
