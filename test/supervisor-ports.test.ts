/**
 * The supervisor holds each service's port for the app's life (main/supervisor/held-port.ts), tried the
 * way another program on the same computer would: a real second program binding the port while a
 * service is stopped, crashed or restarting; a real stand-in for identity on its port before the app
 * starts. Real services (identity, the persona store, the provider with its stand-in CLI) as Node
 * children of the real supervisor, handed the port (and, as Electron's utility processes are, relayed).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceStatus } from '../common/contract.ts';
import { headline, serviceNeed } from '../common/needs.ts';
import type { ServiceName } from '../common/services.ts';
import { trayTemplate, trayTooltip, type TrayActions } from '../main/electron/tray-menu.ts';
import { nodeChildLauncher, type ProcessLauncher } from '../main/supervisor/launcher.ts';
import { ServiceSupervisor, type SupervisorParts } from '../main/supervisor/supervisor.ts';
import { standInBinary } from '../services/model-provider/test-support/stand-in.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';
import { waitFor } from './support/wait-for.ts';

const supervisors: ServiceSupervisor[] = [];
const programs: ReturnType<typeof spawn>[] = [];
afterEach(async () => {
  for (const p of programs.splice(0)) p.kill('SIGKILL');
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
});

/** A supervisor of `services` on free ports, in a fresh data folder. */
async function supervise(
  services: ServiceName[],
  env: Record<string, string> = {},
  extra: Partial<SupervisorParts> = {},
): Promise<ServiceSupervisor> {
  const ports: Record<string, string> = {
    IDENTITY_PORT: String(await freePort()),
    PERSONA_PORT: String(await freePort()),
    MODELPROV_PORT: String(await freePort()),
  };
  const supervisor = new ServiceSupervisor({
    dataDir: tempDir('held-ports'),
    services,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IDENTITY_LOG_LEVEL: 'warn',
      PERSONA_LOG_LEVEL: 'warn',
      ...ports,
      ...env,
    },
    startTimeoutMs: 150_000,
    probeTimeoutMs: 15_000,
    ...extra,
  });
  supervisors.push(supervisor);
  return supervisor;
}

function statusOf(supervisor: ServiceSupervisor, name: ServiceName): ServiceStatus {
  return supervisor.status().find((s) => s.name === name)!;
}

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
 * Another program (a Node process of its own, which sets SO_REUSEADDR as every Node listener does) tries
 * to listen on the port: what it got, "EADDRINUSE" or "listening".
 */
function bindFromAnotherProgram(host: string, port: number): Promise<string> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').createServer();
       s.on('error', (e) => { console.log(e.code); process.exit(0); });
       s.listen(${port}, ${JSON.stringify(host)}, () => { console.log('listening'); s.close(); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.once('exit', () => resolve(out.trim())));
}

/** GET on a service's port: the status, headers and parsed body. */
async function call(url: string, path: string) {
  const res = await fetch(`${url}${path}`);
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as Record<string, unknown> };
}

