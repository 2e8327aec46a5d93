/**
 * Which services run from their bundle (out/services/<name>.mjs, written by `npm run build`, see
 * main/build/) and how each is started. Plain Node: nothing here builds, so the running app never carries
 * the build tools. A bundle reads one file instead of transpiling (tsx) or resolving hundreds of package
 * files, which halves a service's start time and memory.
 *
 * In a checkout, bundles are used while the build's manifest says not one of their inputs changed;
 * otherwise the services run from source through tsx (`npm run service`'s way) and the log says to run
 * `npm run build`. An installed app runs the bundles it carries: it has no sources to compare them
 * with, and no tsx.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { insideArchive, isCurrent, targetDir } from './build-outputs.ts';
import { PROJECT_ROOT, SERVICE_RUNNER } from './launcher-paths.ts';
import type { ServiceName } from '../../common/services.ts';

export const BUNDLE_DIR = targetDir('services');

export function bundlePath(name: ServiceName, dir = BUNDLE_DIR): string {
  return join(dir, `${name}.mjs`);
}

export function serviceSource(name: ServiceName): string {
  return join(PROJECT_ROOT, 'services', name, 'main.ts');
}

export interface ServiceCommand {
  script: string;
  args: string[];
  execArgv: string[];
}

export interface ServiceBundles {
  readonly dir: string;
  /** Services that will run from their bundle. */
  readonly bundled: ReadonlySet<ServiceName>;
  /** Finds the bundles to use (once, before the first launch); resolves with a sentence for the log when some cannot be. */
  prepare(names: readonly ServiceName[]): Promise<string | undefined>;
  /** How to start a service: its bundle, else (in a checkout) from source through tsx. */
  command(name: ServiceName): ServiceCommand;
}

export function serviceBundles(dir = BUNDLE_DIR): ServiceBundles {
  const bundled = new Set<ServiceName>();
  // Inside an installed app's archive the bundles are the app: nothing there can be rebuilt.
  const archived = insideArchive(dir);
  return {
    dir,
    bundled,
    async prepare(names) {
      const sources = names.filter((n) => existsSync(serviceSource(n)));
      // Bundles compared with the sources they were built from, where those are here (a checkout).
      const current =
        archived ||
        (sources.length > 0 &&
          isCurrent(
            dir,
            sources.map((n) => `${n}.mjs`),
          ));
      const stale: ServiceName[] = [];
      const missing: ServiceName[] = [];
      for (const name of names) {
        const hasBundle = existsSync(bundlePath(name, dir));
        const hasSource = sources.includes(name);
        // No sources to compare with (an installed app): the bundles it carries are the app.
        if (hasBundle && (!hasSource || current)) bundled.add(name);
        else if (hasSource && !archived) stale.push(name);
        else missing.push(name);
      }
      const notes = [
        ...(stale.length
          ? [
              `the bundles of ${stale.join(', ')} are missing or older than the sources, so they run from source (slower); \`npm run build\` rebuilds them`,
            ]
          : []),
        ...(missing.length ? [`this installation lacks the bundle of ${missing.join(', ')}; reinstall the app`] : []),
      ];
      return notes.length ? notes.join('; ') : undefined;
    },
    command(name) {
      if (archived || bundled.has(name) || !existsSync(serviceSource(name)))
        return { script: bundlePath(name, dir), args: [], execArgv: [] };
      return { script: SERVICE_RUNNER, args: [name], execArgv: ['--import', 'tsx'] };
    },
  };
}
