/**
 * Production dependencies are exactly what the built code loads at run time (electron-builder packs
 * those and nothing else): every package a built output imports or finds by path is one, and each one
 * is imported by some output. Everything else the code uses is bundled into out/, so it is a
 * devDependency. Read from the build's own record of each output's imports (main/build/).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build as esbuild } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDED_BY_ELECTRON, RUNTIME_PACKAGES, build, buildErrors, runtimePackages } from '../main/build/build.ts';
import { readManifest, targetDir, type Manifest } from '../main/supervisor/build-outputs.ts';
import { SERVICE_NAMES } from '../main/supervisor/types.ts';
import { ROOT } from './support/process.ts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const manifests = new Map<string, Manifest>();

beforeAll(async () => {
  const errors = buildErrors(await build({ targets: ['main', 'services'] }));
  if (errors) throw new Error(`the build failed:\n${errors}`);
  for (const target of ['main', 'services'] as const) manifests.set(target, readManifest(targetDir(target))!);
}, 240_000);

/** Each built output with the packages it needs at run time, `electron` (the runtime's own) left out. */
function runtimeImports(): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  for (const [target, manifest] of manifests) {
    for (const [output, packages] of Object.entries(manifest.externals)) {
      for (const name of packages)
        if (!(PROVIDED_BY_ELECTRON as readonly string[]).includes(name)) pairs.push([`out/${target}/${output}`, name]);
    }
  }
  return pairs;
}

describe('production dependencies', () => {
  it('the build recorded the imports of the main process, the preload and every service', () => {
    expect(Object.keys(manifests.get('main')!.externals).sort()).toEqual(['app.mjs', 'preload.cjs']);
    expect(Object.keys(manifests.get('services')!.externals).sort()).toEqual(
      SERVICE_NAMES.map((n) => `${n}.mjs`).sort(),
    );
  });

  it('hold every package a built output loads at run time', () => {
    const undeclared = runtimeImports().filter(([, name]) => !Object.hasOwn(pkg.dependencies, name));
    expect(undeclared.map(([output, name]) => `${output} loads ${name}, which is not a production dependency`)).toEqual(
      [],
    );
  });

  it('hold nothing that no built output loads (test, bench and build tools are devDependencies)', () => {
    const loaded = new Set(runtimeImports().map(([, name]) => name));
    expect(Object.keys(pkg.dependencies).filter((name) => !loaded.has(name))).toEqual([]);
    expect(Object.keys(pkg.dependencies).sort()).toEqual([...RUNTIME_PACKAGES].sort());
    for (const tool of [
      'tsx',
      'esbuild',
      'typescript',
      'vitest',
      'electron',
      'electron-builder',
      'electron-store',
      'conf',
      'playwright-core',
    ]) {
      expect(Object.hasOwn(pkg.devDependencies, tool), `${tool} is a devDependency`).toBe(true);
    }
  });

  it('the main process bundles electron-store (and conf under it) and loads only electron at run time', () => {
    const main = manifests.get('main')!;
    expect(main.externals).toEqual({ 'app.mjs': ['electron'], 'preload.cjs': ['electron'] });
    const bundled = Object.keys(main.inputs);
    expect(bundled.some((input) => input.startsWith('node_modules/electron-store/'))).toBe(true);
    expect(bundled.some((input) => input.startsWith('node_modules/conf/'))).toBe(true);
    // No build tool runs in the app.
    expect(bundled.filter((input) => /^node_modules\/(esbuild|tsx|typescript|vite|vitest)\//.test(input))).toEqual([]);
    expect(bundled.filter((input) => input.startsWith('main/build/'))).toEqual([]);
  });
});

describe('what counts as a run-time import (runtimePackages)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'runtime-packages-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('an import left outside, a package found by path, and an optional one apart; Node\u2019s own modules never', async () => {
    const entry = join(dir, 'entry.js');
    writeFileSync(
      entry,
      [
        "import pino from 'pino';",
        "import { readFileSync } from 'node:fs';",
        'import { createRequire } from "node:module";',
        'const require = createRequire(import.meta.url);',
        "const docs = require.resolve('swagger-ui-dist/package.json');",
        "import native from './optional.cjs';",
        'export { pino, readFileSync, docs, native };',
      ].join('\n'),
    );
    // As pg loads pg-native: a CommonJS require inside a try block, of a package that is not installed.
    writeFileSync(
      join(dir, 'optional.cjs'),
      "let native; try { native = require('pg-native-not-installed'); } catch {}\nmodule.exports = native;\n",
    );
    const result = await esbuild({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
      external: [...RUNTIME_PACKAGES],
      outdir: dir,
      absWorkingDir: ROOT,
    });
    expect(runtimePackages(result.metafile, result.outputFiles[0]!.text)).toEqual({
      required: ['pino', 'swagger-ui-dist'],
      optional: ['pg-native-not-installed'],
    });
  });
});
