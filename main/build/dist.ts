/**
 * `npm run dist -- <electron-builder arguments>` (e.g. `-- --linux AppImage deb`): the installers.
 * Builds what changed, runs electron-builder (which rebuilds better-sqlite3 for Electron, in place in
 * node_modules), then, if the checkout's better-sqlite3 no longer loads in this Node, rebuilds it for
 * Node again, so that `npm run serve` and the tests keep working after making installers.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../supervisor/launcher-paths.ts';
import { build, buildErrors } from './build.ts';

function run(command: string, args: string[], options: { quiet?: boolean } = {}): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: PROJECT_ROOT, stdio: options.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit', shell: process.platform === 'win32' && command === 'npm' });
    let output = '';
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

const errors = buildErrors(await build({ force: true }));
if (errors) {
  process.stderr.write(`The build failed, so no installers were made:\n${errors}\n`);
  process.exit(1);
}
const builder = await run(process.execPath, [join(PROJECT_ROOT, 'node_modules', 'electron-builder', 'cli.js'), '--publish', 'never', ...process.argv.slice(2)]);

// Loads better-sqlite3's .node file the way a headless service would.
const probe = await run(process.execPath, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], { quiet: true });
if (probe.code !== 0) {
  process.stdout.write('better-sqlite3 is now built for Electron; rebuilding it for this Node.js so that `npm run serve` keeps working...\n');
  const rebuilt = await run('npm', ['rebuild', 'better-sqlite3']);
  if (rebuilt.code !== 0) process.stderr.write('Could not rebuild better-sqlite3 for Node.js; run `npm rebuild better-sqlite3` before `npm run serve`.\n');
}
process.exit(builder.code ?? 1);
