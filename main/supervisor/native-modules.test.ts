/**
 * A native module that cannot be loaded here: the loader's real refusal (better-sqlite3's binary for
 * this system replaced by the one of another system, as a damaged or mixed-up install would have it)
 * becomes one line that says how to fix it, and a service bundle that meets it stops with that line and
 * exit code 78, which the supervisor shows and does not retry.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build, buildErrors } from '../build/build.ts';
import { MANIFEST, targetDir } from './build-outputs.ts';
import { freePort } from '../../test/support/process.ts';
import { PROJECT_ROOT } from './launcher-paths.ts';
import { nodeChildLauncher } from './launcher.ts';
import { NEEDS_A_PERSON_EXIT, nativeLoadFailure, nativePackage } from './native-modules.ts';
import { ServiceSupervisor } from './supervisor.ts';

const work = mkdtempSync(join(tmpdir(), 'native-modules-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const PREBUILDS = join(PROJECT_ROOT, 'node_modules', 'better-sqlite3', 'prebuilds');
/** better-sqlite3's binary for this system, as its loader picks it (glibc Linux, macOS, Windows). */
const THIS_SYSTEM = `${process.platform}-${process.arch}.node`;
/** The binary of another system: Windows' on Linux and macOS, Linux's on Windows. */
const OTHER_SYSTEM = readdirSync(PREBUILDS).find(
  (f) => f === (process.platform === 'win32' ? 'linux-x64.node' : `win32-${process.arch}.node`),
)!;
const FIX = 'Reinstall the dependencies on this machine (`npm ci` in the project folder), then start again.';

function loadError(file: string): unknown {
  try {
    process.dlopen({ exports: {} }, file);
  } catch (err) {
    return err;
  }
  throw new Error(`${file} loaded`);
}

describe('the message for a native module that cannot be loaded', () => {
  it('another system\u2019s binary: names the package, says so without its path or line breaks, and how to fix it', () => {
    expect(OTHER_SYSTEM).toBeDefined();
    const file = join(work, 'node_modules', 'better-sqlite3', 'prebuilds', THIS_SYSTEM);
    mkdirSync(join(file, '..'), { recursive: true });
    copyFileSync(join(PREBUILDS, OTHER_SYSTEM), file);
    const line = nativeLoadFailure(loadError(file), file)!;
    expect(line).toMatch(
      /^better-sqlite3 could not be loaded: its binary is for another platform or architecture \(.+\)\. /,
    );
    expect(line.endsWith(FIX)).toBe(true);
    expect(line).not.toContain(file);
    expect(line).not.toContain('\n');
    // In the installed app (Electron), the fix is the installer for this system.
    expect(
      nativeLoadFailure(loadError(file), file, { electron: '45.4.1' }, { platform: 'linux', arch: 'x64' }),
    ).toMatch(/\. Reinstall the app with the installer for this system \(linux, x64\)\.$/);
  });

  it('a damaged file: could not be loaded, with the loader\u2019s words', () => {
    const file = join(work, 'node_modules', '@scope', 'native', 'addon.node');
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, 'not a shared object');
    const line = nativeLoadFailure(loadError(file), file)!;
    expect(line).toMatch(/^@scope\/native could not be loaded/);
    expect(line.endsWith(FIX)).toBe(true);
    expect(line).not.toContain(file);
  });

  it('any other failure is not a native-module failure', () => {
    expect(nativeLoadFailure(new TypeError('x is not a function'), '/a/node_modules/b/c.node')).toBeUndefined();
    expect(nativePackage('/app/resources/app.asar.unpacked/node_modules/better-sqlite3/prebuilds/linux-x64.node')).toBe(
      'better-sqlite3',
    );
    expect(nativePackage('C:\\app\\node_modules\\@s\\n\\x.node')).toBe('@s/n');
  });
});

describe('a service that meets better-sqlite3 with another system\u2019s binary', () => {
  /** A copy of the project as far as the identity bundle needs it, with another system's binary in this system's place. */
  const project = join(work, 'project');
  const bundleDir = join(project, 'out', 'services');

  beforeAll(async () => {
    const errors = buildErrors(await build({ targets: ['services'] }));
    if (errors) throw new Error(`the build failed:\n${errors}`);
    mkdirSync(bundleDir, { recursive: true });
    for (const file of ['identity.mjs', MANIFEST])
      copyFileSync(join(targetDir('services'), file), join(bundleDir, file));
    copyFileSync(join(PROJECT_ROOT, 'package.json'), join(project, 'package.json'));
    const modules = join(project, 'node_modules');
    const sqlite = join(modules, 'better-sqlite3');
    for (const part of ['lib', 'package.json'])
      cpSync(join(PROJECT_ROOT, 'node_modules', 'better-sqlite3', part), join(sqlite, part), { recursive: true });
    mkdirSync(join(sqlite, 'prebuilds'), { recursive: true });
    copyFileSync(join(PREBUILDS, OTHER_SYSTEM), join(sqlite, 'prebuilds', THIS_SYSTEM));
    for (const name of ['pino', 'swagger-ui-dist'])
      symlinkSync(join(PROJECT_ROOT, 'node_modules', name), join(modules, name), 'dir');
  }, 240_000);

  it('stops with one line that says what to do and exit code 78, no stack trace', async () => {
    const child = spawn(process.execPath, [join(bundleDir, 'identity.mjs')], {
      cwd: project,
      env: {
        PATH: process.env.PATH,
        HOME: work,
        IDENTITY_PORT: String(await freePort()),
        IDENTITY_DATA_DIR: join(work, 'identity-data'),
        IDENTITY_LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(NEEDS_A_PERSON_EXIT);
    expect(stderr).toMatch(
      /^identity: better-sqlite3 could not be loaded: its binary is for another platform or architecture \([^\n]+\)\. /,
    );
    expect(stderr.endsWith(`${FIX}\n`)).toBe(true);
    expect(stderr.split('\n')).toHaveLength(2);
  });

  it('under the supervisor: gave up at once, showing that line, never restarted', async () => {
    const supervisor = new ServiceSupervisor({
      dataDir: join(work, 'supervised'),
      services: ['identity'],
      env: {
        PATH: process.env.PATH,
        HOME: work,
        IDENTITY_PORT: String(await freePort()),
        IDENTITY_LOG_LEVEL: 'silent',
      },
      launcher: nodeChildLauncher({ bundleDir }),
    });
    try {
      await supervisor.startAll();
      const [status] = await supervisor.waitUntilSettled(['identity'], 60_000);
      expect(status!.state).toBe('gave-up');
      expect(status!.restarts).toBe(0);
      expect(status!.lastError).toMatch(
        /^identity: better-sqlite3 could not be loaded: its binary is for another platform or architecture .*`npm ci`.* Not restarting: this needs a change before it can start\.$/,
      );
      expect(status!.lastError).not.toMatch(/\n\s+at /);
    } finally {
      await supervisor.close();
    }
  });
});
