/**
 * `npm run dist -- <electron-builder arguments>` (e.g. `-- --linux AppImage deb`): the installers.
 * Builds everything, runs electron-builder (which rebuilds better-sqlite3 for Electron, in place in
 * node_modules), checks that what it packed was built for Electron, then, if the checkout's
 * better-sqlite3 no longer loads in this Node, rebuilds it for Node again, so that `npm run serve` and
 * the tests keep working after making installers.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../supervisor/launcher-paths.ts';
import { build, buildErrors } from './build.ts';
import { betterSqliteBinary, builtForAbi, electronAbi, rebuildMarker } from './native-abi.ts';

function run(
  command: string,
  args: string[],
  options: { quiet?: boolean } = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: PROJECT_ROOT,
      stdio: options.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit',
      shell: process.platform === 'win32' && command === 'npm',
    });
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
const binary = betterSqliteBinary(PROJECT_ROOT);
const electron = await electronAbi(PROJECT_ROOT).catch((err: unknown) => {
  // node-abi names the fix itself (a newer node-abi, which comes with a newer electron-builder).
  process.stderr.write(
    `Could not tell which NODE_MODULE_VERSION Electron needs, so no installers were made: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  return process.exit(1);
});
// @electron/rebuild skips a module whose marker says it is built for this Electron. The Node rebuild
// below (a prebuilt download, usually) replaces the file and leaves the marker: decide from the file.
if (builtForAbi(binary) !== electron) rmSync(rebuildMarker(PROJECT_ROOT), { force: true });
const builder = await run(process.execPath, [
  join(PROJECT_ROOT, 'node_modules', 'electron-builder', 'cli.js'),
  '--publish',
  'never',
  ...process.argv.slice(2),
]);
const packed = builtForAbi(binary);
if (builder.code === 0 && packed !== electron) {
  process.stderr.write(
    `The installers carry a better-sqlite3 built for NODE_MODULE_VERSION ${packed ?? 'unknown'}, not Electron's ${electron}: the installed app could not open its databases. ` +
      'Check that electron-builder.yml keeps npmRebuild on, then run `npm run dist` again.\n',
  );
}

// Built for this Node (read from the file) and loading the way a headless service loads it.
const probe = await run(process.execPath, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], {
  quiet: true,
});
if (builtForAbi(binary) !== Number(process.versions.modules) || probe.code !== 0) {
  process.stdout.write(
    'better-sqlite3 is now built for Electron; rebuilding it for this Node.js so that `npm run serve` keeps working...\n',
  );
  const rebuilt = await run('npm', ['rebuild', 'better-sqlite3']);
  if (rebuilt.code !== 0)
    process.stderr.write(
      'Could not rebuild better-sqlite3 for Node.js; run `npm rebuild better-sqlite3` before `npm run serve`.\n',
    );
}
process.exit(builder.code === 0 && packed !== electron ? 1 : (builder.code ?? 1));
