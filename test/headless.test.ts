import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SERVICE_NAMES } from '../common/services.ts';
import { whyNoDesktop } from '../main/electron/binary.ts';
import { descendants, isAlive } from '../main/supervisor/process-tree.ts';
import { standInBinary } from '../services/model-provider/test-support/stand-in.ts';
import { startGitHubDouble, type GitHubDouble } from './github-double/double.ts';
import { tempDir } from './support/identity.ts';
import { ROOT, freePort } from './support/process.ts';
import { waitFor } from './support/wait-for.ts';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

describe('npm run serve (headless)', () => {
  it(
    '`npm run serve` starts every service to ready, prints the URLs, and Ctrl-C exits 0 leaving no process behind',
    { timeout: 300_000 },
    async () => {
      const dataDir = tempDir('headless-');
      const standIn = standInBinary(tempDir('headless-cli-'));
      const ports = {
        IDENTITY_PORT: await freePort(),
        PERSONA_PORT: await freePort(),
        REPOHOST_PORT: await freePort(),
        MODELPROV_PORT: await freePort(),
      };
      // The gateway is ready only when its platform answers; here that is the GitHub double on loopback.
      const platform: GitHubDouble = await startGitHubDouble();
      cleanups.push(() => platform.close());
      // Through npm, as a person runs it, in a process group of its own so that Ctrl-C can be sent to the whole group as a terminal does.
      const serve = spawn('npm', ['run', 'serve', '--', '--data-dir', dataDir], {
        cwd: ROOT,
        detached: true,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: tempDir('headless-home-'),
          ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
          MODELPROV_CLI_BINARY: standIn.binary,
          REPOHOST_PLATFORM_URL: platform.url,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      cleanups.push(() => {
        if (serve.exitCode === null) process.kill(-serve.pid!, 'SIGKILL');
      });
      let out = '';
      const exited = new Promise<number | string>((resolve) =>
        serve.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
      );
      const listeners: Array<() => void> = [];
      const take = (d: Buffer) => {
        out += d.toString();
        for (const l of [...listeners]) l();
      };
      serve.stdout!.on('data', take);
      serve.stderr!.on('data', take);
      /** Resolves when the output so far passes `test`, or when the program has ended (the caller then checks the exit). */
      const printed = (test: (text: string) => boolean) =>
        new Promise<void>((resolve) => {
          const check = () => {
            if (test(out)) resolve();
          };
          listeners.push(check);
          void exited.then(() => resolve());
          check();
        });
      await printed((text) => text.includes('Press Ctrl-C to stop.'));
      expect(serve.exitCode, out).toBeNull();

      const portOf: Record<string, number> = {
        identity: ports.IDENTITY_PORT,
        'persona-store': ports.PERSONA_PORT,
        'repohost-gateway': ports.REPOHOST_PORT,
        'model-provider': ports.MODELPROV_PORT,
      };
      const expected = SERVICE_NAMES.map(
        (name) => new RegExp(`${name}\\s+ready\\s+http://127\\.0\\.0\\.1:${portOf[name]}`),
      );
      // The summary comes after 20 s at the latest; a service ready later (a loaded machine) is printed when it is.
      await printed((text) => expected.every((e) => e.test(text)));
      expect(serve.exitCode, out).toBeNull();
      for (const name of SERVICE_NAMES)
        expect((await fetch(`http://127.0.0.1:${portOf[name]}/ready`)).status).toBe(200);
      const consoleUrl = /Console: (http:\/\/127\.0\.0\.1:\d+\/#secret=\S+)/.exec(out)?.[1];
      expect(consoleUrl, out).toBeDefined();
      // The printed console sees the same supervisor: every service in the state the summary printed.
      const url = new URL(consoleUrl!);
      const answer = await fetch(new URL('/api/call', url), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-console-secret': new URLSearchParams(url.hash.slice(1)).get('secret')!,
        },
        body: JSON.stringify({ method: 'services.list' }),
      });
      const listed = (await answer.json()) as { ok: boolean; data: Array<{ name: string; state: string }> };
      expect(listed.ok).toBe(true);
      expect(listed.data.map((s) => s.name)).toEqual([...SERVICE_NAMES]);
      for (const s of listed.data) expect(s.state).toBe('ready');
      expect(out).toContain(`Data folder: ${dataDir}`);

      // Signals never go to the console's port: the gateway refuses it at opening, before any connection is made.
      const credential = readFileSync(join(dataDir, 'identity', 'local-session'), 'utf8').trim();
      const identityUrl = `http://127.0.0.1:${ports.IDENTITY_PORT}`;
      const platformToken = `github_pat_${'Hh5'.repeat(10)}`;
      platform.addUser('octo');
      platform.addToken(platformToken, 'octo');
      const connected = await fetch(`${identityUrl}/v1/connections/work`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'token', token: platformToken }),
      });
      expect(connected.status, await connected.text()).toBeLessThan(300);
      const minted = await fetch(`${identityUrl}/v1/auth/service-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ audience: 'repohost-api' }),
      });
      const gatewayToken = ((await minted.json()) as { token: string }).token;
      const aimed = await fetch(`http://127.0.0.1:${ports.REPOHOST_PORT}/v1/subscriptions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${gatewayToken}`,
          'x-identity-profile': 'work',
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          kind: 'pull_merged',
          repo: 'octo/hello',
          pull: 1,
          signal_url: `http://127.0.0.1:${url.port}/api/call`,
        }),
      });
      expect(aimed.status).toBe(422);
      expect(((await aimed.json()) as { detail: string }).detail).toContain(
        `port ${url.port} is one of this app\u2019s own`,
      );

      // A CLI run in flight when Ctrl-C arrives must die with the provider.
      const hanging = fetch(`http://127.0.0.1:${ports.MODELPROV_PORT}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'wait [stand-in:hang]' }] }),
      }).catch((e: unknown) => e);
      await waitFor('the CLI run to start', () => standIn.runs().some((r) => r.stdin.includes('wait')));
      const family = descendants(serve.pid!);
      const cliRuns = standIn.runs().flatMap((r) => [r.pid, ...(r.grandchildPid ? [r.grandchildPid] : [])]);
      expect(family.length).toBeGreaterThanOrEqual(1);
      expect(cliRuns.filter(isAlive).length).toBeGreaterThan(0);

      // Ctrl-C in a terminal: SIGINT to npm and everything in its group at once.
      process.kill(-serve.pid!, 'SIGINT');
      expect(await exited, out).toBe(0);
      expect(out).toContain('Stopped.');
      await hanging;
      await waitFor('every process to be gone', () => [...family, ...cliRuns].every((p) => !isAlive(p)));
      expect([...family, ...cliRuns].filter(isAlive)).toEqual([]);
    },
  );

  it(
    'a port held by another program at start: the output names it, says which services were not started and what to do',
    { timeout: 300_000 },
    async () => {
      const identityPort = await freePort();
      // Another program on identity's port before the app starts.
      const other = spawn(
        process.execPath,
        [
          '-e',
          `require('node:http').createServer((q, s) => s.end('{}')).listen(${identityPort}, '127.0.0.1', () => console.log('listening'))`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      cleanups.push(() => other.kill('SIGKILL'));
      await new Promise<void>((resolve) => other.stdout!.once('data', () => resolve()));
      const standIn = standInBinary(tempDir('headless-taken-cli-'));
      const serve = spawn('npm', ['run', 'serve', '--', '--data-dir', tempDir('headless-taken-')], {
        cwd: ROOT,
        detached: true,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: tempDir('headless-taken-home-'),
          IDENTITY_PORT: String(identityPort),
          PERSONA_PORT: String(await freePort()),
          REPOHOST_PORT: String(await freePort()),
          MODELPROV_PORT: String(await freePort()),
          MODELPROV_CLI_BINARY: standIn.binary,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      cleanups.push(() => {
        if (serve.exitCode === null) process.kill(-serve.pid!, 'SIGKILL');
      });
      let out = '';
      const exited = new Promise<number | string>((resolve) =>
        serve.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
      );
      const done = new Promise<void>((resolve) => {
        const take = (d: Buffer) => {
          out += d.toString();
          if (out.includes('Press Ctrl-C to stop.')) resolve();
        };
        serve.stdout!.on('data', take);
        serve.stderr!.on('data', take);
        void exited.then(() => resolve());
      });
      await done;
      const todo = `What to do: Stop node (process ${other.pid}), then start the identity service`;
      expect(out).toMatch(
        new RegExp(
          `identity\\s+gave-up .*\\n.*Port ${identityPort} on 127\\.0\\.0\\.1 is already in use by .*\\(process ${other.pid}, node\\)`,
        ),
      );
      for (const name of ['identity', 'persona-store', 'repohost-gateway'])
        expect(out).toMatch(new RegExp(`${name}\\s+gave-up[^\\n]*\\n[^\\n]*\\n\\s+${todo.replace(/[()]/g, '\\$&')}`));
      expect(out).toMatch(/The persona store was not started: it trusts the identity service/);
      process.kill(-serve.pid!, 'SIGINT');
      expect(await exited, out).toBe(0);
    },
  );

  it('`npm start` without Electron runs headless, and SIGINT to npm alone (an editor\u2019s stop button) stops it all', async (ctx) => {
    const ports = {
      IDENTITY_PORT: await freePort(),
      PERSONA_PORT: await freePort(),
      REPOHOST_PORT: await freePort(),
      MODELPROV_PORT: await freePort(),
    };
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: tempDir('start-home-'),
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      MODELPROV_CLI_BINARY: standInBinary(tempDir('start-cli-')).binary,
      // Nothing listens here: the gateway waits for its platform, which is all this case needs of it.
      REPOHOST_PLATFORM_URL: `http://127.0.0.1:${await freePort()}`,
    };
    // No DISPLAY in that environment: on Linux always headless; elsewhere Electron, where installed, would open.
    const noDesktop = whyNoDesktop(ROOT, env);
    if (!noDesktop) {
      console.warn(
        '[headless.test] `npm start` case skipped: Electron is installed, so it would open the desktop app.',
      );
      ctx.skip();
    }
    const dataDir = tempDir('start-');
    const start = spawn('npm', ['start', '--', '--data-dir', dataDir], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => {
      for (const pid of [...descendants(start.pid!), start.pid!].filter(isAlive)) process.kill(pid, 'SIGKILL');
    });
    let out = '';
    start.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    start.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | string>((resolve) =>
      start.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
    );
    await waitFor('`npm start` to be up', () => out.includes('Press Ctrl-C to stop.') || start.exitCode !== null);
    expect(out).toContain(`Running headless: ${noDesktop}`);
    const family = descendants(start.pid!);
    expect(family.length).toBeGreaterThanOrEqual(1);

    start.kill('SIGINT');
    expect(await exited, out).toBe(0);
    expect(out).toContain('Stopped.');
    await waitFor('every process to be gone', () => family.every((p) => !isAlive(p)));
  }, 300_000);

  it('`npm start` with a display and no Electron binary fetches it first, and says what to run when it cannot', async (ctx) => {
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: tempDir('start-fetch-home-'),
      // A window could open here; the download goes to an address where nothing listens (offline).
      DISPLAY: ':99',
      ELECTRON_MIRROR: `http://127.0.0.1:${await freePort()}/`,
      electron_config_cache: tempDir('start-fetch-cache-'),
    };
    if (!whyNoDesktop(ROOT, env)) {
      console.warn('[headless.test] download case skipped: Electron is installed, so there is nothing to fetch.');
      ctx.skip();
    }
    // `--help` goes on to the headless entry, which prints its usage and ends: no service starts.
    const start = spawn('npm', ['start', '--', '--help'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    start.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    start.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => start.once('exit', resolve));
    expect(out).toContain('Downloading Electron\u2019s binary, once');
    expect(out).toContain(
      'Running headless: Electron\u2019s binary could not be downloaded (see above); run `npx install-electron` once the network is there, then `npm start` again.',
    );
    expect(out).toContain('Usage: npm run serve');
    expect(code, out).toBe(0);
  }, 300_000);

  it('refuses an unknown option with the usage', async () => {
    const run = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'main', 'headless.ts'), '--datadir', '/tmp/x'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    run.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((resolve) => run.once('exit', resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/Unknown option '--datadir'/);
    expect(err).toContain('Usage: npm run serve -- [--data-dir <path>]');
  });
});
