/**
 * One Node.js line everywhere: package.json's `engines` and `@types/node`, the workflow's setup-node, the
 * build `.ci/use-node` fetches and Electron's own Node (its package depends on the @types/node of its line)
 * name the same major, and the suite itself runs on a Node inside `engines`, as `.ci/run` makes sure.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './support/process.ts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
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

function satisfies(version: string, range: { lowest: number[]; major: number }): boolean {
  const parts = version.split('.').map(Number);
  if (parts[0] !== range.major) return false;
  for (let i = 1; i < 3; i++) if (parts[i] !== range.lowest[i]) return parts[i]! > range.lowest[i]!;
  return true;
}

const majorOf = (spec: string) => Number(/(\d+)\./.exec(spec)?.[1]);

describe('the Node.js line', () => {
  it('runs this suite on a Node.js inside engines (elsewhere: `. .ci/use-node` first)', () => {
    expect(satisfies(running, enginesRange()), `Node.js ${running} against engines "${pkg.engines.node}"`).toBe(true);
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
    expect(satisfies(pinned!, enginesRange()), `.ci/use-node's ${pinned} against engines`).toBe(true);
  });
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
    const shell = spawnSync('bash', ['-c', '. .ci/use-node && printf "%s|%s" "$PATH" "${npm_config_nodedir-unset}"'], {
      cwd: ROOT,
      env: { PATH: path, HOME: cache, XDG_CACHE_HOME: join(cache, 'xdg') },
      encoding: 'utf8',
    });
    expect(shell.status, shell.stderr).toBe(0);
    expect(shell.stdout).toBe(`${path}|unset`);
    expect(readdirSync(cache)).toEqual(['bin']);
  });

  it('refuses to run as a program, which could not change the calling shell, and says to source it', () => {
    const run = spawnSync('bash', [join(ROOT, '.ci', 'use-node')], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('. .ci/use-node');
  });
});
