/**
 * `npm run dist` twice in a row packs a better-sqlite3 built for Electron both times. Between the runs,
 * dist's own rebuild for Node is what it is on a machine that can download prebuilt binaries:
 * prebuild-install replaces the .node file and leaves @electron/rebuild's `.forge-meta` saying "built
 * for Electron", which made the second run skip the Electron rebuild and ship Node's build.
 *
 * Where Electron and its headers cannot be downloaded, the run is the real one with three stand-ins: a
 * copy of the project (so this checkout's better-sqlite3 stays as it is), the stand-in Electron folder of
 * the packaging test, and a local server in place of better-sqlite3's release downloads
 * (`npm_config_better_sqlite3_binary_host`), which both rebuilds use: the Electron one through
 * @electron/rebuild's prebuild-install step (so `buildDependenciesFromSource` is off here, where the
 * installers compile), the Node one through better-sqlite3's own install script. It serves this
 * checkout's .node file for Node's NODE_MODULE_VERSION and, for Electron's, the same file with the
 * version in its registration symbol changed: a file that reads as Electron's build, which is all a
 * package check reads. Each run's packed .node is read for the version it was built for; nothing else in
 * the package is checked here (through the linked node_modules electron-builder misses pino's own
 * dependencies, which test/packaging.test.ts checks on the real tree).
 */
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { betterSqliteBinary, builtForAbi, electronAbi, rebuildMarker } from '../main/build/native-abi.ts';
import { standInElectron } from '../main/build/pack-check.ts';
import { ROOT } from './support/process.ts';

const work = mkdtempSync(join(tmpdir(), 'packaging-rebuild-'));
const project = join(work, 'project');
const NODE_ABI = Number(process.versions.modules);
const ELECTRON_ABI = await electronAbi(ROOT);
const betterSqlite = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')) as {
  version: string;
};

/** The project's own files, copied; node_modules: better-sqlite3 copied (the runs rewrite it), everything else linked. */
function copyProject(): void {
  for (const entry of [
    'package.json',
    'package-lock.json',
    'electron-builder.yml',
    'tsconfig.json',
    'main',
    'common',
    'renderer',
    'services',
    'assets',
  ]) {
    cpSync(join(ROOT, entry), join(project, entry), { recursive: true, filter: (from) => !from.endsWith('.test.ts') });
  }
  const modules = join(project, 'node_modules');
  mkdirSync(modules, { recursive: true });
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name === 'better-sqlite3') {
      cpSync(join(ROOT, 'node_modules', name), join(modules, name), {
        recursive: true,
        filter: (from) => !/[\\/]build[\\/]Release[\\/](obj|obj\.target|\.deps)$/.test(from),
      });
    } else if (name === '.bin') {
      // Its links are relative (../tsx/...), so copied they point into this node_modules.
      cpSync(join(ROOT, 'node_modules', name), join(modules, name), { recursive: true, verbatimSymlinks: true });
    } else {
      symlinkSync(join(ROOT, 'node_modules', name), join(modules, name), 'dir');
    }
  }
  // Whatever the checkout's last rebuild left: a run starts from a Node build, as after `npm ci`.
  rmSync(rebuildMarker(project), { force: true });
  expect(builtForAbi(betterSqliteBinary(project))).toBe(NODE_ABI);
}

/** better-sqlite3's release downloads, as prebuild-install asks for them: {host}/v{version}/better-sqlite3-v{version}-{runtime}-v{abi}-{platform}{libc}-{arch}.tar.gz. */
async function prebuiltServer(): Promise<{ server: Server; url: string; asked: string[] }> {
  const nodeBuild = readFileSync(betterSqliteBinary(ROOT));
  const electronBuild = Buffer.from(
    nodeBuild
      .toString('latin1')
      .replaceAll(`node_register_module_v${NODE_ABI}`, `node_register_module_v${ELECTRON_ABI}`),
    'latin1',
  );
  expect(String(ELECTRON_ABI)).toHaveLength(String(NODE_ABI).length); // the same length: nothing else in the file moves
  const tarballs: Record<string, string> = {};
  for (const [runtime, abi, file] of [
    ['node', NODE_ABI, nodeBuild],
    ['electron', ELECTRON_ABI, electronBuild],
  ] as const) {
    const staging = join(work, 'prebuilt', `${runtime}-${abi}`);
    mkdirSync(join(staging, 'build', 'Release'), { recursive: true });
    writeFileSync(join(staging, 'build', 'Release', 'better_sqlite3.node'), file, { mode: 0o755 });
    const tarball = join(work, 'prebuilt', `${runtime}-${abi}.tar.gz`);
    await runProcess('tar', ['-czf', tarball, '-C', staging, 'build'], { cwd: work, env: process.env });
    tarballs[`${runtime}-v${abi}`] = tarball;
  }
  const asked: string[] = [];
  const server = createServer((request, response) => {
    const name = request.url?.split('/').at(-1) ?? '';
    asked.push(name);
    const match = new RegExp(
      `^better-sqlite3-v${betterSqlite.version.replaceAll('.', '\\.')}-((?:node|electron)-v\\d+)-`,
    ).exec(name);
    const tarball = match ? tarballs[match[1]!] : undefined;
    if (!tarball) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/gzip' }).end(readFileSync(tarball));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${address.port}`, asked };
}

function runProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

let prebuilt: Awaited<ReturnType<typeof prebuiltServer>>;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  copyProject();
  prebuilt = await prebuiltServer();
  const home = join(work, 'home');
  mkdirSync(home, { recursive: true });
  env = {
    ...process.env,
    CI: '1',
    HOME: home,
    // prebuild-install keeps what it downloads in npm's cache: one of the test's own (the second run reuses it).
    npm_config_cache: join(work, 'npm-cache'),
    npm_config_better_sqlite3_binary_host: prebuilt.url,
  };
  delete env.npm_config_build_from_source;
}, 120_000);

