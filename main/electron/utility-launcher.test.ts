/**
 * The desktop app's launchers with `electron` mocked: which runtime runs the services (utility processes
 * when packaged, Node children of the Node that ran npm otherwise), what utilityProcess.fork is asked
 * for, and how exits, kills and memory come back.
 */
import { spawn } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PassThrough } from 'node:stream';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { PROJECT_ROOT } from '../supervisor/launcher-paths.ts';
import { isAlive } from '../supervisor/process-tree.ts';
import { bundlePath } from '../supervisor/service-bundles.ts';

const forks = vi.hoisted(
  () => [] as Array<{ modulePath: string; args: string[]; options: Record<string, unknown>; child: unknown }>,
);

vi.mock('electron', () => {
  const { EventEmitter: Emitter } = process.getBuiltinModule('node:events') as typeof import('node:events');
  const { PassThrough: Pass } = process.getBuiltinModule('node:stream') as typeof import('node:stream');
  return {
    utilityProcess: {
      fork(modulePath: string, args: string[], options: Record<string, unknown>) {
        const child = Object.assign(new Emitter(), {
          pid: Number(process.env.FAKE_UTILITY_PID ?? 0) || undefined,
          stdout: new Pass(),
          stderr: new Pass(),
          kills: 0,
          kill() {
            child.kills += 1;
            return true;
          },
          posted: [] as unknown[],
          postMessage(message: unknown) {
            child.posted.push(message);
          },
        });
        forks.push({ modulePath, args, options, child });
        return child;
      },
    },
    app: {
      isPackaged: true,
      getAppMetrics: () => [
        { pid: 4242, type: 'Utility', serviceName: 'identity', memory: { workingSetSize: 51_200 } },
      ],
    },
  };
});

