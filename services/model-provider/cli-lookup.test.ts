import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { usualInstallLocations } from './cli-binary.ts';
import { standInBinary } from './test-support/stand-in.ts';
import { startProvider } from './test-support/provider.ts';

/**
 * Finding the CLI binary, through a real service whose whole environment is given: PATH holds only
 * temporary folders and HOME is a temporary folder, so nothing of this machine (node_modules/.bin on
 * the PATH npx gives, a CLI in the real ~/.local/bin) can be found by accident. Each found binary is
 * then run: the probe and one completion go through it.
 */
interface ReadyBody {
  checks: { cli: { ok: boolean; path: string | null; source?: string; detail?: string }; lockdown: { state: string } };
}

function sandbox() {
  const root = mkdtempSync(join(tmpdir(), 'modelprov-lookup-'));
  const home = join(root, 'home');
  const empty = join(root, 'empty-bin');
  mkdirSync(home);
  mkdirSync(empty);
  return { root, home, empty, recordDir: join(root, 'runs') };
}

async function lookUp(base: Record<string, string>, binary: string | null) {
  const p = await startProvider({ base, binary });
  await p.service.lockdownProbed();
  const res = await fetch(`${p.url}/ready`);
  return { p, status: res.status, body: (await res.json()) as ReadyBody };
}

async function completes(url: string, content: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe('finding the CLI binary', () => {
  it('looks MODELPROV_CLI_BINARY up on PATH when it is a bare name', async () => {
    const s = sandbox();
    const standIn = standInBinary(join(s.root, 'tools'), { name: 'my-claude', recordDir: s.recordDir });
    const { p, status, body } = await lookUp(
      { PATH: `${s.empty}:${join(s.root, 'tools')}`, HOME: s.home },
      'my-claude',
    );
    try {
      expect(status).toBe(200);
      expect(body.checks.cli).toEqual({ ok: true, path: standIn.binary, source: 'setting' });
      expect(await completes(p.url, 'bare name')).toBe(200);
      expect(standIn.runs().map((r) => r.stdin)).toContain('bare name');
    } finally {
      await p.close();
    }
  });

  it('says what to set when MODELPROV_CLI_BINARY is a bare name that is not on PATH', async () => {
    const s = sandbox();
    const { p, status, body } = await lookUp({ PATH: s.empty, HOME: s.home }, 'my-claude');
    try {
      expect(status).toBe(503);
      expect(body.checks.cli.ok).toBe(false);
      expect(body.checks.cli.detail).toMatch(
        /MODELPROV_CLI_BINARY names "my-claude", which is not on the service's PATH/,
      );
      expect(body.checks.cli.detail).toMatch(/set MODELPROV_CLI_BINARY to the full path/i);
    } finally {
      await p.close();
    }
  });

  it('finds claude on PATH when MODELPROV_CLI_BINARY is unset, before any install location', async () => {
    const s = sandbox();
    const onPath = standInBinary(join(s.root, 'path-bin'), { recordDir: s.recordDir });
    const installed = standInBinary(join(s.home, '.local', 'bin'), { recordDir: join(s.root, 'runs-installed') });
    const { p, status, body } = await lookUp({ PATH: `${s.empty}:${join(s.root, 'path-bin')}`, HOME: s.home }, null);
    try {
      expect(status).toBe(200);
      expect(body.checks.cli).toEqual({ ok: true, path: onPath.binary, source: 'PATH' });
      expect(await completes(p.url, 'found on PATH')).toBe(200);
      expect(onPath.runs().map((r) => r.stdin)).toContain('found on PATH');
      expect(installed.runs()).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it('falls back to the usual install locations under HOME when claude is not on PATH', async () => {
    const s = sandbox();
    const installed = standInBinary(join(s.home, '.local', 'bin'), { recordDir: s.recordDir });
    const { p, status, body } = await lookUp({ PATH: s.empty, HOME: s.home }, null);
    try {
      expect(status).toBe(200);
      expect(body.checks.cli).toEqual({
        ok: true,
        path: join(s.home, '.local', 'bin', 'claude'),
        source: 'install location',
      });
      expect(await completes(p.url, 'found in ~/.local/bin')).toBe(200);
      expect(installed.runs().map((r) => r.stdin)).toContain('found in ~/.local/bin');
    } finally {
      await p.close();
    }
  });

  it('prefers ~/.claude/local (the CLI\u2019s own local install) over ~/.local/bin', async () => {
    const s = sandbox();
    const local = standInBinary(join(s.home, '.claude', 'local'), { recordDir: s.recordDir });
    standInBinary(join(s.home, '.local', 'bin'), { recordDir: join(s.root, 'runs-other') });
    const { p, body } = await lookUp({ PATH: s.empty, HOME: s.home }, null);
    try {
      expect(body.checks.cli).toEqual({ ok: true, path: local.binary, source: 'install location' });
    } finally {
      await p.close();
    }
  });

  // The last install locations are system-wide (/usr/local/bin, /opt/homebrew/bin, /usr/bin): where
  // this machine has a claude there, "found nowhere" cannot be set up, and the case is skipped.
  const systemWide = usualInstallLocations({ HOME: '/nonexistent-home' }).filter(
    (f) => !f.startsWith('/nonexistent-home') && existsSync(f),
  );
  it.skipIf(systemWide.length > 0)(
    'answers /ready 503 saying what to install or set when claude is found nowhere; completions 503 cli_not_found',
    async () => {
      const s = sandbox();
      const { p, status, body } = await lookUp({ PATH: s.empty, HOME: s.home }, null);
      try {
        expect(status).toBe(503);
        expect(body.checks.cli).toMatchObject({ ok: false, path: null });
        expect(body.checks.cli.detail).toMatch(
          /found neither on the service's PATH nor in the usual install locations/,
        );
        expect(body.checks.cli.detail).toMatch(/set MODELPROV_CLI_BINARY to the full path of the claude binary/);
        expect(body.checks.lockdown.state).toBe('no_cli');
        const res = await fetch(`${p.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'nothing to run' }] }),
        });
        expect([res.status, res.headers.get('x-should-retry')]).toEqual([503, 'false']);
        const answer = (await res.json()) as { error: { code: string; message: string } };
        expect(answer.error.code).toBe('cli_not_found');
        expect(answer.error.message).toMatch(/MODELPROV_CLI_BINARY/);
      } finally {
        await p.close();
      }
    },
  );
});
