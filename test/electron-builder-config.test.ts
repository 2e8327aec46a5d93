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
    const schema = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'app-builder-lib', 'scheme.json'), 'utf8')) as object;
    const config = await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'));
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(schema);
    const valid = validate(config);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(valid).toBe(true);
    // The same schema refuses a misspelt key, so the check above can fail.
    expect(validate({ ...(config as object), asarUnpak: ['x'] })).toBe(false);
  });

  it('builds AppImage, deb, dmg and nsis, rebuilds and unpacks better-sqlite3, and points at files that exist', async () => {
    const config = (await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'))) as {
      linux: { target: string[]; icon: string };
      mac: { target: string; icon: string };
      win: { target: string; icon: string };
      asarUnpack: string[];
      npmRebuild: boolean;
      buildDependenciesFromSource: boolean;
      extraMetadata: { main: string };
      electronFuses: Record<string, boolean>;
    };
    expect(config.linux.target).toEqual(['AppImage', 'deb']);
    expect(config.mac.target).toBe('dmg');
    expect(config.win.target).toBe('nsis');
    expect(config.asarUnpack).toContain('node_modules/better-sqlite3/**/*');
    expect(config.npmRebuild).toBe(true);
    expect(config.buildDependenciesFromSource).toBe(true);
    expect(config.electronFuses).toMatchObject({ runAsNode: false, enableNodeOptionsEnvironmentVariable: false, onlyLoadAppFromAsar: true });
    for (const file of [config.linux.icon, config.mac.icon, config.win.icon, config.extraMetadata.main, 'main/electron/preload.cjs']) {
      expect(existsSync(join(ROOT, file)), file).toBe(true);
    }
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { main: string; dependencies: Record<string, string> };
    expect(pkg.main).toBe(config.extraMetadata.main);
    // Installed apps run the services through tsx, so it must ship as a production dependency.
    expect(pkg.dependencies).toHaveProperty('tsx');
    expect(pkg.dependencies).toHaveProperty('better-sqlite3');
  });
});
