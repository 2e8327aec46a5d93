/**
 * Vitest's global setup: one build (of what changed) before any test file runs, so that tests start the
 * services from current bundles and the console server finds the console, as `npm run serve` does
 * after its own build. A target that does not compile is reported and left out of date: services then
 * run from source (where the same error shows in the test that starts them), and nothing else stops.
 */
import { otherNodeLine } from '../node-line.ts';
import { build, buildErrors } from './build.ts';

export async function setup(): Promise<void> {
  // On another Node.js line the services crash at start in test after test: one sentence instead.
  const other = otherNodeLine();
  if (other !== undefined) throw new Error(other);
  const errors = buildErrors(await build());
  if (errors)
    process.stderr.write(
      `[build] not everything could be built; what failed runs from source or fails in its own tests:\n${errors}\n`,
    );
}
