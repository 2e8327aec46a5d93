import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { PROBE_PROMPT } from './lockdown.ts';
import { standInBinary } from './test-support/stand-in.ts';
import { startProvider } from './test-support/provider.ts';
import { waitFor } from '../../test/support/wait-for.ts';

interface ReadyBody {
  status: string;
  checks: {
    cli: { ok: boolean; path?: string | null; detail?: string };
    lockdown: {
      ok: boolean;
      state: string;
      tools: string[];
      mcp_servers: string[];
      hooks: string[];
      api_key_source?: string | null;
      detail: string;
    };
  };
}

async function ready(url: string): Promise<{ status: number; body: ReadyBody }> {
  const res = await fetch(`${url}/ready`);
  return { status: res.status, body: (await res.json()) as ReadyBody };
}

async function completionError(client: OpenAI): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'hello' }] });
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('the completion succeeded but a refusal was expected');
}

describe('the startup lockdown probe', () => {
  it('finds lockdown not ok when the probe run loads a tool: readiness 503 listing it, every completion 503 not_locked_down', async () => {
    const p = await startProvider({ loads: ['Bash'] });
    try {
      await p.service.lockdownProbed();
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok', tools: ['Bash'], mcp_servers: [] });
      expect(r.body.checks.lockdown.detail).toMatch(/Bash/);
      const err = await completionError(p.client);
      expect([err.status, err.code]).toEqual([503, 'not_locked_down']);
      expect(err.headers?.get('x-should-retry')).toBe('false');
      expect(p.runs()).toHaveLength(0);
      expect(p.log()).toContain('"refusal":"not_locked_down"');
    } finally {
      await p.close();
    }
  });

  it('finds lockdown not ok when the probe run loads an MCP server', async () => {
    const p = await startProvider({ mcp: ['probe'] });
    try {
      await p.service.lockdownProbed();
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, tools: [], mcp_servers: ['probe'] });
      expect((await completionError(p.client)).code).toBe('not_locked_down');
    } finally {
      await p.close();
    }
  });

  it('finds lockdown not ok when the probe run loaded skills or slash commands, although every call disables them', async () => {
    const p = await startProvider({ skills: ['deploy'] });
    try {
      await p.service.lockdownProbed();
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok', tools: [], mcp_servers: [] });
      expect(r.body.checks.lockdown.detail).toMatch(/slash commands deploy; skills deploy/);
      expect((await completionError(p.client)).code).toBe('not_locked_down');
      expect(p.runs()).toHaveLength(0);
    } finally {
      await p.close();
    }
  });

  it('finds lockdown not ok when a settings hook runs at session start', async () => {
    const p = await startProvider({ hook: true });
    try {
      await p.service.lockdownProbed();
      const r = await ready(p.url);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, hooks: ['SessionStart:startup'] });
    } finally {
      await p.close();
    }
  });

  it('finds lockdown not ok when the CLI reports an API key source (apiKeyHelper): readiness names it and what to change', async () => {
    const p = await startProvider({ apiKeySource: 'apiKeyHelper' });
    try {
      await p.service.lockdownProbed();
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok', api_key_source: 'apiKeyHelper' });
      expect(r.body.checks.lockdown.detail).toMatch(/apiKeyHelper/);
      expect(r.body.checks.lockdown.detail).toMatch(/remove "apiKeyHelper" from the CLI's settings/);
      const err = await completionError(p.client);
      expect([err.status, err.code]).toEqual([503, 'not_locked_down']);
      expect(p.runs()).toHaveLength(0);
    } finally {
      await p.close();
    }
  });

  it('names what to change for a Console login’s managed key too, and reports none for a subscription login', async () => {
    const p = await startProvider({ apiKeySource: '/login managed key' });
    const q = await startProvider();
    try {
      await Promise.all([p.service.lockdownProbed(), q.service.lockdownProbed()]);
      const r = await ready(p.url);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, api_key_source: '/login managed key' });
      expect(r.body.checks.lockdown.detail).toMatch(/Anthropic Console account.*\/login with your Claude subscription/);
      expect((await ready(q.url)).body.checks.lockdown).toMatchObject({ ok: true, api_key_source: 'none' });
    } finally {
      await Promise.all([p.close(), q.close()]);
    }
  });

  it('refuses a run whose own init reports an API key (stopped at its init, which comes before the model is asked) and every completion after it', async () => {
    const p = await startProvider();
    try {
      await p.service.lockdownProbed();
      const err = await p.client.chat.completions
        .create({ model: 'sonnet', messages: [{ role: 'user', content: 'bill me [stand-in:api-key]' }] })
        .then(
          () => undefined,
          (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
        );
      expect([err?.status, err?.code]).toEqual([503, 'not_locked_down']);
      expect(err?.message).toMatch(/ANTHROPIC_API_KEY/);
      const r = await ready(p.url);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok', api_key_source: 'ANTHROPIC_API_KEY' });
      expect((await completionError(p.client)).code).toBe('not_locked_down');
      expect(p.runs()).toHaveLength(1);
    } finally {
      await p.close();
    }
  });

  it('finds lockdown not ok when the CLI keeps its auto memory on although every run turns it off', async () => {
    const p = await startProvider({ memory: true });
    try {
      await p.service.lockdownProbed();
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok' });
      expect(r.body.checks.lockdown.detail).toMatch(/auto memory/);
    } finally {
      await p.close();
    }
  });

  it('refuses a run whose CLI reports a settings hook after its init (a Stop hook), and every completion after it', async () => {
    const p = await startProvider();
    try {
      await p.service.lockdownProbed();
      expect((await ready(p.url)).body.checks.lockdown.ok).toBe(true);
      const res = await fetch(`${p.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'hello [stand-in:stop-hook]' }] }),
      });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_locked_down');
      const r = await ready(p.url);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, state: 'not_ok', hooks: ['Stop'] });
      expect((await completionError(p.client)).code).toBe('not_locked_down');
      expect(p.runs()).toHaveLength(1);
    } finally {
      await p.close();
    }
  });

  it('does not answer from a run that never reported what it loaded (no init event), plain or streamed', async () => {
    for (const stream of ['whole', 'deltas']) {
      const p = await startProvider({ env: { MODELPROV_STREAM: stream } });
      try {
        await p.service.lockdownProbed();
        const res = await fetch(`${p.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'sonnet',
            stream: stream === 'deltas',
            messages: [{ role: 'user', content: 'hello [stand-in:no-init]' }],
          }),
        });
        const body = await res.text();
        expect([stream, res.status]).toEqual([stream, 502]);
        expect(body).toContain('"code":"cli_failed"');
        expect(body).not.toContain('Stand-in reply');
        expect(p.log()).toContain('did not report what it loaded');
      } finally {
        await p.close();
      }
    }
  });

  it('allows a schema run exactly the StructuredOutput tool, which --json-schema itself adds', async () => {
    const p = await startProvider();
    try {
      await p.service.lockdownProbed();
      const c = await p.client.chat.completions.create({
        model: 'sonnet',
        messages: [{ role: 'user', content: 'structured' }],
        response_format: { type: 'json_object' },
      });
      expect(JSON.parse(c.choices[0]!.message.content!)).toEqual({});
      expect((await ready(p.url)).body.checks.lockdown.ok).toBe(true);
    } finally {
      await p.close();
    }
  });

  it('answers 503 not_locked_down, which the client may retry, while the probe has not finished; close() kills the probe', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modelprov-slow-'));
    const slow = join(dir, 'claude');
    writeFileSync(slow, '#!/bin/sh\nsleep 60\n');
    chmodSync(slow, 0o755);
    const p = await startProvider({ binary: slow });
    try {
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.lockdown).toMatchObject({ ok: false, state: 'pending' });
      const err = await completionError(p.client);
      expect([err.status, err.code]).toEqual([503, 'not_locked_down']);
      expect(err.headers?.get('x-should-retry')).toBe('true');
      expect(err.message).toMatch(/has not finished/);
    } finally {
      await p.close();
    }
    await p.service.lockdownProbed();
  });

  it('gives up on a probe that takes longer than its limit and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modelprov-slow-'));
    const slow = join(dir, 'claude');
    writeFileSync(slow, '#!/bin/sh\nsleep 60\n');
    chmodSync(slow, 0o755);
    const p = await startProvider({ binary: slow, env: { MODELPROV_PROBE_TIMEOUT_SECONDS: '1' } });
    try {
      await p.service.lockdownProbed();
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.lockdown.state).toBe('probe_failed');
      expect(r.body.checks.lockdown.detail).toMatch(/within 1 s/);
      const err = await completionError(p.client);
      expect([err.status, err.code, err.headers?.get('x-should-retry')]).toEqual([503, 'not_locked_down', 'false']);
    } finally {
      await p.close();
    }
  });
});

