/**
 * The one build: everything the app runs, as plain JavaScript under out/.
 *
 *   main      out/main/app.mjs (the Electron main process) and out/main/preload.cjs (the console window's preload)
 *   console   out/renderer/index.html, app.js, app.css
 *   services  out/services/<name>.mjs, one per service, each starting with service-prelude.ts
 *
 * npm packages are bundled in, except the few that cannot live in a bundle (RUNTIME_PACKAGES); those
 * are exactly the production dependencies (test/packaging-dependencies.test.ts holds that rule). Each
 * target's manifest records its inputs, so a build after the first rebuilds only targets whose inputs
 * changed (about 20 ms when nothing did). `npm run build`, `npm start`, `npm run serve` and the test
 * run's global setup all come through here.
 */
import { existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { build as esbuild, version as esbuildVersion, type BuildOptions, type Metafile, type Plugin } from 'esbuild';
import { buildRenderer } from '../../renderer/build.ts';
import { PROJECT_ROOT } from '../supervisor/launcher-paths.ts';
import { SERVICE_NAMES, type ServiceName } from '../supervisor/types.ts';
import {
  BUILD_TARGETS,
  CONSOLE_FILES,
  MAIN_ENTRY,
  MANIFEST,
  OUT_DIR,
  PRELOAD_FILE,
  insideArchive,
  isCurrent,
  targetDir,
  type BuildTarget,
  type Manifest,
} from '../supervisor/build-outputs.ts';

export { BUILD_TARGETS, type BuildTarget };

/**
 * Packages left outside every bundle, loaded from node_modules at run time (so they are the production
 * dependencies, and electron-builder ships them):
 * - better-sqlite3: a native module (a prebuilt Node-API binary, which a bundle cannot hold).
 * - pino: its transports load worker files by path (the services use none, but a bundle would break them).
 * - swagger-ui-dist: the services serve its files from disk as /docs.
 * `electron` is provided by the runtime itself.
 */
export const RUNTIME_PACKAGES = ['better-sqlite3', 'pino', 'swagger-ui-dist'] as const;
export const PROVIDED_BY_ELECTRON = ['electron'] as const;

/** The Node.js line the bundles run on: Electron 45's own Node and the one development uses. */
const NODE_TARGET = 'node24';

/** Changes whenever the way a target is built changes, so old outputs are not taken for fresh ones. */
const RECIPE_VERSION = 5;
function recipe(target: BuildTarget): string {
  return `${target}; esbuild ${esbuildVersion}; ${NODE_TARGET}; external ${[...RUNTIME_PACKAGES, ...PROVIDED_BY_ELECTRON].join(',')}; v${RECIPE_VERSION}`;
}

/** Bundled CommonJS packages call require() for Node's own modules, which an ES module lacks. */
const REQUIRE_BANNER =
  "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);";

export interface BuildRequest {
  /** Which targets (default: all). */
  targets?: readonly BuildTarget[];
  /** The out folder (default: out/ in the project). Keep it two folders deep in the project for bundles that are run. */
  outDir?: string;
  /** Which services (default: every one whose services/<name>/main.ts exists). */
  services?: readonly ServiceName[];
  /** Build even when the manifest says the outputs are current. */
  force?: boolean;
}

export interface TargetResult {
  dir: string;
  /** True when this call built it; false when what was there was current (or is inside an installed app). */
  built: boolean;
  /** Files written or found, relative to dir. */
  outputs: string[];
  /** Per output, the packages it imports at run time. */
  externals: Record<string, string[]>;
  /** Per output, optional packages it tries to load and runs without (not installed). */
  optional: Record<string, string[]>;
  /** Why it could not be built (esbuild's first error); what was there before is left as it was. */
  error?: string;
}

export type BuildResult = Partial<Record<BuildTarget, TargetResult>>;

export function serviceSource(name: ServiceName): string {
  return join(PROJECT_ROOT, 'services', name, 'main.ts');
}

/**
 * Builds the named targets that are not current. A target that does not compile keeps what was there
 * (its manifest then says it is out of date) and carries the error; the others are built all the same.
 */
export async function build(options: BuildRequest = {}): Promise<BuildResult> {
  const outDir = options.outDir ?? OUT_DIR;
  const result: BuildResult = {};
  for (const target of options.targets ?? BUILD_TARGETS) {
    try {
      result[target] = await buildTarget(target, outDir, options);
    } catch (err) {
      result[target] = {
        dir: targetDir(target, outDir),
        built: false,
        outputs: [],
        externals: {},
        optional: {},
        error: firstError(err),
      };
    }
  }
  return result;
}

/** The targets that failed, one line each, or undefined when all were built or current. */
export function buildErrors(result: BuildResult): string | undefined {
  const failed = Object.entries(result).filter(([, r]) => r.error !== undefined);
  return failed.length ? failed.map(([target, r]) => `${target}: ${r.error}`).join('\n') : undefined;
}

function firstError(err: unknown): string {
  const errors = (
    err as { errors?: Array<{ text: string; location?: { file: string; line: number; column: number } | null }> }
  ).errors;
  const first = errors?.[0];
  if (first)
    return first.location
      ? `${first.location.file}:${first.location.line}:${first.location.column}: ${first.text}`
      : first.text;
  return err instanceof Error ? err.message.split('\n')[0]! : String(err);
}

async function buildTarget(target: BuildTarget, outDir: string, options: BuildRequest): Promise<TargetResult> {
  const dir = targetDir(target, outDir);
  const services =
    target === 'services' ? (options.services ?? SERVICE_NAMES).filter((n) => existsSync(serviceSource(n))) : [];
  const outputs = expectedOutputs(target, services);
  const current = () => ({ dir, built: false, outputs, externals: {}, optional: {} });
  // An installed app carries its build and has no sources to build from.
  if (insideArchive(dir)) return current();
  if (!options.force && isCurrent(dir, outputs, recipe(target))) return current();
  const made =
    target === 'main'
      ? await buildMain()
      : target === 'console'
        ? await buildConsole()
        : await buildServices(dir, services);
  mkdirSync(dir, { recursive: true });
  for (const [name, contents] of Object.entries(made.files)) writeAtomically(join(dir, name), contents);
  const inputs: Manifest['inputs'] = {};
  for (const input of made.inputs) {
    const stat = statSync(input, { throwIfNoEntry: false });
    if (stat) inputs[relative(PROJECT_ROOT, input).split(sep).join('/')] = [stat.size, stat.mtimeMs];
  }
  const externals = Object.fromEntries(Object.entries(made.packages).map(([output, p]) => [output, p.required]));
  const optional = Object.fromEntries(Object.entries(made.packages).map(([output, p]) => [output, p.optional]));
  const manifest: Manifest = { recipe: recipe(target), outputs: Object.keys(made.files), inputs, externals, optional };
  writeAtomically(join(dir, MANIFEST), JSON.stringify(manifest));
  return { dir, built: true, outputs: manifest.outputs, externals, optional };
}

function expectedOutputs(target: BuildTarget, services: readonly ServiceName[]): string[] {
  if (target === 'main') return [MAIN_ENTRY, PRELOAD_FILE];
  if (target === 'console') return [...CONSOLE_FILES];
  return services.map((n) => `${n}.mjs`);
}

interface Made {
  files: Record<string, Uint8Array | string>;
  /** Absolute paths of every file read. */
  inputs: string[];
  /** Per output, what runtimePackages found. */
  packages: Record<string, RuntimePackages>;
}

const COMMON = {
  absWorkingDir: PROJECT_ROOT,
  bundle: true,
  platform: 'node',
  target: NODE_TARGET,
  write: false,
  metafile: true,
  logLevel: 'silent',
  legalComments: 'none',
  // Comments and whitespace out, syntax shortened, names kept (a stack a developer reads stays readable).
  // A service keeps its whole source in memory as one string, and every CLI run forks the provider: a
  // smaller process forks faster. ASCII only, so V8 keeps that string at one byte per character.
  minifyWhitespace: true,
  minifySyntax: true,
  charset: 'ascii',
  external: [...RUNTIME_PACKAGES, ...PROVIDED_BY_ELECTRON],
} as const satisfies BuildOptions;

/** The Electron main process (an ES module, as Electron 28+ loads them) and the preload (sandboxed preloads are CommonJS). */
const ELECTRON_ENTRIES = [
  { file: MAIN_ENTRY, source: 'app.ts', format: 'esm', banner: { js: REQUIRE_BANNER } },
  { file: PRELOAD_FILE, source: 'preload.ts', format: 'cjs' },
] as const satisfies readonly (BuildOptions & { file: string; source: string })[];

/** Each of ELECTRON_ENTRIES from main/electron/ to its file. */
async function buildMain(): Promise<Made> {
  const built = await Promise.all(
    ELECTRON_ENTRIES.map(async ({ file, source, ...options }) => ({
      file,
      result: await esbuild({
        ...COMMON,
        ...options,
        entryPoints: [join(PROJECT_ROOT, 'main', 'electron', source)],
        outfile: join('out', file),
      }),
    })),
  );
  const made: Made = { files: {}, inputs: [], packages: {} };
  for (const { file, result } of built) {
    const output = single(result.outputFiles);
    made.files[file] = output.contents;
    made.inputs.push(...metafileInputs(result.metafile));
    made.packages[file] = runtimePackages(result.metafile, output.text);
  }
  return made;
}

async function buildConsole(): Promise<Made> {
  const { files, inputs } = await buildRenderer();
  return {
    files: Object.fromEntries(Object.entries(files).map(([name, file]) => [name, file.body])),
    inputs,
    packages: {},
  };
}

/**
 * One ES module per service: service-prelude.ts first (its guard must be in place before anything loads
 * a native module), then the service's main.ts.
 */
async function buildServices(dir: string, services: readonly ServiceName[]): Promise<Made> {
  const prelude = join(PROJECT_ROOT, 'main', 'supervisor', 'service-prelude.ts');
  const entries: Plugin = {
    name: 'service-entries',
    setup(b) {
      b.onResolve({ filter: /^service-entry:/ }, (args) => ({
        path: args.path.slice('service-entry:'.length),
        namespace: 'service-entry',
      }));
      b.onResolve({ filter: /^service-start:/ }, (args) => ({
        path: args.path.slice('service-start:'.length),
        namespace: 'service-start',
      }));
      b.onLoad({ filter: /.*/, namespace: 'service-start' }, (args) => ({
        contents: `import { startService } from ${JSON.stringify(prelude)};\nstartService(${JSON.stringify(args.path)});\n`,
        resolveDir: PROJECT_ROOT,
        loader: 'ts',
      }));
      // Imports run in order, so the prelude has run before main.ts (and everything it imports) starts.
      b.onLoad({ filter: /.*/, namespace: 'service-entry' }, (args) => ({
        contents: `import ${JSON.stringify(`service-start:${args.path}`)};\nimport ${JSON.stringify(serviceSource(args.path as ServiceName))};\n`,
        resolveDir: PROJECT_ROOT,
        loader: 'ts',
      }));
    },
  };
  const result = await esbuild({
    ...COMMON,
    entryPoints: Object.fromEntries(services.map((n) => [n, `service-entry:${n}`])),
    format: 'esm',
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    banner: { js: REQUIRE_BANNER },
    plugins: [entries],
  });
  const files: Made['files'] = {};
  const packages: Made['packages'] = {};
  for (const file of result.outputFiles) {
    const name = relative(dir, file.path);
    files[name] = file.contents;
    packages[name] = runtimePackages(
      result.metafile,
      file.text,
      relative(PROJECT_ROOT, file.path).split(sep).join('/'),
    );
  }
  return { files, inputs: metafileInputs(result.metafile), packages };
}

function single<T>(outputs: T[] | undefined): T {
  if (outputs?.length !== 1) throw new Error(`the build made ${outputs?.length ?? 0} files where one was expected`);
  return outputs[0]!;
}

/** Real files among esbuild's inputs (not the virtual entries), absolute. */
function metafileInputs(metafile: Metafile): string[] {
  return Object.keys(metafile.inputs)
    .filter((input) => !input.includes(':'))
    .map((input) => join(PROJECT_ROOT, input));
}

/**
 * The packages an output needs at run time: its imports of the packages left outside on purpose
 * (RUNTIME_PACKAGES, electron), and the packages it finds by path (`require.resolve('swagger-ui-dist/package.json')`,
 * to serve their files), which no bundler follows (esbuild may have renamed that require to require2).
 * Any other import esbuild left outside is one it could not resolve inside a try block (pg's optional
 * `pg-native`): the code runs without it, so it is listed apart, in `optional`.
 */
export interface RuntimePackages {
  required: string[];
  optional: string[];
}

export function runtimePackages(metafile: Metafile, text: string, output?: string): RuntimePackages {
  const declared = new Set<string>([...RUNTIME_PACKAGES, ...PROVIDED_BY_ELECTRON]);
  const required = new Set<string>();
  const optional = new Set<string>();
  for (const [path, out] of Object.entries(metafile.outputs)) {
    if (output !== undefined && path !== output) continue;
    for (const imported of out.imports) {
      if (!imported.external || isBuiltin(imported.path)) continue;
      const name = packageName(imported.path);
      (declared.has(name) ? required : optional).add(name);
    }
  }
  for (const match of text.matchAll(/\b(?:require\d*|import\.meta)\.resolve\(\s*["'`]([^"'`]+)["'`]/g)) {
    const specifier = match[1]!;
    if (!specifier.startsWith('.') && !specifier.startsWith('/') && !isBuiltin(specifier))
      required.add(packageName(specifier));
  }
  return { required: [...required].sort(), optional: [...optional].filter((n) => !required.has(n)).sort() };
}

/** `better-sqlite3` from `better-sqlite3/lib/x.js`, `@scope/name` from `@scope/name/y`. */
export function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Write beside, then rename: another process (a test, a running app) may be reading the old file. */
function writeAtomically(path: string, contents: Uint8Array | string): void {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temp, contents);
  renameSync(temp, path);
}
