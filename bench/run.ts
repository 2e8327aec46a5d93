/**
 * `npm run bench`: runs every benchmark script (bench/<area>/*.ts) one after another, each in its own
 * process, and prints their figures. Pass area names to run only those: `npm run bench -- identity`.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const areas = readdirSync(here).filter((d) => statSync(join(here, d)).isDirectory() && (only.length === 0 || only.includes(d)));
let failed = 0;
for (const area of areas.sort()) {
  const scripts = readdirSync(join(here, area)).filter((f) => f.endsWith('.ts') && !f.startsWith('_') && !f.endsWith('.d.ts'));
  for (const script of scripts.sort()) {
    console.log(`\n=== bench/${area}/${script}`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, area, script)], { stdio: 'inherit' });
    if (r.status !== 0) failed++;
  }
}
process.exit(failed === 0 ? 0 : 1);
