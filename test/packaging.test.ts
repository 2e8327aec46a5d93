/**
 * The desktop app as electron-builder really packs it (`--linux dir`), checked here where Electron's
 * binary cannot be downloaded: the test makes a stand-in Electron folder whose "binary" carries
 * Electron's fuse sentinel and wire (so electron-builder really flips the fuses), turns native rebuilds
 * off (there is nothing to rebuild: better-sqlite3 is a Node-API module), then opens what was made:
 * what the archive holds and does not hold, that better-sqlite3 carries this system's prebuilt binary
 * only, unpacked, and that it loads, the fuses, the size.
 * Last, it runs the packed main process under Node with a stand-in `electron` module: it must reach
 * app.whenReady, finish evaluating (Electron emits 'ready' only then), serve the console, and start
 * every service from the package until each is ready, then stop them all when asked to quit.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { FuseV1Options, getCurrentFuseWire } from '@electron/fuses';
import { extractAll } from '@electron/asar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build, buildErrors } from '../main/build/build.ts';
import {
  ELECTRON_DEFAULT_FUSES,
  FuseState,
  archiveFiles,
  describePayload,
  packLinuxDir,
  payload,
} from '../main/build/pack-check.ts';
import { readManifest, targetDir } from '../main/supervisor/build-outputs.ts';
import { SERVICE_NAMES } from '../main/supervisor/types.ts';
import { startGitHubDouble, type GitHubDouble } from './github-double/double.ts';
import { stackEnv } from './support/console-stack.ts';
import { ROOT } from './support/process.ts';

const work = mkdtempSync(join(tmpdir(), 'packaging-'));
const release = join(work, 'release');
const unpacked = join(release, 'linux-unpacked');
const archive = join(unpacked, 'resources', 'app.asar');
/** Where Electron would find the app: resources/app.asar, here a folder with the archive's contents. */
const extracted = join(work, 'run', 'resources', 'app.asar');

/** electron-builder.yml's electronFuses keys, by fuse. */
const FUSE_KEYS: Record<string, number> = {
  runAsNode: FuseV1Options.RunAsNode,
  enableCookieEncryption: FuseV1Options.EnableCookieEncryption,
  enableNodeOptionsEnvironmentVariable: FuseV1Options.EnableNodeOptionsEnvironmentVariable,
  enableNodeCliInspectArguments: FuseV1Options.EnableNodeCliInspectArguments,
  enableEmbeddedAsarIntegrityValidation: FuseV1Options.EnableEmbeddedAsarIntegrityValidation,
  onlyLoadAppFromAsar: FuseV1Options.OnlyLoadAppFromAsar,
  loadBrowserProcessSpecificV8Snapshot: FuseV1Options.LoadBrowserProcessSpecificV8Snapshot,
  grantFileProtocolExtraPrivileges: FuseV1Options.GrantFileProtocolExtraPrivileges,
};
const PAYLOAD_LIMIT = 25 * 1024 * 1024;

async function loadYaml(text: string): Promise<unknown> {
  const yaml = (await import(join(ROOT, 'node_modules', 'js-yaml', 'index.js'))) as { load(text: string): unknown };
  return yaml.load(text);
}

const archiveFilesHere = () => archiveFiles(archive);

/** The folder Node's resolution finds a package in, looking up from a folder, as require() does; undefined when none. */
function packageFolder(from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dirname(dir) === dir || relative(join(work, 'run'), dir).startsWith('..')) return undefined;
  }
}

/**
 * The packages the production dependencies need at run time, from the lock file: every package reached
 * from them, minus what only an install or a build from source uses (better-sqlite3's node-addon-api
 * headers, swagger-ui-dist's @scarf/scarf postinstall).
 */
function runtimePackageClosure(): Set<string> {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }>;
  };
  const entries = lock.packages;
  const installTime = new Set(['node_modules/node-addon-api', 'node_modules/@scarf/scarf']);
  const resolveFrom = (from: string, name: string): string | undefined => {
    let base = from;
    for (;;) {
      const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (entries[candidate]) return candidate;
      if (!base) return undefined;
      const cut = base.lastIndexOf('/node_modules/');
      base = cut < 0 ? '' : base.slice(0, cut);
    }
  };
  const seen = new Set<string>();
  const stack = Object.keys(entries['']!.dependencies ?? {}).map((n) => `node_modules/${n}`);
  while (stack.length) {
    const at = stack.pop()!;
    if (seen.has(at) || installTime.has(at)) continue;
    seen.add(at);
    const entry = entries[at]!;
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      const found = resolveFrom(at, name);
      if (found) stack.push(found);
    }
  }
  return new Set([...seen].map((p) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length)));
}

