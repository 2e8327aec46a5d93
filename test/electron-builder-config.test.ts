import { existsSync, readFileSync } from 'node:fs';
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

  it('builds AppImage, deb, dmg and nsis from the build only, rebuilds better-sqlite3 for Electron and unpacks native files', async () => {
    const config = (await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'))) as {
      linux: { target: string[]; icon: string };
      mac: { target: string; icon: string };
      win: { target: string; icon: string };
      files: string[];
      asarUnpack: string[];
      npmRebuild: boolean;
      buildDependenciesFromSource: boolean;
      electronFuses: Record<string, boolean>;
      extraMetadata?: unknown;
    };
    expect(config.linux.target).toEqual(['AppImage', 'deb']);
    expect(config.mac.target).toBe('dmg');
    expect(config.win.target).toBe('nsis');
    expect(config.asarUnpack).toEqual(['**/*.node']);
    expect(config.npmRebuild).toBe(true);
    expect(config.buildDependenciesFromSource).toBe(true);
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
});
