import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessLauncher } from '../main/supervisor/launcher.ts';
import { ServiceSupervisor, type SupervisorParts } from '../main/supervisor/supervisor.ts';
import type { ServiceStatus } from '../common/contract.ts';
import { LOCAL_SESSION_FILE, type ServiceName } from '../common/services.ts';
import { isAlive } from '../main/supervisor/process-tree.ts';
import { standInBinary } from '../services/model-provider/test-support/stand-in.ts';
import { tempDir } from './support/identity.ts';
import { ROOT, freePort, spawnService } from './support/process.ts';
import { waitFor } from './support/wait-for.ts';

const supervisors: ServiceSupervisor[] = [];
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
});

async function identitySupervisor(extra: Partial<SupervisorParts> = {}, env: NodeJS.ProcessEnv = {}) {
  const port = await freePort();
  const supervisor = new ServiceSupervisor({
    dataDir: tempDir('supervisor-'),
    services: ['identity'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IDENTITY_PORT: String(port),
      IDENTITY_LOG_LEVEL: 'warn',
      ...env,
    },
    // A loaded machine may take long to start identity or to answer a probe; neither is what these tests are about.
    startTimeoutMs: 150_000,
    probeTimeoutMs: 15_000,
    ...extra,
  });
  supervisors.push(supervisor);
  return { supervisor, port };
}

function statusOf(supervisor: ServiceSupervisor, name: ServiceName): ServiceStatus {
  return supervisor.status().find((s) => s.name === name)!;
}

/** Resolves with the first status event that satisfies `test`. */
function nextStatus(supervisor: ServiceSupervisor, test: (s: ServiceStatus) => boolean): Promise<ServiceStatus> {
  return new Promise((resolve) => {
    const on = (s: ServiceStatus) => {
      if (test(s)) {
        supervisor.off('status', on);
        resolve(s);
      }
    };
    supervisor.on('status', on);
  });
}

/**
 * Runs a small script as the service process: a real child process standing in for a service whose
 * behaviour a test controls, with the IPC channel the supervisor speaks over (serveSupervised).
 */
function scriptLauncher(script: string): ProcessLauncher {
  return {
    takesHandles: true,
    launch: (_name, env) => {
      const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
      return {
        pid: child.pid,
        stdout: child.stdout,
        stderr: child.stderr,
        onExit: (l) => void child.once('exit', (code, signal) => l(code, signal)),
        kill: (signal) => child.kill(signal),
        send: (message, handle) => child.connected && child.send(message as object, handle as never, () => undefined),
        onMessage: (l) => void child.on('message', (message, handle) => l(message, handle)),
      };
    },
  };
}

/** The import line of a test's service script: the supervisor's channel, spoken as the kit speaks it. */
const SERVE_SUPERVISED = `import { serveSupervised } from ${JSON.stringify(join(ROOT, 'test', 'support', 'supervised-stand-in.mjs'))};`;