describe('a missing CLI binary', () => {
  it('does not stop the server: readiness says what is wrong, completions answer 503 cli_not_found', async () => {
    const p = await startProvider({ binary: '/nonexistent/bin/claude' });
    try {
      await p.service.lockdownProbed();
      expect((await fetch(`${p.url}/healthy`)).status).toBe(200);
      const r = await ready(p.url);
      expect(r.status).toBe(503);
      expect(r.body.checks.cli.ok).toBe(false);
      expect(r.body.checks.cli.detail).toMatch(/MODELPROV_CLI_BINARY names \/nonexistent\/bin\/claude/);
      expect(r.body.checks.lockdown.state).toBe('no_cli');
      const err = await completionError(p.client);
      expect([err.status, err.code, err.headers?.get('x-should-retry')]).toEqual([503, 'cli_not_found', 'false']);
      expect(err.message).toMatch(/MODELPROV_CLI_BINARY/);
    } finally {
      await p.close();
    }
  });

  it('starts the probe from /ready alone when the binary appears after startup: 503 no_cli, then 503 pending, then 200', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modelprov-later-'));
    const later = join(dir, 'bin', 'claude');
    const p = await startProvider({ binary: later });
    try {
      await p.service.lockdownProbed();
      const before = await ready(p.url);
      expect(before.status).toBe(503);
      expect(before.body.checks.cli).toMatchObject({ ok: false });
      expect(before.body.checks.cli.detail).toMatch(/MODELPROV_CLI_BINARY/);
      expect(before.body.checks.lockdown.state).toBe('no_cli');
      // The binary is created where MODELPROV_CLI_BINARY points; no completion is ever sent.
      const standIn = standInBinary(join(dir, 'bin'), { recordDir: join(dir, 'runs') });
      expect(standIn.binary).toBe(later);
      const found = await ready(p.url);
      expect(found.status).toBe(503);
      expect(found.body.checks.cli.ok).toBe(true);
      expect(found.body.checks.lockdown.state).toBe('pending');
      const after = await waitFor('readiness to turn 200', async () => {
        const r = await ready(p.url);
        return r.status === 200 ? r : undefined;
      });
      expect(after.body.checks.lockdown).toMatchObject({
        ok: true,
        state: 'ok',
        tools: [],
        mcp_servers: [],
        hooks: [],
      });
      const runs = standIn.runs();
      expect(runs).toHaveLength(1);
      expect(runs[0]!.stdin).toBe(PROBE_PROMPT);
    } finally {
      await p.close();
    }
  });

  it('probes a binary that appears after startup before running it, then answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modelprov-later-'));
    const later = join(dir, 'bin', 'claude');
    const p = await startProvider({ binary: later });
    try {
      await p.service.lockdownProbed();
      expect((await ready(p.url)).body.checks.lockdown.state).toBe('no_cli');
      const standIn = standInBinary(dir);
      mkdirSync(join(dir, 'bin'));
      copyFileSync(standIn.binary, later);
      chmodSync(later, 0o755);
      const first = await completionError(p.client);
      expect([first.status, first.code, first.headers?.get('x-should-retry')]).toEqual([
        503,
        'not_locked_down',
        'true',
      ]);
      await waitFor('the late probe to pass', async () => (await ready(p.url)).status === 200);
      const c = await p.client.chat.completions.create({
        model: 'sonnet',
        messages: [{ role: 'user', content: 'now it works' }],
      });
      expect(c.choices[0]!.message.content).toMatch(/^Stand-in reply/);
    } finally {
      await p.close();
    }
  });
});