afterAll(async () => {
  await new Promise((resolve) => prebuilt?.server.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

/** One `npm run dist` in the copy, --linux dir against the stand-in Electron; what it packed and what node_modules holds after. */
async function dist(round: number) {
  const output = join(work, `release-${round}`);
  const electronDist = standInElectron(join(work, 'electron-dist'));
  const asked = prebuilt.asked.length;
  const args = [
    'run',
    'dist',
    '--',
    '--linux',
    'dir',
    `-c.electronDist=${electronDist}`,
    '-c.buildDependenciesFromSource=false',
    `-c.directories.output=${output}`,
  ];
  const run = await runProcess('npm', args, { cwd: project, env });
  const packed = join(
    output,
    'linux-unpacked',
    'resources',
    'app.asar.unpacked',
    'node_modules',
    'better-sqlite3',
    'build',
    'Release',
    'better_sqlite3.node',
  );
  return {
    ...run,
    packedAbi: builtForAbi(packed),
    checkoutAbi: builtForAbi(betterSqliteBinary(project)),
    marker: existsSync(rebuildMarker(project)) ? readFileSync(rebuildMarker(project), 'utf8') : undefined,
    downloads: prebuilt.asked.slice(asked),
  };
}

describe('npm run dist, twice in a row, where better-sqlite3 downloads prebuilt (a copy of the project, stand-in Electron)', () => {
  it(
    'packs better-sqlite3 built for Electron both times, and leaves the checkout with Node\u2019s build each time',
    { timeout: 480_000 },
    async () => {
      const first = await dist(1);
      expect(first.code, first.output.slice(-4000)).toBe(0);
      expect(first.packedAbi, 'the first run packed').toBe(ELECTRON_ABI);
      // dist's rebuild for Node was a prebuilt download: Node's file back, @electron/rebuild's marker left as it was.
      expect(first.downloads.map((name) => /-(node|electron)-v\d+-/.exec(name)?.[0])).toEqual([
        `-electron-v${ELECTRON_ABI}-`,
        `-node-v${NODE_ABI}-`,
      ]);
      expect(first.checkoutAbi).toBe(NODE_ABI);
      expect(first.marker).toBe(`${process.platform}--${process.arch}--${ELECTRON_ABI}`);

      const second = await dist(2);
      expect(second.code, second.output.slice(-4000)).toBe(0);
      expect(second.packedAbi, 'the second run packed').toBe(ELECTRON_ABI);
      expect(second.checkoutAbi).toBe(NODE_ABI);
      // And the checkout's module loads in this Node, as `npm run serve` will load it.
      const probe = await runProcess(process.execPath, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], {
        cwd: project,
        env,
      });
      expect(probe.code, probe.output).toBe(0);
    },
  );

  it('reads the version a .node file was built for from the file itself', () => {
    expect(builtForAbi(betterSqliteBinary(ROOT))).toBe(NODE_ABI);
    const copy = join(work, 'renamed.node');
    copyFileSync(betterSqliteBinary(ROOT), copy);
    writeFileSync(
      copy,
      Buffer.from(readFileSync(copy).toString('latin1').replaceAll(`_v${NODE_ABI}`, `_v${ELECTRON_ABI}`), 'latin1'),
    );
    expect(builtForAbi(copy)).toBe(ELECTRON_ABI);
    expect(builtForAbi(join(work, 'missing.node'))).toBeUndefined();
  });
});
