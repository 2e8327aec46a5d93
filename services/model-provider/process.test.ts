import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, ROOT, spawnService } from '../../test/support/process.ts';
import { processAlive, standInBinary } from './test-support/stand-in.ts';
import { waitFor } from '../../test/support/wait-for.ts';

function runService(env: Record<string, string>) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'services', 'run.ts'), 'model-provider'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('npm run service -- model-provider', () => {
  it('runs as its own program, answers, and on SIGTERM kills the running CLI groups and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modelprov-proc-'));
    const standIn = standInBinary(dir);
    const port = await freePort();
    const svc = await spawnService(
      'model-provider',
      { MODELPROV_PORT: String(port), MODELPROV_DATA_DIR: join(dir, 'data'), MODELPROV_CLI_BINARY: standIn.binary },
      port,
    );
    try {
      await waitFor('the provider to be ready', async () => (await fetch(`${svc.url}/ready`)).status === 200);
      const ok = await fetch(`${svc.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'hi from a process test' }] }),
      });
      expect(ok.status).toBe(200);
      const hanging = fetch(`${svc.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'hang [stand-in:hang]' }] }),
      }).catch((e: unknown) => e);
      const run = await waitFor('the hanging run', () => standIn.runs().find((r) => r.grandchildPid));
      expect(await svc.stop('SIGTERM')).toBe(0);
      await hanging;
      await waitFor(
        'the run and its child to be gone',
        () => !processAlive(run.pid) && !processAlive(run.grandchildPid!),
      );
      expect(svc.output()).toContain('"refusal":"shutting_down"');
    } finally {
      if (svc.child.exitCode === null) svc.child.kill('SIGKILL');
    }
  });

  it('stops startup on an unknown MODELPROV_ name, naming it (exit 78)', () => {
    const r = runService({ MODELPROV_TIMEOUT: '5', MODELPROV_PORT: '0' });
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('MODELPROV_TIMEOUT');
  });

  it('refuses to bind to anything but loopback (exit 78)', () => {
    const r = runService({ MODELPROV_HOST: '0.0.0.0', MODELPROV_PORT: '0' });
    expect(r.status).toBe(78);
    expect(r.stderr).toContain('MODELPROV_HOST');
  });
});
