/**
 * One Node.js line everywhere: package.json's `engines` and `@types/node`, the workflow's setup-node, the
 * build `.ci/use-node` fetches and Electron's own Node (its package depends on the @types/node of its line)
 * name the same major, and the suite itself runs on a Node inside `engines`, as `.ci/run` makes sure.
 * npm refuses another line (`.npmrc`'s engine-strict) with its own message, and no package of the lock
 * file refuses or warns about the line of `engines`.
 */
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './support/process.ts';
import { otherNodeLine } from '../main/node-line.ts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
  allowScripts?: Record<string, boolean>;
};
const useNode = readFileSync(join(ROOT, '.ci', 'use-node'), 'utf8');
const pinned = /^hub_node_version=(\d+\.\d+\.\d+)$/m.exec(useNode)?.[1];
const running = process.versions.node;

/** `engines` as the one form it takes here, ">=<major>.<minor>.<patch> <<major + 1>". */
function enginesRange(): { lowest: number[]; major: number } {
  const match = /^>=(\d+)\.(\d+)\.(\d+) <(\d+)$/.exec(pkg.engines.node);
  expect(match, `engines.node "${pkg.engines.node}" is ">=<version> <<next major>"`).not.toBeNull();
  const [major, minor, patch, next] = match!.slice(1).map(Number) as [number, number, number, number];
  expect(next, 'engines.node spans one major').toBe(major + 1);
  return { lowest: [major, minor, patch], major };
}

const majorOf = (spec: string) => Number(/(\d+)\./.exec(spec)?.[1]);

describe('the Node.js line', () => {
  it('runs this suite on a Node.js inside engines (elsewhere: `. .ci/use-node` first)', () => {
    enginesRange();
    expect(otherNodeLine(running, pkg.engines.node)).toBeUndefined();
  });

  it('is the same major in engines, @types/node, the workflow, .ci/use-node and Electron’s own Node', () => {
    const { major } = enginesRange();
    const workflow = readFileSync(join(ROOT, '.github', 'workflows', 'desktop.yml'), 'utf8');
    const electron = createRequire(join(ROOT, 'package.json'))('electron/package.json') as {
      dependencies: Record<string, string>;
    };
    expect({
      '@types/node': majorOf(pkg.devDependencies['@types/node']!),
      'desktop.yml node-version': Number(/node-version: (\d+)/.exec(workflow)?.[1]),
      '.ci/use-node': majorOf(pinned ?? ''),
      'Electron’s Node (its @types/node)': majorOf(electron.dependencies['@types/node']!),
    }).toEqual({
      '@types/node': major,
      'desktop.yml node-version': major,
      '.ci/use-node': major,
      'Electron’s Node (its @types/node)': major,
    });
    expect(otherNodeLine(pinned!, pkg.engines.node), `.ci/use-node's ${pinned} against engines`).toBeUndefined();
  });
});

/** A `node` of another line on this machine (the system's, where it is older), for npm's refusal below. */
function otherLineNode(): { node?: string; why?: string } {
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/bin', '/usr/local/bin']);
  for (const dir of dirs) {
    const node = join(dir, process.platform === 'win32' ? 'node.exe' : 'node');
    const version = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    if (version.status === 0 && majorOf(version.stdout.trim()) !== majorOf(running)) return { node };
  }
  return { why: `no Node.js of another line than ${running} on PATH or in /usr/bin, /usr/local/bin` };
}

const other = otherLineNode();
if (other.why)
  process.stdout.write(`[node-version.test] skipped npm's refusal on another Node.js line: ${other.why}.\n`);