beforeAll(async () => {
  const errors = buildErrors(await build());
  if (errors) throw new Error(`the build failed:\n${errors}`);
  await packLinuxDir({
    projectDir: ROOT,
    outputDir: release,
    builder: join(ROOT, 'node_modules', 'electron-builder', 'cli.js'),
  });
  extractAll(archive, extracted);
}, 300_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packaged app (electron-builder --linux dir, stand-in Electron)', () => {
  it('holds only built JavaScript, the icons and the runtime packages: no TypeScript, tests, build tools or test-only packages', () => {
    const files = archiveFilesHere().map((f) => f.path);
    const own = files.filter((f) => !f.startsWith('node_modules/'));
    expect(
      own.filter((f) => !/^(package\.json|out\/(main|renderer|services)\/[^/]+|assets\/[^/]+\.png)$/.test(f)),
    ).toEqual([]);
    expect(own.filter((f) => f.startsWith('out/')).sort()).toEqual(
      [
        'out/main/app.mjs',
        'out/main/preload.cjs',
        'out/renderer/app.css',
        'out/renderer/app.js',
        'out/renderer/index.html',
        ...SERVICE_NAMES.map((n) => `out/services/${n}.mjs`),
      ].sort(),
    );
    expect(files.filter((f) => /\.(ts|mts|cts)$/.test(f))).toEqual([]);
    expect(files.filter((f) => /(^|\/)(test|tests|__tests__)\/|\.test\.|\.spec\./.test(f))).toEqual([]);
    const packages = new Set(
      files
        .filter((f) => f.startsWith('node_modules/'))
        .map((f) => (/^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(f) ?? [])[1]),
    );
    for (const tool of [
      'tsx',
      'esbuild',
      'electron',
      'electron-store',
      'vitest',
      'typescript',
      'playwright-core',
      'express',
      'zod',
    ]) {
      expect(packages.has(tool), `${tool} is not in the package`).toBe(false);
    }
    // Exactly what the production dependencies need at run time: nothing missing, nothing more.
    expect([...packages].sort()).toEqual([...runtimePackageClosure()].sort());
  });

  it('the main entry and everything the main process and the services import resolve inside the package', () => {
    const pkg = JSON.parse(readFileSync(join(extracted, 'package.json'), 'utf8')) as { main: string; type: string };
    expect(pkg.main).toBe('out/main/app.mjs');
    expect(statSync(join(extracted, pkg.main)).isFile()).toBe(true);
    for (const target of ['main', 'services'] as const) {
      const manifest = readManifest(targetDir(target));
      expect(manifest, `${target} manifest`).toBeDefined();
      for (const [output, packages] of Object.entries(manifest!.externals)) {
        const from = join(extracted, 'out', target === 'main' ? 'main' : 'services');
        for (const name of packages) {
          if (name === 'electron') continue; // the runtime's own module
          expect(packageFolder(from, name), `${output} imports ${name}`).toBeDefined();
          // And it loads from there (better-sqlite3's JavaScript; its .node file loads at the first database).
          expect(() => createRequire(join(from, output)).resolve(name), `${output} resolves ${name}`).not.toThrow();
        }
      }
    }
    // Every packed package finds each of its own dependencies inside the package too.
    const closure = runtimePackageClosure();
    for (const name of closure) {
      const manifestPath = join(extracted, 'node_modules', name, 'package.json');
      const deps = Object.keys(
        (JSON.parse(readFileSync(manifestPath, 'utf8')) as { dependencies?: Record<string, string> }).dependencies ??
          {},
      );
      for (const dep of deps) {
        if (!closure.has(dep)) continue; // install or build time only (node-addon-api)
        expect(packageFolder(join(extracted, 'node_modules', name), dep), `${name} needs ${dep}`).toBeDefined();
      }
    }
  });

  it('better-sqlite3 carries this system\u2019s prebuilt binary only, outside the archive (unpacked), the only native file', () => {
    const prebuild = `node_modules/better-sqlite3/prebuilds/${process.platform}-${process.arch}.node`;
    const natives = archiveFilesHere().filter((f) => f.path.endsWith('.node'));
    expect(natives.map((f) => [f.path, f.unpacked])).toEqual([[prebuild, true]]);
    // The very file npm installed: packed as it is, nothing rebuilt.
    expect(readFileSync(join(`${archive}.unpacked`, prebuild)).equals(readFileSync(join(ROOT, prebuild)))).toBe(true);
    expect(archiveFilesHere().filter((f) => /better-sqlite3\/(deps|src|build)\/|binding\.gyp$/.test(f.path))).toEqual(
      [],
    );
  });

  it('better-sqlite3 loads from the package in plain Node and opens a database', () => {
    const load = spawnSync(
      process.execPath,
      [
        '-e',
        "const db = new (require('better-sqlite3'))(':memory:');" +
          "process.stdout.write(JSON.stringify({ from: require.resolve('better-sqlite3'), sqlite: db.prepare('select sqlite_version() as v').get().v }))",
      ],
      { cwd: join(extracted, 'out', 'services'), encoding: 'utf8' },
    );
    expect(load.stderr).toBe('');
    const loaded = JSON.parse(load.stdout) as { from: string; sqlite: string };
    expect(relative(extracted, loaded.from)).toBe(join('node_modules', 'better-sqlite3', 'lib', 'index.js'));
    expect(loaded.sqlite).toMatch(/^3\.\d+\.\d+$/);
  });

  it('the binary\u2019s fuses are flipped as electron-builder.yml sets them', async () => {
    const config = (await loadYaml(readFileSync(join(ROOT, 'electron-builder.yml'), 'utf8'))) as {
      electronFuses: Record<string, boolean>;
    };
    const wire = (await getCurrentFuseWire(join(unpacked, 'hub-services'))) as unknown as Record<number, number>;
    // resetAdHocDarwinSignature is not a fuse: it re-signs a macOS app after the flip (test/packaging-mac.test.ts).
    const fuses = Object.entries(config.electronFuses).filter(([key]) => key !== 'resetAdHocDarwinSignature');
    expect(fuses.length).toBeGreaterThanOrEqual(6);
    for (const [key, on] of fuses) {
      const fuse = FUSE_KEYS[key];
      expect(fuse, `${key} is a fuse`).toBeDefined();
      expect(wire[fuse!], key).toBe(on ? FuseState.ENABLE : FuseState.DISABLE);
      // Every configured fuse differs from Electron's default, so each was really written.
      expect(ELECTRON_DEFAULT_FUSES[fuse!], key).not.toBe(wire[fuse!]);
    }
  });

  it(`is at most ${PAYLOAD_LIMIT / 1024 / 1024} MB besides Electron itself`, () => {
    const figures = payload(archive);
    process.stdout.write(`[packaging.test] ${describePayload(figures)}\n`);
    expect(figures.archiveBytes + figures.unpackedBytes).toBeLessThanOrEqual(PAYLOAD_LIMIT);
  });

  describe('the packed main process under Node, with a stand-in electron module', () => {
    let platform: GitHubDouble | undefined;
    let harness: ChildProcess | undefined;
    afterAll(async () => {
      if (harness && harness.exitCode === null && harness.signalCode === null) harness.kill('SIGKILL');
      await platform?.close();
    });

    it(
      'reaches app.whenReady, finishes evaluating, serves the console, runs every service from the package until ready, and stops them all on quit',
      { timeout: 240_000 },
      async () => {
        const home = join(work, 'home');
        mkdirSync(home, { recursive: true });
        const userData = join(home, 'user-data');
        platform = await startGitHubDouble();
        const env = await stackEnv(join(work, 'stack'), platform.url);
        writeStandInElectron(extracted);
        writeFileSync(join(extracted, 'run-main.mjs'), HARNESS);
        harness = spawn(process.execPath, [join(extracted, 'run-main.mjs')], {
          cwd: extracted,
          env: {
            ...env,
            HOME: home,
            XDG_DATA_HOME: join(home, 'data'),
            XDG_CONFIG_HOME: join(home, 'config'),
            STANDIN_USER_DATA: userData,
          },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        const events = eventStream(harness);

        // Electron's order: the entry asks for 'ready', finishes evaluating, and only then is 'ready' emitted.
        await events.until((e) => e.event === 'whenReady');
        await events.until((e) => e.event === 'evaluated');
        const page = await events.until((e) => e.event === 'page');
        expect(page).toMatchObject({ url: 'app://console/index.html', status: 200, type: 'text/html; charset=utf-8' });
        expect((await events.until((e) => e.event === 'window')).preload).toBe(
          join(extracted, 'out', 'main', 'preload.cjs'),
        );
        // Every service is started from the package's bundles, in a process that is not a tsx one.
        const forks = await events.until(
          (e) => e.event === 'fork' && events.seen((f) => f.event === 'fork').length === SERVICE_NAMES.length,
        );
        expect(forks).toBeDefined();
        for (const fork of events.seen((e) => e.event === 'fork')) {
          expect(fork.modulePath).toMatch(new RegExp(`^${escape(join(extracted, 'out', 'services'))}/[a-z-]+\\.mjs$`));
          expect(fork.execArgv).toEqual([]);
        }
        // The tooltip ends with how many are ready; its headline before that may still name what waits for the person.
        const tooltip = await events.until(
          (e) =>
            e.event === 'tooltip' &&
            String(e.text).endsWith(`(${SERVICE_NAMES.length} of ${SERVICE_NAMES.length} ready)`),
          events.describe,
        );
        expect(tooltip).toBeDefined();
        const menu = events.seen((e) => e.event === 'menu').at(-1)!;
        expect(menu.labels).toEqual(
          expect.arrayContaining(['Open console', 'Start all', 'Stop all', 'Quit (stops every service)']),
        );
        // electron-store (bundled into the main process) wrote the settings file into the user-data folder.
        expect(JSON.parse(readFileSync(join(userData, 'settings.json'), 'utf8'))).toEqual({
          launchAtLogin: false,
          startServicesOnLaunch: true,
          providerStream: 'whole',
          firstRunDone: false,
          notifications: { serviceGaveUp: true, signalFailed: true, cliSignedOut: true, credentialExpiring: true },
          hubCredentialDays: 90,
        });

        const ports = ['IDENTITY_PORT', 'PERSONA_PORT', 'REPOHOST_PORT', 'MODELPROV_PORT'].map((k) => Number(env[k]));
        for (const port of ports) expect(await answers(port), `port ${port} while running`).toBe(true);
        // The services serve their docs from the packed swagger-ui-dist: the files the patterns keep are the ones they use.
        for (const asset of ['/docs', '/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js']) {
          expect((await fetch(`http://127.0.0.1:${env.IDENTITY_PORT}${asset}`)).status, asset).toBe(200);
        }
        const exited = new Promise<number | null>((resolve) => harness!.once('exit', (code) => resolve(code)));
        harness.stdin!.write('quit\n');
        await events.until((e) => e.event === 'exit');
        expect(await exited).toBe(0);
        // The app exits only after every service has stopped: nothing answers on their ports any more.
        for (const port of ports) expect(await answers(port), `port ${port} after quitting`).toBe(false);
        expect(events.seen((e) => e.event === 'child-exit').length).toBe(SERVICE_NAMES.length);
      },
    );
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whether something accepts a connection on the port (a refused connection is the event that says no). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

type Event = Record<string, unknown> & { event: string };

/** The harness's JSON lines as events; `until` resolves on the first (past or future) event that matches. */
function eventStream(child: ChildProcess) {
  const events: Event[] = [];
  const waiters: Array<{ match: (e: Event) => boolean; resolve: (e: Event) => void }> = [];
  let stderr = '';
  let buffered = '';
  let ended: string | undefined;
  const failures: Array<(why: string) => void> = [];
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    let newline;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (!line.startsWith('{')) continue;
      const event = JSON.parse(line) as Event;
      events.push(event);
      for (const w of [...waiters]) {
        if (w.match(event)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(event);
        }
      }
    }
  });
  child.once('exit', (code, signal) => {
    ended = `the harness exited (${code ?? signal}) first.\nstderr:\n${stderr.slice(-4000)}`;
    for (const fail of failures) fail(ended);
  });
  const stream = {
    seen: (match: (e: Event) => boolean) => events.filter(match),
    describe: () => JSON.stringify(events.filter((e) => e.event === 'tooltip' || e.event === 'menu').slice(-3)),
    until(match: (e: Event) => boolean, context?: () => string): Promise<Event> {
      const found = events.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const fail = (why: string) => reject(new Error(`${why}${context ? `\nlast: ${context()}` : ''}`));
        if (ended) return fail(ended);
        waiters.push({ match, resolve });
        failures.push(fail);
      });
    },
  };
  return stream;
}