describe('each service\u2019s port is the app\u2019s for the app\u2019s life', { timeout: 300_000 }, () => {
  it('stopped, crashed, restarting: no other program can bind identity\u2019s port, and its callers are told why and how to start it', async () => {
    const supervisor = await supervise(['identity'], {}, { restartPolicy: { baseDelayMs: 60_000 } });
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    const url = supervisor.url('identity');
    const port = Number(new URL(url).port);
    expect(statusOf(supervisor, 'identity').state).toBe('ready');

    // Stopped by a person.
    await supervisor.stop('identity');
    expect(await bindFromAnotherProgram('127.0.0.1', port)).toBe('EADDRINUSE');
    const stopped = await call(url, '/.well-known/jwks.json');
    expect(stopped.status).toBe(503);
    expect(stopped.headers.get('content-type')).toBe('application/problem+json');
    expect(stopped.headers.get('connection')).toBe('close');
    expect(stopped.body).toMatchObject({
      status: 503,
      title: 'Service Unavailable',
      detail:
        'The identity service was stopped in this app (its console or tray menu). Start it on the console\u2019s Services page or from the tray menu, or restart the app (`npm run serve` when it runs without a window).',
    });

    // Started again: the new process serves the port it was handed.
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    expect((await fetch(`${url}/healthy`)).status).toBe(200);

    // Crashed, waiting for its restart (a minute away here).
    const backingOff = nextStatus(supervisor, (s) => s.state === 'backing-off');
    process.kill(statusOf(supervisor, 'identity').pid!, 'SIGKILL');
    await backingOff;
    expect(await bindFromAnotherProgram('127.0.0.1', port)).toBe('EADDRINUSE');
    const crashed = await call(url, '/v1/account');
    expect(crashed.status).toBe(503);
    expect(crashed.body.detail).toMatch(
      /^The identity service stopped unexpectedly and this app restarts it in \d+ s; try again then\.$/,
    );
    expect(Number(crashed.headers.get('retry-after'))).toBeGreaterThan(1);

    // A person starts it at once; then the app quits, and the port is free again.
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    expect(statusOf(supervisor, 'identity')).toMatchObject({ state: 'ready', restarts: 0 });
    expect((await fetch(`${url}/healthy`)).status).toBe(200);
    await supervisor.close();
    expect(await bindFromAnotherProgram('127.0.0.1', port)).toBe('listening');
  });

  it('a stop during the very first start holds the port too', async () => {
    const supervisor = await supervise(['identity']);
    const starting = supervisor.start('identity');
    await supervisor.stop('identity');
    await starting;
    expect(statusOf(supervisor, 'identity').state).toBe('stopped');
    const port = Number(new URL(supervisor.url('identity')).port);
    expect(await bindFromAnotherProgram('127.0.0.1', port)).toBe('EADDRINUSE');
    const answer = await call(supervisor.url('identity'), '/healthy');
    expect(answer.status).toBe(503);
    expect(answer.body.detail).toMatch(/^The identity service (has not been started|was stopped) in this app/);
  });

  it('a process that never listens is ended and started again; meanwhile its callers hear that it is starting', async () => {
    const dir = tempDir('never-listens');
    const script = join(dir, 'never-listens.mjs');
    // Alive and connected, but never asks for its port.
    writeFileSync(script, `process.on('message', () => {}); setInterval(() => {}, 1000);`);
    const launcher: ProcessLauncher = {
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
    const supervisor = await supervise(['identity'], {}, { launcher, startTimeoutMs: 2_000, stopTimeoutMs: 500 });
    const crashed = nextStatus(supervisor, (s) => s.state === 'backing-off');
    await supervisor.start('identity');
    const starting = await call(supervisor.url('identity'), '/healthy');
    expect(starting.status).toBe(503);
    expect(starting.body.detail).toBe('The identity service is starting; try again in a moment.');
    expect(starting.headers.get('retry-after')).toBe('1');
    expect((await crashed).lastError).toMatch(
      /^the identity service did not start listening within 2 s of starting\. Restarting in 0\.5 s\.$/,
    );
  });

  it('two of the app\u2019s own services set to one port: the second is not started, and the sentence says so', async () => {
    const port = String(await freePort());
    const supervisor = await supervise(['identity', 'persona-store'], { IDENTITY_PORT: port, PERSONA_PORT: port });
    await supervisor.startAll();
    await supervisor.waitUntilSettled(undefined, 150_000);
    expect(statusOf(supervisor, 'identity').state).toBe('ready');
    expect(statusOf(supervisor, 'persona-store')).toMatchObject({
      state: 'gave-up',
      lastError: `Port ${port} is set for both the identity service and the persona store, so the persona store was not started. Give each its own port (PERSONA_PORT), then start it.`,
    });
  });

  it('on an IPv6 loopback address too', async () => {
    const supervisor = await supervise(['identity'], { IDENTITY_HOST: '::1' });
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    const url = supervisor.url('identity');
    expect(url).toMatch(/^http:\/\/\[::1\]:\d+$/);
    expect(statusOf(supervisor, 'identity').state).toBe('ready');
    expect((await fetch(`${url}/healthy`)).status).toBe(200);
    await supervisor.stop('identity');
    expect(await bindFromAnotherProgram('::1', Number(new URL(url).port))).toBe('EADDRINUSE');
    expect((await call(url, '/healthy')).status).toBe(503);
  });

  it('relayed, as the installed app\u2019s utility processes are: served through the relay, /metrics too, and held while stopped', async () => {
    const supervisor = await supervise(['identity'], {}, { launcher: nodeChildLauncher({ takesHandles: false }) });
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    expect(statusOf(supervisor, 'identity').state).toBe('ready');
    const url = supervisor.url('identity');
    const credential = await supervisor.localCredential();
    const minted = await fetch(`${url}/v1/auth/service-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ audience: 'persona' }),
    });
    expect(minted.status).toBe(200);
    // Only this machine may read /metrics: a relayed request comes from the loopback port the supervisor holds.
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('http_requests_total');
    await supervisor.stop('identity');
    expect(await bindFromAnotherProgram('127.0.0.1', Number(new URL(url).port))).toBe('EADDRINUSE');
    const stopped = await call(url, '/healthy');
    expect(stopped.status).toBe(503);
    expect(stopped.body.detail).toMatch(/^The identity service was stopped in this app/);
    await supervisor.start('identity');
    await supervisor.waitUntilSettled(undefined, 150_000);
    expect((await fetch(`${url}/healthy`)).status).toBe(200);
  });

  it('the provider\u2019s callers are answered in OpenAI\u2019s envelope, which the official client reads', async () => {
    const standIn = standInBinary(tempDir('held-cli'));
    const supervisor = await supervise(['model-provider'], { MODELPROV_CLI_BINARY: standIn.binary });
    await supervisor.start('model-provider');
    await supervisor.waitUntilSettled(undefined, 150_000);
    await supervisor.stop('model-provider');
    const client = new OpenAI({ baseURL: `${supervisor.url('model-provider')}/v1`, apiKey: 'unused', maxRetries: 0 });
    const refused = await client.chat.completions
      .create({ model: 'sonnet', messages: [{ role: 'user', content: 'hello' }] })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    const error = refused as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(503);
    expect(error.code).toBe('service_unavailable');
    expect(error.type).toBe('service_unavailable_error');
    expect(error.message).toMatch(/The chat-model provider was stopped in this app .* Start it on the console/);
  });
});

describe('a port already held by another program when the app starts', { timeout: 300_000 }, () => {
  it('is named with its program; identity and the services that trust it are not started against it, and the overview and tray say what to do', async () => {
    const identityPort = await freePort();
    // Another program on identity's port, ready to vouch for any token it is asked about.
    const impostor = spawn(
      process.execPath,
      [
        '-e',
        `require('node:http').createServer((req, res) => {
           console.log(req.method + ' ' + req.url + ' ' + (req.headers.authorization ? 'with a credential' : 'without'));
           res.setHeader('content-type', 'application/json');
           res.end(req.url === '/v1/auth/token-status' ? '{"active":true}' : req.url === '/.well-known/jwks.json' ? '{"keys":[]}' : '{}');
         }).listen(${identityPort}, '127.0.0.1', () => console.log('listening'));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    programs.push(impostor);
    let heard = '';
    impostor.stdout!.on('data', (d: Buffer) => (heard += d.toString()));
    await waitFor('the other program to listen', () => heard.includes('listening'));

    const supervisor = await supervise(['identity', 'persona-store'], { IDENTITY_PORT: String(identityPort) });
    await supervisor.startAll();
    const [identity, store] = await supervisor.waitUntilSettled(undefined, 150_000);
    expect(identity).toMatchObject({
      state: 'gave-up',
      portTaken: { service: 'identity', port: identityPort, host: '127.0.0.1', pid: impostor.pid, program: 'node' },
    });
    expect(identity!.lastError).toBe(
      `Port ${identityPort} on 127.0.0.1 is already in use by a program that is not one of these services (process ${impostor.pid}, node), ` +
        'so the identity service was not started, nor the persona store, which trust it. Stop that program, or set IDENTITY_PORT to a free port, then start the identity service. Nothing was killed.',
    );
    expect(store).toMatchObject({ state: 'gave-up', portTaken: { service: 'identity', pid: impostor.pid } });
    expect(store!.pid).toBeUndefined();
    // Nothing of the app asked it anything with a credential, nor about a token (the supervisor only asked who it is).
    expect(heard).not.toMatch(/with a credential|token-status|jwks/);

    // What the overview (its needs and headline) and the tray show.
    const statuses = supervisor.status();
    const needs = statuses.flatMap((s) => serviceNeed(s) ?? []);
    expect(needs.map((n) => [n.service, n.kind, n.action])).toEqual([
      ['identity', 'port-taken', `Stop node (process ${impostor.pid}), then start the identity service`],
      ['persona-store', 'port-taken', `Stop node (process ${impostor.pid}), then start the identity service`],
    ]);
    expect(needs[0]!.text).toBe(
      `Port ${identityPort} of the identity service is held by node (process ${impostor.pid}), not by this app, so the identity service was not started. To move the identity service instead, set IDENTITY_PORT to a free port.`,
    );
    expect(needs[1]!.text).toBe(
      `The persona store was not started: it trusts the identity service, whose port ${identityPort} is held by node (process ${impostor.pid}), not by this app. To move the identity service instead, set IDENTITY_PORT to a free port.`,
    );
    expect(headline(statuses, needs)).toEqual({
      state: 'error',
      text: `A port of this app is held by another program: Stop node (process ${impostor.pid}), then start the identity service.`,
    });
    expect(trayTooltip(statuses)).toContain(`held by another program: Stop node (process ${impostor.pid})`);
    const noop = () => undefined;
    const actions: TrayActions = {
      start: noop,
      stop: noop,
      restart: noop,
      startAll: noop,
      stopAll: noop,
      openConsole: noop,
      quit: noop,
      setLaunchAtLogin: noop,
      setCloseToTray: noop,
      setNotification: noop,
    };
    const menu = trayTemplate(statuses, actions, { launchAtLogin: false, closeToTray: true });
    const identityItem = menu.find((i) => i.id === 'service:identity')!;
    const need = (identityItem.submenu as { id?: string; label?: string; toolTip?: string }[]).find(
      (i) => i.id === 'service:identity:need',
    );
    expect(need).toMatchObject({
      label: `Stop node (process ${impostor.pid}), then start the identity service\u2026`,
    });

    // The program goes; the person starts identity; the persona store starts with it.
    const gone = new Promise((r) => impostor.once('exit', r));
    impostor.kill('SIGTERM');
    await gone;
    const storeReady = nextStatus(supervisor, (s) => s.name === 'persona-store' && s.state === 'ready');
    await supervisor.start('identity');
    expect((await storeReady).portTaken).toBeUndefined();
    expect(statusOf(supervisor, 'identity').state).toBe('ready');
  });
});
