/**
 * Each service bundled into one ES module with its npm packages before the supervisor starts it: a
 * process then reads one file instead of transpiling (tsx) or resolving hundreds of package files,
 * which halves its start time and memory. Only what cannot live in a bundle stays outside: the native
 * better-sqlite3, pino (its transports load worker files by path) and swagger-ui-dist (served as files).
 *
 * A bundle is rebuilt only when one of the files it was built from changed (a manifest keeps their
 * sizes and times), so a start after the first costs a few milliseconds of stat calls. An installed
 * app runs the bundles it carries: nothing can be written inside its archive. Where a bundle cannot
 * be built, the service runs from source through tsx, as `npm run service` does.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, sep } from 'node:path';
import { build, version as esbuildVersion } from 'esbuild';
import { PROJECT_ROOT, SERVICE_RUNNER } from './launcher-paths.ts';
import type { ServiceName } from './types.ts';

/** Inside the project, so that a bundle's own path resolves node_modules and ../../package.json as the sources do. */
export const BUNDLE_DIR = join(PROJECT_ROOT, 'out', 'services');

const EXTERNAL = ['better-sqlite3', 'pino', 'swagger-ui-dist'];
/** Changes whenever the way bundles are built changes, so old bundles are not taken for fresh ones. */
const RECIPE = `esbuild ${esbuildVersion}; node20 esm; external ${EXTERNAL.join(',')}; v2`;

interface Manifest {
  recipe: string;
  services: string[];
  /** Every input file (relative to the project) with [size, mtimeMs] when the bundles were built. */
  inputs: Record<string, [number, number]>;
}

export function bundlePath(name: ServiceName, dir = BUNDLE_DIR): string {
  return join(dir, `${name}.mjs`);
}

export function serviceSource(name: ServiceName): string {
  return join(PROJECT_ROOT, 'services', name, 'main.ts');
}

export interface BundleResult {
  bundled: ServiceName[];
  /** True when this call built them; false when the bundles already there were up to date (or carried by an installed app). */
  built: boolean;
  error?: string;
}

/** Makes sure every named service that exists has an up-to-date bundle; resolves with the ones that do. */
export async function bundleServices(names: readonly ServiceName[], dir = BUNDLE_DIR): Promise<BundleResult> {
  const existing = () => names.filter((n) => existsSync(bundlePath(n, dir)));
  if (insideArchive(dir)) return { bundled: existing(), built: false };
  const present = names.filter((n) => existsSync(serviceSource(n)));
  if (present.length === 0) return { bundled: [], built: false };
  if (upToDate(present, dir)) return { bundled: present, built: false };
  try {
    const result = await build({
      absWorkingDir: PROJECT_ROOT,
      entryPoints: Object.fromEntries(present.map((n) => [n, serviceSource(n)])),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: EXTERNAL,
      // Bundled CommonJS packages call require() for Node's own modules, which an ES module lacks.
      banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
      outdir: dir,
      outExtension: { '.js': '.mjs' },
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    mkdirSync(dir, { recursive: true });
    for (const file of result.outputFiles) writeAtomically(file.path, file.contents);
    const inputs: Manifest['inputs'] = {};
    for (const input of Object.keys(result.metafile.inputs)) {
      const stat = statSync(join(PROJECT_ROOT, input), { throwIfNoEntry: false });
      if (stat) inputs[input] = [stat.size, stat.mtimeMs];
    }
    const manifest: Manifest = { recipe: RECIPE, services: present, inputs };
    writeAtomically(manifestPath(dir), JSON.stringify(manifest));
    return { bundled: present, built: true };
  } catch (err) {
    const why = (err as Error).message.split('\n')[0];
    const fallback = existing();
    return { bundled: fallback, built: false, error: fallback.length ? `${why}; using the bundles already there` : why };
  }
}

/** How to run a service: its bundle when there is one, else from source through tsx (which also reports "not built yet"). */
export function serviceCommand(name: ServiceName, bundled: ReadonlySet<ServiceName>): { script: string; args: string[]; execArgv: string[] } {
  return bundled.has(name) ? { script: bundlePath(name), args: [], execArgv: [] } : { script: SERVICE_RUNNER, args: [name], execArgv: ['--import', 'tsx'] };
}

function manifestPath(dir: string): string {
  return join(dir, 'manifest.json');
}

function insideArchive(dir: string): boolean {
  return dir.split(sep).some((part) => part.endsWith('.asar'));
}

/** True when the manifest names these services and not one of their input files changed since. */
function upToDate(names: readonly ServiceName[], dir: string): boolean {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath(dir), 'utf8')) as Manifest;
  } catch {
    return false;
  }
  if (manifest.recipe !== RECIPE || !names.every((n) => manifest.services.includes(n) && existsSync(bundlePath(n, dir)))) return false;
  for (const [input, [size, mtimeMs]] of Object.entries(manifest.inputs)) {
    if (isAbsolute(input)) return false;
    const stat = statSync(join(PROJECT_ROOT, input), { throwIfNoEntry: false });
    if (!stat || stat.size !== size || stat.mtimeMs !== mtimeMs) return false;
  }
  return true;
}

/** Write beside, then rename: another supervisor (a test, a second app) may be reading the old file. */
function writeAtomically(path: string, contents: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temp, contents);
  renameSync(temp, path);
}