describe('the lockdown proof belongs to the binary it was made with', () => {
  it('probes another binary found later on PATH before running it: one that loads a tool is never run for a completion', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modelprov-swap-'));
    const first = standInBinary(join(dir, 'later-on-path'), { recordDir: join(dir, 'runs-first') });
    const earlier = join(dir, 'earlier-on-path');
    const p = await startProvider({
      binary: null,
      base: { PATH: `${earlier}:${join(dir, 'later-on-path')}`, HOME: dir },
    });
    try {
      await p.service.lockdownProbed();
      expect((await ready(p.url)).body.checks.lockdown).toMatchObject({ state: 'ok' });
      await p.client.chat.completions.create({
        model: 'sonnet',
        messages: [{ role: 'user', content: 'from the first binary' }],
      });
      // Another `claude` appears earlier on PATH (an install, an update elsewhere), and this one loads a tool.
      const second = standInBinary(earlier, { loads: ['Bash'], recordDir: join(dir, 'runs-second') });
      const refused = await completionError(p.client);
      expect([refused.status, refused.code, refused.headers?.get('x-should-retry')]).toEqual([
        503,
        'not_locked_down',
        'true',
      ]);
      const after = await waitFor('the new binary to be probed', async () => {
        const r = await ready(p.url);
        return r.body.checks.lockdown.state === 'not_ok' ? r : undefined;
      });
      expect(after.status).toBe(503);
      expect(after.body.checks.cli.path).toBe(second.binary);
      expect(after.body.checks.lockdown.tools).toEqual(['Bash']);
      const still = await completionError(p.client);
      expect([still.status, still.code]).toEqual([503, 'not_locked_down']);
      // The new binary ran only its probe; every completion ran on the proven one.
      expect(second.runs().map((r) => r.stdin)).toEqual([PROBE_PROMPT]);
      expect(first.runs().filter((r) => r.stdin !== PROBE_PROMPT)).toHaveLength(1);
    } finally {
      await p.close();
    }
  });

  it("probes again when the binary at the same path changes (an update moves the installer's link to a new version)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modelprov-update-'));
    // The native installer's layout: ~/.local/bin/claude is a link to the version it installed last.
    const v1 = standInBinary(join(dir, 'versions', 'v1'), { recordDir: join(dir, 'runs-v1') });
    const bin = join(dir, '.local', 'bin');
    mkdirSync(bin, { recursive: true });
    const link = join(bin, 'claude');
    symlinkSync(v1.binary, link);
    const p = await startProvider({ binary: null, base: { PATH: bin, HOME: dir } });
    try {
      await p.service.lockdownProbed();
      expect((await ready(p.url)).body.checks.lockdown).toMatchObject({ state: 'ok' });
      await p.client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'on v1' }] });
      // An update installs v2 (which loads a tool) and moves the link: the path the service found is the same.
      const v2 = standInBinary(join(dir, 'versions', 'v2'), { loads: ['Bash'], recordDir: join(dir, 'runs-v2') });
      renameSync(v2.binary, `${v2.binary}.new`);
      symlinkSync(`${v2.binary}.new`, `${link}.new`);
      renameSync(`${link}.new`, link);
      const refused = await completionError(p.client);
      expect([refused.status, refused.code, refused.headers?.get('x-should-retry')]).toEqual([
        503,
        'not_locked_down',
        'true',
      ]);
      const after = await waitFor('the updated binary to be probed', async () => {
        const r = await ready(p.url);
        return r.body.checks.lockdown.state === 'not_ok' ? r : undefined;
      });
      expect(after.body.checks.cli.path).toBe(link);
      expect(after.body.checks.lockdown.tools).toEqual(['Bash']);
      expect((await completionError(p.client)).code).toBe('not_locked_down');
      // The new version ran only its probe.
      expect(v2.runs().map((r) => r.stdin)).toEqual([PROBE_PROMPT]);
      expect(v1.runs().filter((r) => r.stdin !== PROBE_PROMPT)).toHaveLength(1);
    } finally {
      await p.close();
    }
  });
});