/**
 * The harness: loads the packed main process the way Electron does (the entry module first, 'ready'
 * after it has finished evaluating) and turns a "quit" line on stdin into Electron's before-quit.
 * An entry that awaited whenReady at its top level never finishes, and Node ends with exit code 13.
 */
const HARNESS = `
import { createInterface } from 'node:readline';
const electron = await import('electron');
await import('./out/main/app.mjs');
electron.log('evaluated', {});
electron.emitReady();
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'quit') electron.app.emit('before-quit', { preventDefault() {} });
});
`;

/** node_modules/electron inside the extracted package: just enough of Electron's main-process API, recording what the app does. */
function writeStandInElectron(root: string): void {
  const dir = join(root, 'node_modules', 'electron');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'electron', version: '0.0.0-stand-in', type: 'module', main: 'index.js' }),
  );
  writeFileSync(join(dir, 'index.js'), STAND_IN_ELECTRON);
  writeFileSync(join(dir, 'parent-port.mjs'), STAND_IN_PARENT_PORT);
  expect(relative(root, dir)).toBe(join('node_modules', 'electron'));
}

/** In the stand-in's utility processes: \`process.parentPort\` as Electron gives it, and no \`process.send\` (which carries sockets). */
const STAND_IN_PARENT_PORT = `
import { EventEmitter } from 'node:events';
const send = process.send.bind(process);
const messages = new EventEmitter();
process.on('message', (data) => messages.emit('message', { data }));
process.parentPort = { postMessage: (message) => send(message), on: (event, listener) => void messages.on(event, listener) };
process.send = undefined;
`;

