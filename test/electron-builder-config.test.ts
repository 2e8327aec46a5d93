import { existsSync, readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/process.ts';

/** electron-builder.yml is plain YAML of maps, lists and scalars; js-yaml comes with electron-builder. */
async function loadYaml(text: string): Promise<unknown> {
  const yaml = (await import(join(ROOT, 'node_modules', 'js-yaml', 'index.js'))) as { load(text: string): unknown };
  return yaml.load(text);
}

describe('electron-builder.yml', () => {
  it('is valid against electron-builder\u2019s own JSON schema', async () => {
    const schema = JSON.parse(
      readFileSync(join(ROOT, 'node_modules', 'app-builder-lib', 'scheme.json'), 'utf8'),
    ) as object;
    const config = await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'));
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(schema);
    const valid = validate(config);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(valid).toBe(true);
    // The same schema refuses a misspelt key, so the check above can fail.
    expect(validate({ ...(config as object), asarUnpak: ['x'] })).toBe(false);
  });

  it('builds AppImage, deb, dmg and nsis from the build only, rebuilds nothing for Electron and unpacks native files', async () => {
    const config = (await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'))) as {
      linux: { target: string[]; icon: string };
      mac: { target: string; icon: string };
      win: { target: string; icon: string };
      files: string[];
      asarUnpack: string[];
      npmRebuild: boolean;
      electronFuses: Record<string, boolean>;
      extraMetadata?: unknown;
    };
    expect(config.linux.target).toEqual(['AppImage', 'deb']);
    expect(config.mac.target).toBe('dmg');
    expect(config.win.target).toBe('nsis');
    expect(config.asarUnpack).toEqual(['**/*.node']);
    // better-sqlite3 is a Node-API module: its prebuilt binary loads in Electron as it is.
    expect(config.npmRebuild).toBe(false);
    expect(config.electronFuses).toMatchObject({
      runAsNode: false,
      enableNodeOptionsEnvironmentVariable: false,
      enableNodeCliInspectArguments: false,
      onlyLoadAppFromAsar: true,
    });
    // With no signing identity nothing signs the macOS app after the flip; Apple silicon kills it unless it is re-signed ad hoc.
    expect(config.electronFuses.resetAdHocDarwinSignature).toBe(true);
    // What is packed of our own: package.json, the build and the icons; never sources.
    expect(config.files.filter((f) => !f.startsWith('!')).sort()).toEqual([
      'assets/icon.png',
      'assets/tray-*.png',
      'out/main/**/*',
      'out/renderer/**/*',
      'out/services/**/*',
      'package.json',
    ]);
    expect(config.extraMetadata).toBeUndefined();
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { main: string };
    expect(pkg.main).toBe('out/main/app.mjs');
    for (const file of [config.linux.icon, config.mac.icon, config.win.icon, pkg.main, 'out/main/preload.cjs']) {
      expect(existsSync(join(ROOT, file)), file).toBe(true);
    }
  });

  it('packs into each system\u2019s installer only better-sqlite3\u2019s prebuilt binary for that system and architecture, and no sources', async () => {
    // electron-builder's own steps, as it packs: its config normalisation, its matchers, its macros.
    const lib = createRequire(createRequire(join(ROOT, 'package.json')).resolve('electron-builder'));
    const { doMergeConfigs } = lib('app-builder-lib/out/util/config/config.js') as {
      doMergeConfigs(configs: unknown[]): Record<string, unknown>;
    };
    type Filter = (file: string, stat: Stats) => boolean;
    const { getMainFileMatchers, getNodeModuleFileMatcher } = lib('app-builder-lib/out/fileMatcher.js') as {
      getMainFileMatchers(...args: unknown[]): Array<{ createFilter(): Filter }>;
      getNodeModuleFileMatcher(...args: unknown[]): { createFilter(): Filter };
    };
    const { expandMacro } = lib('app-builder-lib/out/util/macroExpander.js') as {
      expandMacro(pattern: string, arch: string, appInfo: object, extra: object): string;
    };
    const config = doMergeConfigs([await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'))]);
    const packager = { config, projectDir: ROOT, buildResourcesDir: 'assets', debugLogger: { isEnabled: false } };
    const prebuilds = join(ROOT, 'node_modules', 'better-sqlite3', 'prebuilds');
    const sqlite = join(ROOT, 'node_modules', 'better-sqlite3');
    expect(readdirSync(prebuilds)).toHaveLength(8);
    const passes = (filter: Filter, file: string) => filter(file, statSync(file));
    for (const [section, system] of [
      ['linux', 'linux'],
      ['mac', 'darwin'],
      ['win', 'win32'],
    ] as const) {
      for (const arch of ['x64', 'arm64']) {
        const expand = (pattern: string) => expandMacro(pattern, arch, {}, { os: section, '/*': '{,/**/*}' });
        const main = getMainFileMatchers(
          ROOT,
          join(ROOT, 'app'),
          expand,
          config[section],
          { info: packager },
          join(ROOT, 'release'),
          false,
        ).map((m) => m.createFilter());
        const modules = getNodeModuleFileMatcher(
          ROOT,
          join(ROOT, 'app'),
          expand,
          config[section],
          packager,
        ).createFilter();
        const what = `${section} ${arch}`;
        // Of our own files, a platform's patterns add nothing: no matcher takes the whole project.
        expect(
          main.some((keep) => passes(keep, join(ROOT, 'package.json'))),
          what,
        ).toBe(true);
        for (const file of ['tsconfig.json', join('.ci', 'run'), join('main', 'build', 'dist.ts')]) {
          expect(
            main.filter((keep) => passes(keep, join(ROOT, file))),
            `${what}: ${file}`,
          ).toEqual([]);
        }
        expect(
          readdirSync(prebuilds).filter((f) => passes(modules, join(prebuilds, f))),
          what,
        ).toEqual([`${system}-${arch}.node`]);
        expect(passes(modules, join(sqlite, 'lib', 'index.js')), what).toBe(true);
        expect(passes(modules, join(sqlite, 'binding.gyp')), what).toBe(false);
      }
    }
  });
});
