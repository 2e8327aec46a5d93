import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { descendants, isAlive } from '../main/supervisor/process-tree.ts';
import { tempDir } from './support/identity.ts';
import { freePort, ROOT, spawnService } from './support/process.ts';
import { waitFor } from './support/wait-for.ts';

/**
 * Runs an npm script to its end without blocking this process: a blocked event loop keeps an HTTP
 * client from seeing the service close an idle keep-alive connection, and its next request then
 * fails on that closed socket (seen on a busy machine, where a command takes longer than the service's
 * keep-alive timeout).
 */
const npm = (args: string[], env: Record<string, string>) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'npm',
      ['run', '--silent', ...args],
      { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ status: code, stdout, stderr });
      },
    );
  });

describe('npm run service -- identity, as a process', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`starts, answers, and on ${signal} stops cleanly with exit code 0`, async () => {
      const port = await freePort();
      const proc = await spawnService(
        'identity',
        { IDENTITY_DATA_DIR: tempDir('identity-proc'), IDENTITY_PORT: String(port) },
        port,
      );
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
      await waitFor(
        'the service to start',
        () =>
          fetch(`http://127.0.0.1:${port}/healthy`).then(
            (r) => r.ok,
            () => false,
          ),
        30_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}:\n${output}`);
      });
      const family = descendants(npmRun.pid!);
      expect(family.length).toBeGreaterThan(0);
      send(npmRun.pid!);
      expect(await exited).toBe(0);
      expect(output).toMatch(/"msg":"stopped"/);
      expect(
        await fetch(`http://127.0.0.1:${port}/healthy`).then(
          () => 'answered',
          () => 'refused',
        ),
      ).toBe('refused');
      // npm has exited; its children are gone by then or moments later (reaped): wait for that, not for a set time.
      await waitFor(`npm\u2019s children to be gone (${family.join(', ')})`, () => !family.some(isAlive), 10_000);
    });
  }

  it('refuses to start with an unknown IDENTITY_ variable, naming it, exit code 78', async () => {
    const r = await npm(['service', '--', 'identity'], {
      IDENTITY_DATA_DIR: tempDir('identity-typo'),
      IDENTITY_PROT: '9999',
    });
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/IDENTITY_PROT/);
  });

  it('answers an unknown service name with the list of names', async () => {
    const r = await npm(['service', '--', 'no-such-service'], {});
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/identity, persona-store, repohost-gateway, model-provider/);
  });
});

describe('npm run identity -- account add', () => {
  it('prints the new session credential as the only line on stdout, and it works', async () => {
    const dataDir = tempDir('identity-cli');
    const r = await npm(['identity', '--', 'account', 'add', 'carol'], { IDENTITY_DATA_DIR: dataDir });
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
    expect((await npm(['identity', '--', 'account', 'add', 'carol'], { IDENTITY_DATA_DIR: dataDir })).status).toBe(1);
  });
});

const linux = process.platform === 'linux';
describe('npm run service, one service at a time', () => {
  it.skipIf(!linux)(
    `the persona store run alone finds identity run alone in the default data folder, with nothing set but ports${linux ? '' : ' (skipped: only Linux moves the app data folder with XDG_DATA_HOME)'}`,
    async () => {
      // The default data folder, moved with XDG_DATA_HOME so that the test leaves the person's own alone.
      const home = { XDG_DATA_HOME: tempDir('xdg-data') };
      const identityPort = await freePort();
      const personaPort = await freePort();
      const identity = await spawnService('identity', { ...home, IDENTITY_PORT: String(identityPort) }, identityPort);
      try {
        const store = await spawnService(
          'persona-store',
          { ...home, PERSONA_PORT: String(personaPort), PERSONA_IDENTITY_URL: identity.url },
          personaPort,
        );
        try {
          const credential = readFileSync(
            join(home.XDG_DATA_HOME, 'hub-services', 'identity', 'local-session'),
            'utf8',
          );
          const minted = await fetch(`${identity.url}/v1/auth/service-token`, {
            method: 'POST',
            headers: { authorization: `Bearer ${credential.trim()}`, 'content-type': 'application/json' },
            body: JSON.stringify({ audience: 'persona' }),
          });
          const { token } = (await minted.json()) as { token: string };
          const listed = await fetch(`${store.url}/v1/personas`, { headers: { authorization: `Bearer ${token}` } });
          expect(listed.status).toBe(200);
          expect((await fetch(`${store.url}/ready`)).status).toBe(200);
        } finally {
          await store.stop();
        }
      } finally {
        await identity.stop();
      }
    },
  );
});