const STAND_IN_ELECTRON = `
import { EventEmitter } from 'node:events';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export function log(event, data) {
  process.stdout.write(JSON.stringify({ event, ...data }) + '\\n');
}
const appRoot = join(import.meta.dirname, '..', '..');
const version = JSON.parse(readFileSync(join(appRoot, 'package.json'), 'utf8')).version;
let markReady;
const ready = new Promise((resolve) => (markReady = resolve));
export function emitReady() {
  markReady();
  app.emit('ready');
}
let protocolHandler;

export const app = Object.assign(new EventEmitter(), {
  isPackaged: true,
  requestSingleInstanceLock: () => true,
  enableSandbox() {},
  whenReady() {
    log('whenReady', {});
    return ready;
  },
  getPath: (name) => (name === 'userData' ? process.env.STANDIN_USER_DATA : join(process.env.HOME, name)),
  getVersion: () => version,
  getName: () => 'Hub services',
  getAppPath: () => appRoot,
  getLoginItemSettings: () => ({ openAtLogin: false, wasOpenedAtLogin: false }),
  setLoginItemSettings() {},
  getAppMetrics: () => [],
  quit() {
    log('quit', {});
  },
  exit(code) {
    log('exit', { code });
    process.exit(code);
  },
});
export const ipcMain = { handle(channel) { log('ipc', { channel }); }, on() {} };
export const protocol = {
  registerSchemesAsPrivileged(schemes) { log('schemes', { schemes: schemes.map((s) => s.scheme) }); },
  handle(scheme, handler) { protocolHandler = handler; },
};
export const session = { defaultSession: { setPermissionRequestHandler() {}, setPermissionCheckHandler() {}, setDevicePermissionHandler() {} } };
export class BrowserWindow extends EventEmitter {
  constructor(options) {
    super();
    this.webContents = new EventEmitter();
    log('window', { preload: options.webPreferences.preload });
  }
  async loadURL(url) {
    const response = await protocolHandler({ url });
    log('page', { url, status: response.status, type: response.headers.get('content-type') });
  }
  show() {}
  hide() {}
  focus() {}
  restore() {}
  isMinimized() { return false; }
  isDestroyed() { return false; }
}
export class Tray {
  constructor() { log('tray', {}); }
  setContextMenu(menu) { log('menu', { labels: menu.template.map((i) => i.label).filter(Boolean) }); }
  setImage() {}
  setToolTip(text) { log('tooltip', { text }); }
}
export const Menu = { buildFromTemplate: (template) => ({ template }) };
export const nativeImage = { createFromPath: (path) => ({ path }) };
export const shell = { openPath: async () => '' };
/** A utility process stand-in: the same script, arguments, environment and folder, in a Node child. */
export const utilityProcess = {
  fork(modulePath, args, options) {
    log('fork', { modulePath, execArgv: options.execArgv ?? [], serviceName: options.serviceName });
    // Electron's parentPort (messages, no sockets), made from an IPC channel by a module loaded first.
    const parentPort = join(import.meta.dirname, 'parent-port.mjs');
    const child = spawn(process.execPath, ['--import', parentPort, ...(options.execArgv ?? []), modulePath, ...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    const proc = Object.assign(new EventEmitter(), {
      pid: child.pid,
      stdout: child.stdout,
      stderr: child.stderr,
      kill: () => child.kill('SIGTERM'),
      postMessage: (message) => child.connected && child.send(message),
    });
    child.on('message', (message) => proc.emit('message', message));
    child.once('exit', (code, signal) => {
      log('child-exit', { serviceName: options.serviceName, code, signal });
      proc.emit('exit', code ?? 1);
    });
    return proc;
  },
};
export default { app, ipcMain, protocol, session, BrowserWindow, Tray, Menu, nativeImage, shell, utilityProcess };
`;
