/**
 * `npm run dist -- <electron-builder arguments>` (e.g. `-- --linux AppImage deb`): the installers.
 * Builds everything afresh, then runs electron-builder with electron-builder.yml. Nothing is rebuilt
 * for Electron: better-sqlite3's prebuilt Node-API binary loads in Node and Electron alike, and each
 * installer carries the one of its own system and architecture.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../supervisor/launcher-paths.ts';
import { build, buildErrors } from './build.ts';

const errors = buildErrors(await build({ force: true }));
if (errors) {
  process.stderr.write(`The build failed, so no installers were made:\n${errors}\n`);
  process.exit(1);
}
const builder = spawn(
  process.execPath,
  [join(PROJECT_ROOT, 'node_modules', 'electron-builder', 'cli.js'), '--publish', 'never', ...process.argv.slice(2)],
  { cwd: PROJECT_ROOT, stdio: 'inherit' },
);
builder.once('error', (err) => {
  process.stderr.write(`Could not start electron-builder: ${err.message}\n`);
  process.exit(1);
});
builder.once('exit', (code) => process.exit(code ?? 1));
