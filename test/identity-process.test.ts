import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { descendants, isAlive } from '../main/supervisor/process-tree.ts';
import { tempDir } from './support/identity.ts';
import { freePort, ROOT, spawnService } from './support/process.ts';

const npm = (args: string[], env: Record<string, string>) =>
  spawnSync('npm', ['run', '--silent', ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });

describe('npm run service -- identity, as a process', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`starts, answers, and on ${signal} stops cleanly with exit code 0`, async () => {
      const port = await freePort();
      const proc = await spawnService('identity', { IDENTITY_DATA_DIR: tempDir('identity-proc'), IDENTITY_PORT: String(port) }, port);
      expect((await fetch(`${proc.url}/ready`)).status).toBe(200);
      expect(await proc.stop(signal)).toBe(0);
      expect(proc.output()).toMatch(/"msg":"stopped"/);
    });
  }

  // Through npm itself, as a person or a process manager runs it: npm's signal must reach the service, not a shell between them.
  for (const [how, send] of [
    ['SIGTERM to npm', (pid: number) => process.kill(pid, 'SIGTERM')],
    ['Ctrl-C (SIGINT to the whole process group)', (pid: number) => process.kill(-pid, 'SIGINT')],
  ] as const) {
    it(`\`npm run service -- identity\` stops cleanly on ${how}: exit code 0, port released, no process left`, async () => {
      const port = await freePort();
      const npmRun = spawn('npm', ['run', 'service', '--', 'identity'], {
        cwd: ROOT,
        env: { ...process.env, IDENTITY_DATA_DIR: tempDir('identity-npm'), IDENTITY_PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      npmRun.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      npmRun.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((r) => npmRun.once('exit', (code) => r(code)));
      const deadline = Date.now() + 30_000;
      while (!(await fetch(`http://127.0.0.1:${port}/healthy`).then((r) => r.ok).catch(() => false))) {
        if (Date.now() > deadline) throw new Error(`the service did not start:\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const family = descendants(npmRun.pid!);
      expect(family.length).toBeGreaterThan(0);
      send(npmRun.pid!);
      expect(await exited).toBe(0);
      expect(output).toMatch(/"msg":"stopped"/);
      expect(await fetch(`http://127.0.0.1:${port}/healthy`).then(() => 'answered', () => 'refused')).toBe('refused');
      await new Promise((r) => setTimeout(r, 200));
      expect(family.filter(isAlive)).toEqual([]);
    });
  }

  it('refuses to start with an unknown IDENTITY_ variable, naming it, exit code 78', () => {
    const r = npm(['service', '--', 'identity'], { IDENTITY_DATA_DIR: tempDir('identity-typo'), IDENTITY_PROT: '9999' });
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/IDENTITY_PROT/);
  });

  it('answers an unknown service name with the list of names', () => {
    const r = npm(['service', '--', 'no-such-service'], {});
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/identity, persona-store, repohost-gateway, model-provider/);
  });
});

describe('npm run identity -- account add', () => {
  it('prints the new session credential as the only line on stdout, and it works', async () => {
    const dataDir = tempDir('identity-cli');
    const r = npm(['identity', '--', 'account', 'add', 'carol'], { IDENTITY_DATA_DIR: dataDir });
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    const credential = lines[0]!;
    expect(credential).toMatch(/^hubs_[A-Za-z0-9_-]{43}$/);

    const port = await freePort();
    const proc = await spawnService('identity', { IDENTITY_DATA_DIR: dataDir, IDENTITY_PORT: String(port) }, port);
    try {
      const res = await fetch(`${proc.url}/v1/auth/service-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ audience: 'persona' }),
      });
      expect(res.status).toBe(200);
      expect(proc.output()).not.toContain(credential);
    } finally {
      await proc.stop();
    }
    expect(npm(['identity', '--', 'account', 'add', 'carol'], { IDENTITY_DATA_DIR: dataDir }).status).toBe(1);
  });
});
