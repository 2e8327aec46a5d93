/**
 * `npm run bench`: runs every benchmark script (bench/<area>/*.ts) one after another, each in its own
 * process, and prints their figures. Pass area names to run only those: `npm run bench -- identity`; `--smoke` runs each script briefly
 * (its figures mean nothing: it checks that the scripts work).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// Area names choose the areas; flags (`--smoke`) go on to every script.
const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const areas = readdirSync(here).filter(
  (d) => statSync(join(here, d)).isDirectory() && (only.length === 0 || only.includes(d)),
);
let failed = 0;
for (const area of areas.sort()) {
  const scripts = readdirSync(join(here, area)).filter(
    (f) => f.endsWith('.ts') && !f.startsWith('_') && !f.endsWith('.d.ts'),
  );
  for (const script of scripts.sort()) {
    console.log(`\n=== bench/${area}/${script}`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, area, script), ...flags], {
      stdio: 'inherit',
    });
    if (r.status !== 0) failed++;
  }
}
process.exit(failed === 0 ? 0 : 1);
