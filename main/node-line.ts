/**
 * A checkout runs on the Node.js line of package.json's `engines` (docs/node.md): better-sqlite3's binary
 * is made for it, and on an older line the services crash at start without a word of why. `npm start`,
 * `npm run serve` and the tests say so first, in one line, and stop.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './supervisor/launcher-paths.ts';

/** The sentence for a Node.js outside `engines` (written as ">=A.B.C <D"); undefined inside it. */
export function otherNodeLine(
  version: string = process.versions.node,
  engines: string = (
    JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
  ).engines.node,
): string | undefined {
  const range = /^>=(\d+)\.(\d+)\.(\d+) <(\d+)$/.exec(engines);
  if (!range) return undefined;
  const [low, below] = [range.slice(1, 4).map(Number), Number(range[4])];
  // A version as one number, so that 24.11.0 <= x compares as versions do (each part below 1000).
  const rank = (parts: number[]) => parts[0]! * 1e6 + parts[1]! * 1e3 + parts[2]!;
  const have = version.split('.').map(Number);
  const atLeastLow = rank(have) >= rank(low);
  if (atLeastLow && have[0]! < below) return undefined;
  return (
    `This is Node.js ${version}; the project runs on Node.js ${engines} (package.json's engines). ` +
    "On Linux, `. .ci/use-node` puts that Node.js on this shell's PATH; elsewhere install Node.js " +
    `${low[0]} (docs/node.md).`
  );
}

/** Stops this program with the sentence when it runs on another line. */
export function refuseOtherNodeLine(): void {
  const other = otherNodeLine();
  if (other === undefined) return;
  process.stderr.write(`${other}\n`);
  process.exit(1);
}
