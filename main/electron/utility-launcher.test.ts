/** The desktop app's launcher with `electron` mocked: what it asks utilityProcess.fork for, and how exits, kills and memory come back. */
import { spawn } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import type { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isAlive } from '../supervisor/process-tree.ts';
import { bundlePath } from '../supervisor/service-bundles.ts';

const forks = vi.hoisted(() => [] as Array<{ modulePath: string; args: string[]; options: Record<string, unknown>; child: unknown }>);

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
        });
        forks.push({ modulePath, args, options, child });
        return child;
      },
    },
    app: { getAppMetrics: () => [{ pid: 4242, type: 'Utility', serviceName: 'identity', memory: { workingSetSize: 51_200 } }] },
  };
});

afterEach(() => {
  forks.length = 0;
  delete process.env.FAKE_UTILITY_PID;
});

describe('the utility-process launcher', () => {
  it('forks the service bundle with its name, piped output, the parent watch and the environment given', async () => {
    const electron = await import('electron');
    const { utilityProcessLauncher } = await import('./utility-launcher.ts');
    const launcher = utilityProcessLauncher(electron.utilityProcess.fork, electron.app, '/app/parent-watch.mjs');
    expect(await launcher.prepare!(['identity'])).toBeUndefined();
    launcher.launch('identity', { IDENTITY_PORT: '9001' });
    const [fork] = forks;
    expect(fork!.modulePath).toBe(bundlePath('identity'));
    expect(fork!.args).toEqual([]);
    expect(fork!.options).toMatchObject({
      env: { IDENTITY_PORT: '9001', HUB_PARENT_PID: String(process.pid) },
      stdio: 'pipe',
      serviceName: 'identity',
      execArgv: ['--import', '/app/parent-watch.mjs'],
    });
  });

  it('a service that is not bundled runs from source through tsx', async () => {
    const electron = await import('electron');
    const { utilityProcessLauncher } = await import('./utility-launcher.ts');
    utilityProcessLauncher(electron.utilityProcess.fork, electron.app).launch('persona-store', {});
    expect(forks[0]!.modulePath).toMatch(/services\/run\.ts$/);
    expect(forks[0]!.args).toEqual(['persona-store']);
    expect(forks[0]!.options.execArgv).toEqual(['--import', 'tsx']);
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