describe('npm and the Node.js line', () => {
  it('.npmrc makes npm refuse a Node.js outside engines (engine-strict)', () => {
    expect(readFileSync(join(ROOT, '.npmrc'), 'utf8')).toMatch(/^engine-strict=true$/m);
  });

  it('every package of the lock file accepts the Node.js of engines, so npm ci installs all and warns of none', () => {
    const semver = createRequire(join(ROOT, 'package.json'))('semver') as {
      satisfies(version: string, range: string): boolean;
    };
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
    };
    const lowest = enginesRange().lowest.join('.');
    const refusing = Object.entries(lock.packages).flatMap(([path, entry]) => {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      return range && [lowest, pinned!, running].some((v) => !semver.satisfies(v, range))
        ? [`${path || 'the project'}@${entry.version ?? ''} (node ${range})`]
        : [];
    });
    expect(refusing).toEqual([]);
  });

  it('every dependency with an install script is approved or denied in allowScripts, none run by default', () => {
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const undecided = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
      .filter((name) => typeof pkg.allowScripts?.[name] !== 'boolean');
    expect(undecided, 'decide each with `npm install-scripts approve|deny <name>`').toEqual([]);
  });

  it('npm ci compiles nothing: better-sqlite3\u2019s implicit node-gyp run is denied, and its prebuilt binary is what loads', () => {
    // npm adds `node-gyp rebuild` as the install script of a package with a binding.gyp; for better-sqlite3
    // it builds nothing where a prebuilt binary exists, yet needs Python and make to say so.
    expect(pkg.allowScripts?.['better-sqlite3']).toBe(false);
    const load = spawnSync(
      process.execPath,
      [
        '-e',
        "new (require('better-sqlite3'))(':memory:').close();" +
          "process.stdout.write(process.report.getReport().sharedObjects.filter((f) => f.endsWith('.node')).join('\\n'))",
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(load.stderr).toBe('');
    const expected =
      process.platform === 'linux' &&
      !(process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime
        ? 'linuxmusl'
        : process.platform;
    expect(load.stdout.split('\n').map((f) => relative(ROOT, f))).toEqual([
      join('node_modules', 'better-sqlite3', 'prebuilds', `${expected}-${process.arch}.node`),
    ]);
  });

  it.skipIf(other.node === undefined)(
    'npm ci on another Node.js line stops at once, saying which Node.js engines needs',
    { timeout: 120_000 },
    () => {
      const project = mkdtempSync(join(tmpdir(), 'engine-strict-'));
      try {
        for (const file of ['package.json', 'package-lock.json', '.npmrc'])
          copyFileSync(join(ROOT, file), join(project, file));
        // That Node first on PATH: npm runs on it, as on a machine whose `node` is of that line.
        const bin = join(project, 'bin');
        mkdirSync(bin);
        symlinkSync(other.node!, join(bin, 'node'));
        const npm = spawnSync('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts'], {
          cwd: project,
          env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` },
          encoding: 'utf8',
          shell: process.platform === 'win32',
        });
        expect(npm.status).not.toBe(0);
        expect(npm.stderr).toContain('EBADENGINE');
        expect(npm.stderr).toContain(pkg.engines.node);
        expect(existsSync(join(project, 'node_modules'))).toBe(false);
      } finally {
        rmSync(project, { recursive: true, force: true });
      }
    },
  );
});

describe('.ci/use-node', () => {
  const cache = mkdtempSync(join(tmpdir(), 'use-node-'));
  afterAll(() => rmSync(cache, { recursive: true, force: true }));

  it('changes nothing and fetches nothing where `node` is already of its line', () => {
    // Guard: on another line it would fetch the real build into the temporary cache.
    expect(majorOf(running), 'this test runs on the line .ci/use-node pins').toBe(majorOf(pinned!));
    const bin = join(cache, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    const path = `${bin}:/usr/bin:/bin`;
    const shell = spawnSync('bash', ['-c', '. .ci/use-node && printf "%s" "$PATH"'], {
      cwd: ROOT,
      env: { PATH: path, HOME: cache, XDG_CACHE_HOME: join(cache, 'xdg') },
      encoding: 'utf8',
    });
    expect(shell.status, shell.stderr).toBe(0);
    expect(shell.stdout).toBe(path);
    expect(readdirSync(cache)).toEqual(['bin']);
  });

  it('refuses to run as a program, which could not change the calling shell, and says to source it', () => {
    const run = spawnSync('bash', [join(ROOT, '.ci', 'use-node')], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('. .ci/use-node');
  });
});