const temp = mkdtempSync(join(tmpdir(), 'utility-launcher-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));
afterEach(() => {
  forks.length = 0;
  delete process.env.FAKE_UTILITY_PID;
});

/** An installed app's layout: the bundles inside resources/app.asar (a folder here), no sources beside them. */
function installedBundles(): string {
  const dir = join(temp, 'resources', 'app.asar', 'out', 'services');
  mkdirSync(dir, { recursive: true });
  for (const name of ['identity', 'persona-store'])
    writeFileSync(join(dir, `${name}.mjs`), '// carried by the installer\n');
  return dir;
}

describe('the utility-process launcher (the installed app)', () => {
  it('forks the bundle the app carries, named, with piped output and the app named as the parent to watch; never tsx', async () => {
    const electron = await import('electron');
    const { utilityProcessLauncher } = await import('./utility-launcher.ts');
    const bundleDir = installedBundles();
    const launcher = utilityProcessLauncher(electron.utilityProcess.fork, electron.app, { bundleDir });
    expect(await launcher.prepare!(['identity', 'persona-store'])).toBeUndefined();
    launcher.launch('identity', { IDENTITY_PORT: '9001' });
    launcher.launch('persona-store', {});
    expect(forks.map((f) => f.modulePath)).toEqual([
      bundlePath('identity', bundleDir),
      bundlePath('persona-store', bundleDir),
    ]);
    expect(forks[0]!.args).toEqual([]);
    expect(forks[0]!.options).toMatchObject({
      env: { IDENTITY_PORT: '9001', HUB_PARENT_PID: String(process.pid) },
      stdio: 'pipe',
      serviceName: 'identity',
      execArgv: [],
      cwd: PROJECT_ROOT,
    });
  });

  it('takes no sockets (the supervisor relays the port), and speaks over the process\u2019s message port', async () => {
    const electron = await import('electron');
    const { utilityProcessLauncher } = await import('./utility-launcher.ts');
    const launcher = utilityProcessLauncher(electron.utilityProcess.fork, electron.app, {
      bundleDir: installedBundles(),
    });
    expect(launcher.takesHandles).toBe(false);
    const managed = launcher.launch('identity', {});
    const child = forks[0]!.child as EventEmitter & { posted: unknown[] };
    const heard: unknown[] = [];
    managed.onMessage((message) => heard.push(message));
    expect(managed.send({ hub: 'ping', id: 1 })).toBe(true);
    expect(child.posted).toEqual([{ hub: 'ping', id: 1 }]);
    child.emit('message', { hub: 'pong', id: 1 });
    expect(heard).toEqual([{ hub: 'pong', id: 1 }]);
  });

  it('a bundle the installation lacks is named in the log, with what to do', async () => {
    const electron = await import('electron');
    const { utilityProcessLauncher } = await import('./utility-launcher.ts');
    const launcher = utilityProcessLauncher(electron.utilityProcess.fork, electron.app, {
      bundleDir: installedBundles(),
    });
    expect(await launcher.prepare!(['identity', 'model-provider'])).toBe(
      'this installation lacks the bundle of model-provider; reinstall the app',
    );
  });

  it('reports the exit once, SIGTERM through kill(), SIGKILL to the pid, memory from the app metrics', async () => {
    const victim = spawn('sleep', ['30'], { stdio: 'ignore' });
    process.env.FAKE_UTILITY_PID = String(victim.pid);
    const electron = await import('electron');
    const { utilityProcessLauncher } = await import('./utility-launcher.ts');
    const managed = utilityProcessLauncher(electron.utilityProcess.fork, electron.app).launch('identity', {});
    const child = forks[0]!.child as EventEmitter & { kills: number; stdout: PassThrough };
    expect(managed.pid).toBe(victim.pid);
    expect(managed.kill('SIGTERM')).toBe(true);
    expect(child.kills).toBe(1);
    const gone = new Promise((resolve) => victim.once('exit', (_code, signal) => resolve(signal)));
    expect(managed.kill('SIGKILL')).toBe(true);
    expect(await gone).toBe('SIGKILL');
    expect(isAlive(victim.pid!)).toBe(false);
    const exits: Array<number | null> = [];
    managed.onExit((code) => exits.push(code));
    child.emit('exit', 137);
    managed.onExit((code) => exits.push(code));
    expect(exits).toEqual([137, 137]);
    expect(managed.kill('SIGTERM')).toBe(false);
    expect(managed.memoryBytes!()).toBeUndefined(); // the metrics know pid 4242 only
  });

  it('memory comes from Electron\u2019s metrics for the same pid, in bytes', async () => {
    process.env.FAKE_UTILITY_PID = '4242';
    const electron = await import('electron');
    const { utilityProcessLauncher } = await import('./utility-launcher.ts');
    const managed = utilityProcessLauncher(electron.utilityProcess.fork, electron.app).launch('identity', {});
    expect(managed.memoryBytes!()).toBe(51_200 * 1024);
  });
});

describe('which launcher the desktop app uses (desktopLauncher, by serviceRuntime)', () => {
  it('packaged: Electron utility processes', async () => {
    const electron = await import('electron');
    const { desktopLauncher } = await import('./utility-launcher.ts');
    const { runtime, launcher } = desktopLauncher(
      { app: { ...electron.app, isPackaged: true }, utilityProcess: electron.utilityProcess },
      {},
    );
    expect(runtime.kind).toBe('utility-process');
    launcher.launch('identity', {});
    expect(forks).toHaveLength(1);
  });

  it('not packaged (npm start): a Node child of the Node that ran npm, with an IPC channel, never a utility process', async () => {
    // A stand-in "node" that records how it was started: the launcher must run the services with it.
    const record = join(temp, 'node-run.json');
    const node = join(temp, 'recording-node');
    writeFileSync(
      node,
      `#!${process.execPath}\nrequire('node:fs').writeFileSync(${JSON.stringify(record)}, JSON.stringify({ argv: process.argv.slice(2), ipc: typeof process.send }));\n`,
    );
    chmodSync(node, 0o755);
    const electron = await import('electron');
    const { desktopLauncher } = await import('./utility-launcher.ts');
    const { runtime, launcher } = desktopLauncher(
      { app: { ...electron.app, isPackaged: false }, utilityProcess: electron.utilityProcess },
      { HUB_SERVICES_NODE: node },
    );
    expect(runtime).toMatchObject({ kind: 'node-child', node });
    const exited = new Promise<number | null>((resolve) =>
      launcher.launch('identity', { PATH: process.env.PATH ?? '' }).onExit((code) => resolve(code)),
    );
    expect(await exited).toBe(0);
    expect(forks).toHaveLength(0);
    const run = JSON.parse(readFileSync(record, 'utf8')) as { argv: string[]; ipc: string };
    expect(run.argv.at(-1) === 'identity' || run.argv.at(-1) === bundlePath('identity')).toBe(true);
    expect(run.ipc).toBe('function');
  });
});