// Each test starts real processes, some several times; on a loaded 2-core machine that takes a while.
describe('supervisor with real child processes', { timeout: 240_000 }, () => {
  it('starts identity, wires its data folder, reports ready with pid, memory and the local session', async () => {
    // The person's shell holds more than the service needs: none of it reaches the service.
    const { supervisor, port } = await identitySupervisor(
      {},
      {
        GITHUB_TOKEN: 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB',
        NODE_OPTIONS: '--max-old-space-size=4096',
        PERSONA_LOG_LEVEL: 'debug',
        LANG: 'C.UTF-8',
      },
    );
    await supervisor.startAll();
    const [status] = await supervisor.waitUntilSettled(undefined, 150_000);
    expect(status).toMatchObject({
      name: 'identity',
      state: 'ready',
      port,
      url: `http://127.0.0.1:${port}`,
      restarts: 0,
    });
    expect(status!.pid).toBeGreaterThan(0);
    expect(status!.memoryBytes).toBeGreaterThan(1_000_000);
    // Its environment: what the system needs, its own settings, the wiring; no other program's token, no NODE_OPTIONS.
    const environment = readFileSync(`/proc/${status!.pid}/environ`, 'utf8').split('\0').filter(Boolean);
    expect(environment.map((v) => v.split('=')[0]).sort()).toEqual(
      [
        'HOME',
        'HUB_LISTEN',
        'IDENTITY_DATA_DIR',
        'IDENTITY_HOST',
        'IDENTITY_LOG_LEVEL',
        'IDENTITY_PORT',
        'IDENTITY_SERVICE_TOKENS',
        'LANG',
        // Node's own, for the IPC channel.
        'NODE_CHANNEL_FD',
        'NODE_CHANNEL_SERIALIZATION_MODE',
        'PATH',
      ].sort(),
    );
    expect((await fetch(`${supervisor.url('identity')}/healthy`)).status).toBe(200);
    const credential = await supervisor.localCredential();
    expect(credential.length).toBeGreaterThan(16);
    const minted = await fetch(`${supervisor.url('identity')}/v1/auth/service-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ audience: 'persona' }),
    });
    expect(minted.status).toBe(200);
    // The gateway's service token is made once and kept owner-only.
    expect(statSync(join(supervisor.dataDir, 'repohost-service-token')).mode & 0o777).toBe(0o600);
    expect(statSync(join(supervisor.dataDir, 'identity', LOCAL_SESSION_FILE)).isFile()).toBe(true);
    expect(supervisor.logs('identity', { filter: 'ready after' }).length).toBe(1);
    // What the ring holds goes to the service's log file too: the supervisor's notes and the service's own lines.
    await supervisor.close();
    const file = readFileSync(join(supervisor.dataDir, 'logs', 'identity.log'), 'utf8');
    expect(file).toMatch(/^\S+ stderr \[supervisor\] started \(pid \d+\)/m);
    expect(file).toMatch(/\[supervisor\] ready after \d+ ms/);
    expect(file).not.toContain(credential);
  });

  it('a killed service comes back after a backoff delay, and a user stop is not undone', async () => {
    const { supervisor } = await identitySupervisor({ restartPolicy: { baseDelayMs: 300, maxCrashes: 5 } });
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    const firstPid = statusOf(supervisor, 'identity').pid!;
    const backingOff = nextStatus(supervisor, (s) => s.state === 'backing-off');
    process.kill(firstPid, 'SIGKILL');
    const during = await backingOff;
    expect(during.lastError).toMatch(/ended by SIGKILL.*Restarting in 0\.3 s/);
    // The time of the restart comes as data too (the console counts down to it): the backoff delay after the crash was noted.
    const noted = supervisor.logs('identity', { filter: 'restarting in' }).at(-1)!;
    expect(noted.text).toContain('restarting in 300 ms');
    expect(Date.parse(during.restartAt!) - Date.parse(noted.time)).toBe(300);
    const again = await nextStatus(supervisor, (s) => s.state === 'ready');
    expect(again.restartAt).toBeUndefined();
    expect(again.restarts).toBe(1);
    expect(again.pid).not.toBe(firstPid);
    expect(isAlive(firstPid)).toBe(false);

    // The second crash inside the window waits twice as long; a stop by the user meanwhile cancels that restart.
    const second = nextStatus(supervisor, (s) => s.state === 'backing-off');
    process.kill(again.pid!, 'SIGKILL');
    expect((await second).lastError).toMatch(/Restarting in 0\.6 s/);
    const later: ServiceStatus[] = [];
    supervisor.on('status', (s: ServiceStatus) => later.push(s));
    await supervisor.stop('identity');
    // The stop called the scheduled restart off, and said so in the same step.
    expect(supervisor.logs('identity', { filter: 'restart called off' })).toHaveLength(1);
    expect(later.map((s) => s.state)).toEqual(['stopped']);
    expect(statusOf(supervisor, 'identity')).toMatchObject({ state: 'stopped', restarts: 1 });
    expect(statusOf(supervisor, 'identity').pid).toBeUndefined();

    // A stop of a running service ends in stopped, with no restart on the way (a restart would pass through backing-off).
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    later.length = 0;
    await supervisor.stop('identity');
    expect(later.map((s) => s.state)).toEqual(['stopping', 'stopped']);
    expect(supervisor.logs('identity', { filter: 'restarting in' }).map((l) => l.text)).toEqual([
      expect.stringContaining('restarting in 300 ms'),
      expect.stringContaining('restarting in 600 ms'),
    ]);
  });

  it('a crash loop gives up and says so, and a manual start tries again', async () => {
    const policy = { baseDelayMs: 50, maxCrashes: 3, windowMs: 120_000 };
    const { supervisor } = await identitySupervisor({ restartPolicy: policy });
    const killed: number[] = [];
    // Each time the service answers, it "crashes" again: three crashes inside the window.
    supervisor.on('status', (s: ServiceStatus) => {
      if ((s.state === 'live' || s.state === 'ready') && s.pid && !killed.includes(s.pid)) {
        killed.push(s.pid);
        process.kill(s.pid, 'SIGKILL');
      }
    });
    const gaveUp = nextStatus(supervisor, (s) => s.state === 'gave-up');
    await supervisor.start('identity');
    const final = await gaveUp;
    expect(killed).toHaveLength(3);
    expect(final.restarts).toBe(2);
    expect(final.lastError).toMatch(
      /^Gave up after 3 crashes within 120 s\. Last: the identity service was ended by SIGKILL\. Look at its log, then start it again\.$/,
    );
    // It stays down: a restart is noted ("restarting in") in the step that schedules it, and the crash that
    // gave up noted none.
    const notes = supervisor.logs('identity', { filter: '[supervisor]' }).map((l) => l.text);
    expect(notes.filter((t) => t.includes('restarting in'))).toHaveLength(2);
    expect(notes.at(-1)).toMatch(/Gave up after 3 crashes/);
    expect(final.restartAt).toBeUndefined();
    expect(statusOf(supervisor, 'identity').state).toBe('gave-up');
    expect(statusOf(supervisor, 'identity').pid).toBeUndefined();
    supervisor.removeAllListeners('status');
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    expect(statusOf(supervisor, 'identity').state).toBe('ready');
  });

  it('a configuration error gives up at once with the service\u2019s own message', async () => {
    const { supervisor } = await identitySupervisor({}, { IDENTITY_TOKEN_TTL_SECOND: '60' });
    await supervisor.start('identity');
    const [status] = await supervisor.waitUntilSettled(undefined, 150_000);
    expect(status!.state).toBe('gave-up');
    expect(status!.restarts).toBe(0);
    expect(status!.lastError).toMatch(/Unknown setting IDENTITY_TOKEN_TTL_SECOND.*Not restarting/);
  });

  it('a busy port held by a foreign program gives a clear error naming the port and kills nothing', async () => {
    const holder: Server = createServer((socket) => socket.end('not http\n'));
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const port = (holder.address() as { port: number }).port;
    try {
      const { supervisor } = await identitySupervisor({}, { IDENTITY_PORT: String(port) });
      await supervisor.start('identity');
      const status = statusOf(supervisor, 'identity');
      expect(status.state).toBe('gave-up');
      // The holder is this test's own process, so /proc names it.
      expect(status.lastError).toBe(
        `Port ${port} on 127.0.0.1 is already in use by a program that is not one of these services (process ${process.pid}, ${basename(readlinkSync('/proc/self/exe'))}), ` +
          'so the identity service was not started. Stop that program, or set IDENTITY_PORT to a free port, then start the identity service. Nothing was killed.',
      );
      expect(holder.listening).toBe(true);
    } finally {
      holder.close();
    }
  });

  it('a busy port held by another copy of one of our services names that service and leaves it running', async () => {
    const port = await freePort();
    const other = await spawnService(
      'identity',
      { IDENTITY_PORT: String(port), IDENTITY_DATA_DIR: tempDir('other-identity-'), IDENTITY_LOG_LEVEL: 'warn' },
      port,
    );
    try {
      const { supervisor } = await identitySupervisor({}, { IDENTITY_PORT: String(port) });
      await supervisor.start('identity');
      expect(statusOf(supervisor, 'identity').lastError).toMatch(
        new RegExp(
          `^Port ${port} on 127\\.0\\.0\\.1 is already in use by another copy of the identity service .*\\(process ${other.child.pid}, node\\)`,
        ),
      );
      expect((await fetch(`${other.url}/healthy`)).status).toBe(200);
    } finally {
      await other.stop();
    }
  });

  it('a service that ignores SIGTERM is killed after the stop timeout, with what it started', async () => {
    const port = await freePort();
    const stubborn = join(tempDir('stubborn-'), 'stubborn.mjs');
    writeFileSync(
      stubborn,
      `${SERVE_SUPERVISED} import { spawn } from 'node:child_process';
       process.on('SIGTERM', () => {});
       const grandchild = spawn(process.execPath, ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
       console.log('grandchild ' + grandchild.pid);
       serveSupervised((q, s) => s.end(q.url === '/healthy' || q.url === '/ready' ? '{"status":"ok"}' : ''));`,
    );
    const { supervisor } = await identitySupervisor(
      {
        stopTimeoutMs: 500,
        launcher: scriptLauncher(stubborn),
      },
      { IDENTITY_PORT: String(port) },
    );
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    const pid = statusOf(supervisor, 'identity').pid!;
    const grandchild = Number(
      (await waitFor('grandchild pid', () => supervisor.logs('identity', { filter: 'grandchild' })[0]))!.text.split(
        ' ',
      )[1],
    );
    expect(isAlive(grandchild)).toBe(true);
    await supervisor.stop('identity');
    expect(statusOf(supervisor, 'identity').state).toBe('stopped');
    expect(supervisor.logs('identity', { filter: 'SIGKILL' })[0]!.text).toMatch(
      /did not stop within 500 ms of SIGTERM; sending SIGKILL to it and 1 process\(es\) it started/,
    );
    expect(isAlive(pid)).toBe(false);
    await waitFor('grandchild gone', () => !isAlive(grandchild));
  });

  it('a service that is merely not ready is degraded, never restarted; one whose event loop stops answering is restarted', async () => {
    const port = await freePort();
    const control = tempDir('flaky-');
    const script = join(control, 'flaky.mjs');
    writeFileSync(
      script,
      `${SERVE_SUPERVISED} import { existsSync } from 'node:fs';
       const flag = (name) => existsSync(${JSON.stringify(control)} + '/' + name);
       process.on('SIGTERM', () => process.exit(0));
       // A hung service: its event loop stops (it answers neither the supervisor's pings nor anyone else).
       setInterval(() => { while (flag('hang')) {} }, 20);
       serveSupervised((q, s) => {
         if (q.url === '/ready' && flag('unready')) { console.log('answered a /ready probe: not ready'); s.statusCode = 503; s.end('{"detail":"Not ready: the CLI probe is still running."}'); return; }
         s.end('{"status":"ready"}');
       });`,
    );
    const { supervisor } = await identitySupervisor(
      // A ping unanswered for 3 s counts as failed: three of them in a row while the service hangs is what restarts it.
      {
        launcher: scriptLauncher(script),
        pollMs: 100,
        probeTimeoutMs: 3_000,
        stopTimeoutMs: 500,
        restartPolicy: { baseDelayMs: 100 },
      },
      { IDENTITY_PORT: String(port) },
    );
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    const pid = statusOf(supervisor, 'identity').pid;

    writeFileSync(join(control, 'unready'), '');
    const degraded = await nextStatus(supervisor, (s) => s.state === 'degraded');
    expect(degraded.lastError).toBe('Not ready: the CLI probe is still running.');
    // Many probe rounds later (the service logs each one it answers) it is still the same process, still degraded.
    await new Promise<void>((resolve) => {
      let rounds = 0;
      const on = (line: { text: string }) => {
        if (line.text.includes('answered a /ready probe') && ++rounds === 5) {
          supervisor.off('log', on);
          resolve();
        }
      };
      supervisor.on('log', on);
    });
    expect(statusOf(supervisor, 'identity')).toMatchObject({ state: 'degraded', pid, restarts: 0 });
    rmSync(join(control, 'unready'));
    await nextStatus(supervisor, (s) => s.state === 'ready');

    writeFileSync(join(control, 'hang'), '');
    const restarting = await nextStatus(supervisor, (s) => s.state === 'backing-off');
    expect(restarting.lastError).toMatch(
      /^the identity service stopped answering the supervisor's liveness check \(3 in a row\)\. Restarting in 0\.1 s\.$/,
    );
    rmSync(join(control, 'hang'));
    const back = await nextStatus(supervisor, (s) => s.state === 'ready');
    expect(back.restarts).toBe(1);
    expect(back.pid).not.toBe(pid);
    expect(isAlive(pid!)).toBe(false);
  });

  it('SIGKILL of the supervisor leaves no child alive, the provider\u2019s CLI runs included', async () => {
    const dataDir = tempDir('orphans-');
    const standIn = standInBinary(tempDir('orphans-cli-'));
    const ports = { identity: await freePort(), provider: await freePort() };
    const host = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'test', 'support', 'supervisor-host.ts'), dataDir, 'identity', 'model-provider'],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          IDENTITY_PORT: String(ports.identity),
          IDENTITY_LOG_LEVEL: 'warn',
          MODELPROV_PORT: String(ports.provider),
          MODELPROV_CLI_BINARY: standIn.binary,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    host.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const line = await waitFor(
      'the supervisor host to report',
      () => out.includes('\n') && out.split('\n')[0],
      170_000,
    );
    const statuses = JSON.parse(line) as ServiceStatus[];
    expect(statuses.map((s) => s.state)).toEqual(['ready', 'ready']);
    // A CLI run that never finishes, in flight when the supervisor dies.
    void fetch(`http://127.0.0.1:${ports.provider}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'wait [stand-in:hang]' }] }),
    }).catch(() => undefined);
    const run = await waitFor('the CLI run to start', () => standIn.runs().find((r) => r.stdin.includes('wait')));
    const pids = [...statuses.map((s) => s.pid!), run.pid, ...(run.grandchildPid ? [run.grandchildPid] : [])];
    expect(pids.every(isAlive)).toBe(true);
    const exited = new Promise((resolve) => host.once('exit', resolve));
    host.kill('SIGKILL');
    await exited;
    await waitFor('every child to exit', () => pids.every((p) => !isAlive(p)));
    expect(pids.filter(isAlive)).toEqual([]);
  });
});
