/**
 * Every setting the code reads is documented exactly once, and every documented setting is read
 * (docs/configuration.md, "What the check counts", says what counts as read and as documented).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SERVICE_CATALOGUE, SERVICE_NAMES, type ServiceName } from '../common/services.ts';
import type { Setting } from '../services/kit/config.ts';
import { identitySettings } from '../services/identity/config.ts';
import { modelProviderSettings } from '../services/model-provider/config.ts';
import { personaSettings } from '../services/persona-store/config.ts';
import { repohostSettings } from '../services/repohost-gateway/config.ts';

const ROOT = join(import.meta.dirname, '..');

const DECLARED: Record<ServiceName, Record<string, Setting<unknown>>> = {
  identity: identitySettings,
  'persona-store': personaSettings,
  'repohost-gateway': repohostSettings,
  'model-provider': modelProviderSettings,
};

/** Read by the code but not settings of this app: each with the reason. */
const NOT_SETTINGS: Record<string, string> = {
  PATH: 'the system: where programs are found',
  HOME: 'the system: the user folder',
  APPDATA: 'Windows: where per-user app data goes',
  XDG_DATA_HOME: 'the XDG base folder of the app data folder',
  XDG_CONFIG_HOME: 'the XDG base folder where launch at login writes its autostart entry',
  DISPLAY: 'X11: whether there is a display',
  WAYLAND_DISPLAY: 'Wayland: whether there is a display',
  APPIMAGE: 'set by the AppImage runtime: the file itself',
  APPDIR: 'set by the AppImage runtime: its mount',
  NODE_ENV: 'a name esbuild defines in the console page, for preact',
  ELECTRON_OVERRIDE_DIST_PATH: "the electron package's own variable: where its binary is",
  npm_node_execpath: 'set by npm: the Node that runs it',
  ComSpec: 'Windows: the command interpreter a terminal is opened with',
  REPOHOST_ETAG_CACHE_ENTRIES: 'read only to refuse it, naming REPOHOST_ETAG_CACHE_BYTES',
};

const SOURCE_FOLDERS = ['main', 'services', 'common', 'renderer', 'bench'];
const SKIPPED_FOLDERS = new Set([
  'node_modules',
  'out',
  'release',
  'test-artifacts',
  'test-support',
  'vendor',
  '.git',
  '.venv',
]);

function files(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED_FOLDERS.has(entry.name) ? [] : files(path, keep);
    return keep(entry.name) ? [path] : [];
  });
}

/** Name → where it is read. */
function readSettings(): Map<string, string[]> {
  const read = new Map<string, string[]>();
  const add = (name: string, where: string) => read.set(name, [...(read.get(name) ?? []), where]);
  for (const name of SERVICE_NAMES) {
    for (const s of Object.values(DECLARED[name]))
      add(SERVICE_CATALOGUE[name].prefix + s.name, `services/${name}/config.ts`);
  }
  // A variable's name starts with a capital (or is npm's own npm_*), which also tells `env.map` from `env.PATH`.
  const name = '([A-Z][A-Za-z0-9_]*|npm_[a-z_]+)';
  const byName = [
    new RegExp(String.raw`\benv\.${name}\b`, 'g'),
    new RegExp(String.raw`\benv\[\s*['"]${name}['"]\s*\]`, 'g'),
    new RegExp(String.raw`_VARIABLE\s*=\s*['"]${name}['"]`, 'g'),
  ];
  const sources = SOURCE_FOLDERS.flatMap((folder) =>
    files(join(ROOT, folder), (n) => /\.(ts|mts|mjs|js)$/.test(n) && !/\.test\.ts$/.test(n)),
  );
  for (const file of sources) {
    const text = readFileSync(file, 'utf8');
    for (const pattern of byName) for (const m of text.matchAll(pattern)) add(m[1]!, relative(ROOT, file));
  }
  return read;
}

/** Name → the Markdown files (and lines) whose `variable` tables name it. */
function documentedSettings(): Map<string, string[]> {
  const documented = new Map<string, string[]>();
  const prefixes = SERVICE_NAMES.map((n) => SERVICE_CATALOGUE[n].prefix);
  for (const file of files(ROOT, (n) => n.endsWith('.md'))) {
    let inTable = false;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (!line.startsWith('|')) {
          inTable = false;
          return;
        }
        const first = line.split('|')[1]!.trim();
        if (!inTable) {
          inTable = first === 'variable';
          return;
        }
        for (const [, name] of first.matchAll(/`([^`\s]+)`/g)) {
          const names = name!.startsWith('<PREFIX>')
            ? prefixes.map((p) => p + name!.slice('<PREFIX>'.length))
            : [name!];
          for (const n of names) documented.set(n, [...(documented.get(n) ?? []), `${relative(ROOT, file)}:${i + 1}`]);
        }
      });
  }
  return documented;
}

describe('settings and their documentation (docs/configuration.md)', () => {
  const read = readSettings();
  const documented = documentedSettings();

  it('finds what it checks', () => {
    // A scan that found nothing would pass every check below.
    expect(read.get('PERSONA_DATABASE_URL')).toContain('services/persona-store/config.ts');
    expect(read.get('HUB_PARENT_PID')).toContain('main/supervisor/service-prelude.ts');
    expect(documented.has('MODELPROV_STREAM')).toBe(true);
  });

  it('documents every setting the code reads', () => {
    const missing = [...read]
      .filter(([name]) => !documented.has(name) && !(name in NOT_SETTINGS))
      .map(([name, where]) => `${name} (read in ${[...new Set(where)].join(', ')})`);
    expect(missing, 'add a row to a `variable` table of docs/configuration.md').toEqual([]);
  });

  it('documents each setting once', () => {
    const twice = [...documented]
      .filter(([, where]) => where.length > 1)
      .map(([name, where]) => `${name} (${where.join(', ')})`);
    expect(twice, 'keep one row per setting').toEqual([]);
  });

  it('documents only settings the code reads', () => {
    const stale = [...documented]
      .filter(([name]) => !read.has(name))
      .map(([name, where]) => `${name} (${where.join(', ')})`);
    expect(stale, 'remove the row, or read the setting').toEqual([]);
  });

  it('lists as not settings only variables the code reads', () => {
    expect(Object.keys(NOT_SETTINGS).filter((name) => !read.has(name))).toEqual([]);
  });
});
