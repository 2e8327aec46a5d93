/**
 * A native module built for another ABI: the loader's real refusal (a module compiled here that
 * registers NODE_MODULE_VERSION 150, as a build for Electron does) becomes one line that says how to
 * fix it, and a service bundle that meets it stops with that line and exit code 78, which the
 * supervisor shows and does not retry.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

/** The registration a native module makes when loaded, with another ABI's version number in it. */
const OTHER_ABI_SOURCE = `
struct node_module { int nm_version; unsigned int nm_flags; void* nm_dso_handle; const char* nm_filename;
  void* nm_register_func; void* nm_context_register_func; const char* nm_modname; void* nm_priv; struct node_module* nm_link; };
extern void node_module_register(void*);
static struct node_module mod = { 150, 0, 0, "other_abi.c", 0, 0, "better_sqlite3", 0, 0 };
static void reg(void) __attribute__((constructor));
static void reg(void) { node_module_register(&mod); }
`;

/** A C compiler makes the other-ABI module; without one (or off Linux) the tests that need it say why they are skipped. */
function compileOtherAbiModule(): { file?: string; why?: string } {
  if (process.platform !== 'linux') return { why: 'the other-ABI module is compiled as a Linux shared object' };
  const source = join(work, 'other_abi.c');
  const file = join(work, 'other_abi.node');
  writeFileSync(source, OTHER_ABI_SOURCE);
  const cc = spawnSync(process.env.CC ?? 'cc', ['-shared', '-fPIC', '-o', file, source], { encoding: 'utf8' });
  if (cc.error || cc.status !== 0)
    return { why: `no C compiler to make a module for another ABI (${cc.error?.message ?? cc.stderr.trim()})` };
  return { file };
}

const otherAbi = compileOtherAbiModule();
if (otherAbi.why)
  process.stdout.write(
    `[native-modules.test] skipped the tests that load a module for another ABI: ${otherAbi.why}.\n`,
  );

function loadError(file: string): unknown {
  try {
    process.dlopen({ exports: {} }, file);
  } catch (err) {
    return err;
  }
  throw new Error(`${file} loaded`);
}

describe('the message for a native module built for another runtime', () => {
  it.skipIf(!otherAbi.file)(
    'names the package, both ABIs and the command that fixes it, from the loader\u2019s real refusal',
    () => {
      const file = join(work, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
      mkdirSync(join(file, '..'), { recursive: true });
      copyFileSync(otherAbi.file!, file);
      const line = nativeLoadFailure(loadError(file), file);
      expect(line).toBe(
        `better-sqlite3 was built for another runtime (NODE_MODULE_VERSION 150; Node.js v${process.versions.node} needs ${process.versions.modules}). ` +
          `Run \`npm rebuild better-sqlite3\` in the project folder with this Node.js (${process.execPath}), then start again.`,
      );
      expect(line).not.toContain('\n');
      // In the installed app (Electron 45, ABI 150) meeting a build for this Node (the loader's same words, the numbers the other way round):
      const real = loadError(file) as Error & { code: string };
      const inElectron = Object.assign(
        new Error(
          real.message
            .replace('VERSION 150', 'VERSION <built>')
            .replace(`VERSION ${process.versions.modules}`, 'VERSION 150')
            .replace('VERSION <built>', `VERSION ${process.versions.modules}`),
        ),
        { code: real.code },
      );
      expect(nativeLoadFailure(inElectron, file, { node: '24.0.0', modules: '150', electron: '45.4.1' })).toBe(
        `better-sqlite3 was built for another runtime (NODE_MODULE_VERSION ${process.versions.modules}; Electron 45.4.1 needs 150). ` +
          'Reinstall the app; when building it yourself, make the installers with `npm run dist`, whose electron-builder rebuilds it for Electron.',
      );
    },
  );

  it('a file for another platform (not a shared object of this system) says so, without its path or line breaks', () => {
    const file = join(work, 'node_modules', '@scope', 'native', 'addon.node');
    mkdirSync(join(file, '..'), { recursive: true });
    // A 64-bit Mach-O header, as a macOS build would start.
    writeFileSync(file, Buffer.concat([Buffer.from([0xcf, 0xfa, 0xed, 0xfe]), Buffer.alloc(4096)]));
    const line = nativeLoadFailure(loadError(file), file)!;
    expect(line).toMatch(/^@scope\/native could not be loaded/);
    expect(line).toContain('Run `npm rebuild @scope/native`');
    expect(line).not.toContain(file);
    expect(line).not.toContain('\n');
  });

  it('any other failure is not a native-module failure', () => {
    expect(nativeLoadFailure(new TypeError('x is not a function'), '/a/node_modules/b/c.node')).toBeUndefined();
    expect(
      nativePackage('/app/resources/app.asar.unpacked/node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
    ).toBe('better-sqlite3');
    expect(nativePackage('C:\\app\\node_modules\\@s\\n\\x.node')).toBe('@s/n');
  });
});

describe('a service that meets better-sqlite3 built for another ABI', () => {
  /** A copy of the project as far as the identity bundle needs it, with better-sqlite3's .node file for ABI 150. */
  const project = join(work, 'project');
  const bundleDir = join(project, 'out', 'services');

  beforeAll(async () => {
    if (!otherAbi.file) return;
    const errors = buildErrors(await build({ targets: ['services'] }));
    if (errors) throw new Error(`the build failed:\n${errors}`);
    mkdirSync(bundleDir, { recursive: true });
    for (const file of ['identity.mjs', MANIFEST])
      copyFileSync(join(targetDir('services'), file), join(bundleDir, file));
    copyFileSync(join(PROJECT_ROOT, 'package.json'), join(project, 'package.json'));
    const modules = join(project, 'node_modules');
    cpSync(join(PROJECT_ROOT, 'node_modules', 'better-sqlite3', 'lib'), join(modules, 'better-sqlite3', 'lib'), {
      recursive: true,
    });
    copyFileSync(
      join(PROJECT_ROOT, 'node_modules', 'better-sqlite3', 'package.json'),
      join(modules, 'better-sqlite3', 'package.json'),
    );
    mkdirSync(join(modules, 'better-sqlite3', 'build', 'Release'), { recursive: true });
    copyFileSync(otherAbi.file, join(modules, 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'));
    for (const name of ['bindings', 'file-uri-to-path', 'pino', 'swagger-ui-dist'])
      symlinkSync(join(PROJECT_ROOT, 'node_modules', name), join(modules, name), 'dir');
  }, 240_000);

  it.skipIf(!otherAbi.file)('stops with one line that says what to run and exit code 78, no stack trace', async () => {
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
    expect(stderr).toBe(
      `identity: better-sqlite3 was built for another runtime (NODE_MODULE_VERSION 150; Node.js v${process.versions.node} needs ${process.versions.modules}). ` +
        `Run \`npm rebuild better-sqlite3\` in the project folder with this Node.js (${process.execPath}), then start again.\n`,
    );
  });

  it.skipIf(!otherAbi.file)('under the supervisor: gave up at once, showing that line, never restarted', async () => {
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
        /^identity: better-sqlite3 was built for another runtime \(NODE_MODULE_VERSION 150; .*Run `npm rebuild better-sqlite3`.* Not restarting: this needs a change before it can start\.$/,
      );
      expect(status!.lastError).not.toMatch(/\n\s+at /);
    } finally {
      await supervisor.close();
    }
  });
});