describe('npm run identity -- keys', () => {
  it('lists the published keys with the thumbprints a service pins for an identity elsewhere; rotate adds the signing one', async () => {
    const dataDir = tempDir('identity-cli-keys');
    const cli = (...args: string[]) => npm(['identity', '--', ...args], { IDENTITY_DATA_DIR: dataDir });
    const lines = async () =>
      (await cli('keys', 'list')).stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t'));
    const published = async () =>
      Promise.all(
        (JSON.parse(readFileSync(join(dataDir, 'public-keys.json'), 'utf8')) as { keys: JWK[] }).keys.map(async (k) => [
          k.kid,
          await calculateJwkThumbprint(k, 'sha256'),
        ]),
      );
    const before = await lines();
    expect(before).toHaveLength(1);
    expect(before[0]![2]).toBe('signing');
    expect(before.map((l) => l.slice(0, 2))).toEqual(await published());
    const rotated = await cli('keys', 'rotate');
    expect(rotated.status, rotated.stderr).toBe(0);
    const after = await lines();
    expect(after.map((l) => l[2])).toEqual(['retired', 'signing']);
    expect(after[0]![0]).toBe(before[0]![0]);
    expect(after.map((l) => l.slice(0, 2))).toEqual(await published());
  });
});

describe('npm run identity -- session and account commands', () => {
  it('labels, lists, expires and revokes session credentials, and removes an account with its connections', async () => {
    const dataDir = tempDir('identity-cli-sessions');
    const cli = (...args: string[]) => npm(['identity', '--', ...args], { IDENTITY_DATA_DIR: dataDir });
    const first = await cli('account', 'add', 'dave', '--label', 'laptop', '--expires-in', '90d');
    expect(first.status, first.stderr).toBe(0);
    const second = await cli('session', 'add', 'dave', '--label', 'hub');
    expect(second.status).toBe(0);
    expect(second.stdout.trim().split('\n')).toHaveLength(1);
    const secondId = /session credential (ses_[0-9a-f]{24}) for dave/.exec(second.stderr)?.[1];
    expect(secondId).toBeDefined();
    const listed = (await cli('session', 'list', 'dave')).stdout
      .trim()
      .split('\n')
      .map((l) => l.split('\t'));
    expect(listed.map((l) => l[1])).toEqual(['laptop', 'hub']);
    const days = (Date.parse(listed[0]![4]!) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(89);
    expect(days).toBeLessThanOrEqual(90);
    expect(listed[1]![4]).toBe('never');
    expect(listed.map((l) => l[5])).toEqual([
      'owner: manages credentials and connections',
      'hub: mints tokens for persona, repohost-api',
    ]);
    expect(listed.flat().join(' ')).not.toContain(second.stdout.trim());
    const bad = await cli('session', 'add', 'dave', '--expires-in', 'soon');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/--expires-in/);

    const port = await freePort();
    const proc = await spawnService('identity', { IDENTITY_DATA_DIR: dataDir, IDENTITY_PORT: String(port) }, port);
    const mintWith = (credential: string) =>
      fetch(`${proc.url}/v1/auth/service-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ audience: 'persona' }),
      }).then((r) => r.status);
    try {
      expect(await mintWith(second.stdout.trim())).toBe(200);
      // Revoked by the command line while the service runs: refused at once, no restart.
      const revoked = await cli('session', 'revoke', secondId!);
      expect(revoked.status).toBe(0);
      expect(revoked.stdout).toMatch(/stop working on every service within seconds/);
      expect(await mintWith(second.stdout.trim())).toBe(401);
      expect(await mintWith(first.stdout.trim())).toBe(200);
      const put = await fetch(`${proc.url}/v1/connections/work`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${first.stdout.trim()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'token', token: `github_pat_${'z9'.repeat(20)}` }),
      });
      expect(put.status).toBe(200);
      expect((await cli('account', 'remove', 'local')).status).toBe(1);
      const removed = await cli('account', 'remove', 'dave');
      expect(removed.status, removed.stderr).toBe(0);
      expect(removed.stdout).toMatch(/1 session credential\(s\) revoked, 1 platform connection\(s\) deleted/);
      expect(removed.stdout).toMatch(/Tokens already minted for dave stop working on every service within seconds/);
      expect(await mintWith(first.stdout.trim())).toBe(401);
      expect((await cli('account', 'list')).stdout).not.toMatch(/\tdave$/m);
      expect(proc.output()).not.toContain(first.stdout.trim());
    } finally {
      await proc.stop();
    }
  });
});
