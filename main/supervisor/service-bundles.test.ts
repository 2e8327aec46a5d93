/**
 * The build's general manifest approach, seen through the services target (main/build/), and how the
 * supervisor's launchers choose between a bundle and the sources (service-bundles.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../test/support/process.ts';
import { build } from '../build/build.ts';
import { MANIFEST, type Manifest } from './build-outputs.ts';
import { PROJECT_ROOT } from './launcher-paths.ts';
import { bundlePath, serviceBundles } from './service-bundles.ts';
import { waitFor } from '../../test/support/wait-for.ts';

// A project-like folder: out/ two levels above each bundle, with the project's package.json and node_modules.
const project = mkdtempSync(join(tmpdir(), 'bundles-'));
writeFileSync(join(project, 'package.json'), readFileSync(join(PROJECT_ROOT, 'package.json')));
symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(project, 'node_modules'), 'dir');
const outDir = join(project, 'out');
const dir = join(outDir, 'services');
afterAll(() => rmSync(project, { recursive: true, force: true }));

function manifest(): Manifest {
  return JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Manifest;
}

describe('service bundles', () => {
  it('are built once, reused while no input changed, and rebuilt when one did or a service is new', async () => {
    const first = await build({ targets: ['services'], services: ['model-provider'], outDir });
    // swagger-ui-dist is found by path by the kit's app (its /docs), which the provider is built on.
    expect(first.services).toMatchObject({
      built: true,
      outputs: ['model-provider.mjs'],
      externals: { 'model-provider.mjs': ['pino', 'swagger-ui-dist'] },
    });
    const inputs = Object.keys(manifest().inputs);
    expect(inputs).toContain('services/model-provider/main.ts');
    expect(inputs).toContain('main/supervisor/service-prelude.ts');
    // npm packages are inside the bundle, not loaded from node_modules file by file; pino stays outside.
    expect(inputs.some((i) => i.startsWith('node_modules/express/'))).toBe(true);
    expect(inputs.some((i) => i.startsWith('node_modules/pino/'))).toBe(false);

    expect((await build({ targets: ['services'], services: ['model-provider'], outDir })).services!.built).toBe(false);

    // One input as if edited since: the next build rebuilds.
    const edited = manifest();
    const [size, mtime] = edited.inputs['services/model-provider/main.ts']!;
    edited.inputs['services/model-provider/main.ts'] = [size + 1, mtime];
    writeFileSync(join(dir, MANIFEST), JSON.stringify(edited));
    expect((await build({ targets: ['services'], services: ['model-provider'], outDir })).services!.built).toBe(true);
    // A recipe from another esbuild or another way of building: rebuilt too.
    writeFileSync(join(dir, MANIFEST), JSON.stringify({ ...manifest(), recipe: 'esbuild 0.0.1' }));
    expect((await build({ targets: ['services'], services: ['model-provider'], outDir })).services!.built).toBe(true);
    // A service the manifest does not name is built too.
    expect(
      (await build({ targets: ['services'], services: ['model-provider', 'identity'], outDir })).services!.built,
    ).toBe(true);
    expect(existsSync(bundlePath('identity', dir))).toBe(true);
    expect(manifest().externals['identity.mjs']).toEqual(['better-sqlite3', 'pino', 'swagger-ui-dist']);
  });

  it('start with the prelude (the native-module guard) before the service\u2019s own code', async () => {
    await build({ targets: ['services'], services: ['model-provider'], outDir });
    const text = readFileSync(bundlePath('model-provider', dir), 'utf8');
    const prelude = text.indexOf('startService("model-provider")');
    expect(prelude).toBeGreaterThan(0);
    expect(text.indexOf('await runUntilSignalled(')).toBeGreaterThan(prelude);
  });

  it('run as plain Node programs: the bundled provider answers /healthy', async () => {
    await build({ targets: ['services'], services: ['model-provider'], outDir });
    const port = await freePort();
    const child = spawn(process.execPath, [bundlePath('model-provider', dir)], {
      env: {
        PATH: process.env.PATH,
        HOME: project,
        MODELPROV_PORT: String(port),
        MODELPROV_DATA_DIR: join(project, 'provider-data'),
        MODELPROV_CLI_BINARY: '/nonexistent/claude',
        MODELPROV_LOG_LEVEL: 'silent',
      },
      stdio: 'ignore',
    });
    try {
      // Polled: nothing says when a port starts answering; the deadline is a backstop for a loaded machine.
      const body = await waitFor(
        'the bundle to answer /healthy',
        () =>
          fetch(`http://127.0.0.1:${port}/healthy`).then(
            (r) => r.json() as Promise<{ status: string }>,
            () => undefined,
          ),
        60_000,
      );
      expect(body).toMatchObject({ status: 'ok' });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('the launchers use current bundles, run from source (saying so) when they are older than the sources, and in an installed app use what it carries', async () => {
    await build({ targets: ['services'], services: ['model-provider'], outDir });
    const current = serviceBundles(dir);
    expect(await current.prepare(['model-provider'])).toBeUndefined();
    expect(current.command('model-provider')).toEqual({
      script: bundlePath('model-provider', dir),
      args: [],
      execArgv: [],
    });

    const edited = manifest();
    edited.inputs['services/model-provider/main.ts'] = [0, 0];
    writeFileSync(join(dir, MANIFEST), JSON.stringify(edited));
    const stale = serviceBundles(dir);
    expect(await stale.prepare(['model-provider'])).toMatch(
      /^the bundles of model-provider are missing or older than the sources, so they run from source .*`npm run build`/,
    );
    expect(stale.command('model-provider')).toEqual({
      script: join(PROJECT_ROOT, 'services', 'run.ts'),
      args: ['model-provider'],
      execArgv: ['--import', 'tsx'],
    });

    const archived = join(project, 'resources', 'app.asar', 'out', 'services');
    mkdirSync(archived, { recursive: true });
    writeFileSync(bundlePath('model-provider', archived), '// carried by the installer\n');
    const installed = serviceBundles(archived);
    expect(await installed.prepare(['model-provider'])).toBeUndefined();
    expect(installed.command('model-provider').script).toBe(bundlePath('model-provider', archived));
    // Nothing is ever built inside an archive.
    expect(
      (await build({ targets: ['services'], outDir: join(project, 'resources', 'app.asar', 'out') })).services!.built,
    ).toBe(false);
    expect(readFileSync(bundlePath('model-provider', archived), 'utf8')).toBe('// carried by the installer\n');
  });
});
