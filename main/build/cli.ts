/**
 * `npm run build [-- --force] [-- main|console|services ...]`: builds what changed (everything by default)
 * and says what it wrote. Exit code 1, with esbuild's error, when a target does not compile.
 */
import { statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../supervisor/launcher-paths.ts';
import { BUILD_TARGETS, build, buildErrors, type BuildTarget } from './build.ts';

const USAGE = `Usage: npm run build [-- [--force] [${BUILD_TARGETS.join('|')} ...]]`;

let parsed;
try {
  parsed = parseArgs({
    options: { force: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
  process.exit(2);
}
if (parsed.values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const unknown = parsed.positionals.filter((p) => !(BUILD_TARGETS as readonly string[]).includes(p));
if (unknown.length) {
  process.stderr.write(`Unknown target ${unknown.join(', ')}.\n${USAGE}\n`);
  process.exit(2);
}
const targets = parsed.positionals.length ? (parsed.positionals as BuildTarget[]) : BUILD_TARGETS;

const result = await build({ targets, force: parsed.values.force });
for (const [target, r] of Object.entries(result)) {
  if (r.error !== undefined) continue;
  const sizes = r.outputs.map((o) => `${o} ${(statSync(join(r.dir, o)).size / 1024).toFixed(0)} KiB`).join(', ');
  process.stdout.write(
    `${target.padEnd(9)} ${r.built ? 'built  ' : 'current'} ${relative(PROJECT_ROOT, r.dir)}: ${sizes}\n`,
  );
}
const errors = buildErrors(result);
if (errors) {
  process.stderr.write(`The build failed:\n${errors}\n`);
  process.exit(1);
}
