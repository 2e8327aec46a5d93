/**
 * Where the build writes, and whether what it wrote is current. Plain Node, no esbuild: the running
 * app (headless, the desktop shell, the services' launcher) reads the build through this module, so
 * it never carries the build tools.
 *
 * Every output sits two folders below the project root (out/<target>/<file>), like the sources it was
 * built from (main/<part>/, services/<name>/), so paths a module computes from its own location
 * (the project root, ../../package.json, node_modules) resolve the same from the sources and the build.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, sep } from 'node:path';
import { PROJECT_ROOT } from './launcher-paths.ts';

export const OUT_DIR = join(PROJECT_ROOT, 'out');

export const BUILD_TARGETS = ['main', 'console', 'services'] as const;
export type BuildTarget = (typeof BUILD_TARGETS)[number];

/** Each target's folder under an out folder. */
export const TARGET_FOLDERS: Record<BuildTarget, string> = { main: 'main', console: 'renderer', services: 'services' };

export function targetDir(target: BuildTarget, outDir = OUT_DIR): string {
  return join(outDir, TARGET_FOLDERS[target]);
}

/** The Electron main process and the console window's preload. */
export const MAIN_ENTRY = 'app.mjs';
export const PRELOAD_FILE = 'preload.cjs';
/** The console's files, as the renderer build names them. */
export const CONSOLE_FILES = ['index.html', 'app.js', 'app.css'] as const;

/**
 * The console page's policy, written into its index.html by the build and sent with it by both
 * transports: no inline script or style, no eval, nothing from another origin, only its own origin.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'";

export const MANIFEST = 'manifest.json';

/** What one target's build wrote, and from what. */
export interface Manifest {
  /** How it was built (tool version and options); a different recipe means a rebuild. */
  recipe: string;
  /** Files written, relative to the target's folder. */
  outputs: string[];
  /** Every input file, relative to the project root, with [size, mtimeMs] when it was built. */
  inputs: Record<string, [number, number]>;
  /** For each output, the packages it imports at run time (left outside the bundle): what must ship beside it. */
  externals: Record<string, string[]>;
  /** For each output, optional packages it tries to load inside a try block and runs without (pg's pg-native). */
  optional?: Record<string, string[]>;
}

export function readManifest(dir: string): Manifest | undefined {
  try {
    const manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Partial<Manifest>;
    if (
      typeof manifest.recipe !== 'string' ||
      !Array.isArray(manifest.outputs) ||
      typeof manifest.inputs !== 'object' ||
      manifest.inputs === null
    )
      return undefined;
    return {
      recipe: manifest.recipe,
      outputs: manifest.outputs,
      inputs: manifest.inputs,
      externals: manifest.externals ?? {},
      optional: manifest.optional ?? {},
    };
  } catch {
    return undefined;
  }
}

/**
 * True when the target's folder holds every named output and not one input changed since it was built
 * (sizes and times: about 15 ms for the services' thousand inputs). A recipe, when given, must match too.
 */
export function isCurrent(dir: string, outputs: readonly string[], recipe?: string, root = PROJECT_ROOT): boolean {
  const manifest = readManifest(dir);
  if (!manifest || (recipe !== undefined && manifest.recipe !== recipe)) return false;
  if (!outputs.every((o) => manifest.outputs.includes(o) && existsSync(join(dir, o)))) return false;
  for (const [input, [size, mtimeMs]] of Object.entries(manifest.inputs)) {
    if (isAbsolute(input)) return false;
    const stat = statSync(join(root, input), { throwIfNoEntry: false });
    if (!stat || stat.size !== size || stat.mtimeMs !== mtimeMs) return false;
  }
  return true;
}

/** Inside an installed app's archive (app.asar): nothing there can be written, and the sources are not there. */
export function insideArchive(path: string): boolean {
  return path.split(sep).some((part) => part.endsWith('.asar'));
}

/** The nearest real folder: the one holding the archive when the path is inside one (a process cannot start in an archive). */
export function outsideArchive(path: string): string {
  const parts = path.split(sep);
  const archive = parts.findIndex((part) => part.endsWith('.asar'));
  return archive === -1 ? path : parts.slice(0, archive).join(sep) || sep;
}

/** The console's built files (index.html, app.js, app.css) from a folder, or a sentence saying what to do. */
export function readConsoleBuild(
  dir = targetDir('console'),
): { files: Record<string, { contentType: string; body: Buffer }> } | { missing: string } {
  const types: Record<(typeof CONSOLE_FILES)[number], string> = {
    'index.html': 'text/html; charset=utf-8',
    'app.js': 'text/javascript; charset=utf-8',
    'app.css': 'text/css; charset=utf-8',
  };
  const absent = CONSOLE_FILES.filter((name) => !existsSync(join(dir, name)));
  if (absent.length) {
    return {
      missing: insideArchive(dir)
        ? `This installation lacks its console (${absent.join(', ')}); reinstall the app.`
        : `The console is not built (${absent.join(', ')} missing in ${dir}); run \`npm run build\`.`,
    };
  }
  return {
    files: Object.fromEntries(
      CONSOLE_FILES.map((name) => [name, { contentType: types[name], body: readFileSync(join(dir, name)) }]),
    ),
  };
}
