/**
 * What the installed app carries besides Electron, as electron-builder packs it (`--linux dir`, against a
 * stand-in Electron: main/build/pack-check.ts): `npm run bench -- desktop`, or
 * `npx tsx bench/desktop/package-size.ts`. Prints the payload (app.asar plus what is unpacked beside it),
 * the packed file count and packages, for this checkout and, for comparison, for the app as it was before
 * the one build step (commit BEFORE: shell run from TypeScript through tsx, tsx/esbuild/ajv/octokit and
 * the sources packed), taken out of git into a temporary folder that shares this checkout's node_modules.
 * Target: at most 25 MB besides Electron.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, buildErrors } from '../../main/build/build.ts';
import { describePayload, packLinuxDir, payload, type Payload } from '../../main/build/pack-check.ts';
import { PROJECT_ROOT } from '../../main/supervisor/launcher-paths.ts';

/** The last commit whose app ran its main process through tsx and packed its sources (before main/build/). */
const BEFORE = '57ed72bb37d0daccf95875ccbd23efc7ebcb9209';
const builder = join(PROJECT_ROOT, 'node_modules', 'electron-builder', 'cli.js');
const work = mkdtempSync(join(tmpdir(), 'package-size-'));

async function measure(projectDir: string, name: string): Promise<Payload> {
  const packed = await packLinuxDir({ projectDir, outputDir: join(work, name, 'release'), builder });
  return payload(packed.archive);
}

try {
  const errors = buildErrors(await build());
  if (errors) throw new Error(`the build failed:\n${errors}`);
  const now = await measure(PROJECT_ROOT, 'now');
  console.log(`now:    ${describePayload(now)}`);

  const before = join(work, 'before', 'project');
  mkdirSync(before, { recursive: true });
  const archived = spawnSync('sh', ['-c', `git -C '${PROJECT_ROOT}' archive ${BEFORE} | tar -x -C '${before}'`], {
    encoding: 'utf8',
  });
  if (archived.status !== 0) {
    console.log(`before: not measured (commit ${BEFORE.slice(0, 7)} is not in this clone: ${archived.stderr.trim()})`);
  } else {
    symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(before, 'node_modules'), 'dir');
    const prepared = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(before, 'main', 'electron', 'prepare-build.ts')],
      { cwd: before, encoding: 'utf8' },
    );
    if (prepared.status !== 0) throw new Error(`the old prepare step failed:\n${prepared.stderr}`);
    const then = await measure(before, 'before');
    console.log(`before: ${describePayload(then)}`);
    const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
    console.log(
      `payload ${mb(then.archiveBytes + then.unpackedBytes)} MB -> ${mb(now.archiveBytes + now.unpackedBytes)} MB (target <= 25 MB), ` +
        `files ${then.files} -> ${now.files}, packages ${then.packages.length} -> ${now.packages.length}`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
