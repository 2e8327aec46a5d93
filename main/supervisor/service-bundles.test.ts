import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../test/support/process.ts';
import { PROJECT_ROOT } from './launcher-paths.ts';
import { bundlePath, bundleServices } from './service-bundles.ts';

// As deep in the project as out/services, so a bundle finds node_modules and ../../package.json as the real ones do.
const dir = join(PROJECT_ROOT, 'out', `bundle-test-${process.pid}`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('service bundles', () => {
  it('are built once, reused while no input changed, and rebuilt when one did', async () => {
    const first = await bundleServices(['model-provider'], dir);
    expect(first).toEqual({ bundled: ['model-provider'], built: true });
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { inputs: Record<string, [number, number]> };
    const inputs = Object.keys(manifest.inputs);
    expect(inputs).toContain('services/model-provider/main.ts');
    // npm packages are inside the bundle, not loaded from node_modules file by file.
    expect(inputs.some((i) => i.startsWith('node_modules/express/'))).toBe(true);
    expect(inputs.some((i) => i.startsWith('node_modules/pino/'))).toBe(false);

    expect(await bundleServices(['model-provider'], dir)).toEqual({ bundled: ['model-provider'], built: false });

    // One input as if edited since: the next start rebuilds.
    const [size, mtime] = manifest.inputs['services/model-provider/main.ts']!;
    manifest.inputs['services/model-provider/main.ts'] = [size + 1, mtime];
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
    expect(await bundleServices(['model-provider'], dir)).toEqual({ bundled: ['model-provider'], built: true });
    // A service the manifest does not name is built too.
    expect((await bundleServices(['model-provider', 'identity'], dir)).built).toBe(true);
    expect(existsSync(bundlePath('identity', dir))).toBe(true);
  });

  it('run as plain Node programs: the bundled provider answers /healthy', async () => {
    await bundleServices(['model-provider'], dir);
    const port = await freePort();
    const child = spawn(process.execPath, [bundlePath('model-provider', dir)], {
      env: { PATH: process.env.PATH, HOME: dir, MODELPROV_PORT: String(port), MODELPROV_DATA_DIR: join(dir, 'provider-data'), MODELPROV_CLI_BINARY: '/nonexistent/claude', MODELPROV_LOG_LEVEL: 'silent' },
      stdio: 'ignore',
    });
    try {
      const deadline = Date.now() + 20_000;
      let body: { status?: string; version?: string } | undefined;
      while (!body && Date.now() < deadline) {
        body = await fetch(`http://127.0.0.1:${port}/healthy`).then((r) => r.json() as Promise<{ status: string; version: string }>, () => undefined);
        if (!body) await new Promise((r) => setTimeout(r, 50));
      }
      expect(body).toEqual({ status: 'ok', version: (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('inside an installed app\u2019s archive, are used as they are and never built', async () => {
    const archived = join(dir, 'app.asar', 'out', 'services');
    expect(await bundleServices(['model-provider'], archived)).toEqual({ bundled: [], built: false });
    mkdirSync(archived, { recursive: true });
    writeFileSync(bundlePath('model-provider', archived), '// carried by the installer\n');
    expect(await bundleServices(['model-provider', 'identity'], archived)).toEqual({ bundled: ['model-provider'], built: false });
    expect(readFileSync(bundlePath('model-provider', archived), 'utf8')).toBe('// carried by the installer\n');
  });
});
