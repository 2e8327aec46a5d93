/**
 * Which runtime a native module's .node file was built for, read from the file itself: a module built
 * against Node's headers exports `node_register_module_v<NODE_MODULE_VERSION>` (ELF, Mach-O and PE alike),
 * and Node and Electron never share a NODE_MODULE_VERSION. `npm run dist` decides from this, not from
 * @electron/rebuild's `build/Release/.forge-meta`, which a prebuilt download for Node leaves behind.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** better-sqlite3's compiled module, where node-gyp and prebuild-install put it. */
export function betterSqliteBinary(root: string): string {
  return join(root, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
}

/** @electron/rebuild's marker beside it: "<platform>--<arch>--<abi>" of its last rebuild, whatever replaced the file since. */
export function rebuildMarker(root: string): string {
  return join(root, 'node_modules', 'better-sqlite3', 'build', 'Release', '.forge-meta');
}

/** The NODE_MODULE_VERSION the file was built for; undefined when it is missing or names none (a Node-API module). */
export function builtForAbi(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const match = /node_register_module_v(\d+)/.exec(readFileSync(file).toString('latin1'));
  return match ? Number(match[1]) : undefined;
}

/**
 * The NODE_MODULE_VERSION of the Electron in node_modules, from the node-abi that electron-builder's
 * @electron/rebuild uses: the number it builds for and writes in its marker.
 */
export async function electronAbi(root: string): Promise<number> {
  const fromRoot = createRequire(join(root, 'package.json'));
  const { version } = fromRoot('electron/package.json') as { version: string };
  const fromBuilder = createRequire(fromRoot.resolve('electron-builder'));
  const fromBuilderLib = createRequire(fromBuilder.resolve('app-builder-lib'));
  const fromRebuild = createRequire(fromBuilderLib.resolve('@electron/rebuild'));
  const { getAbi } = (await import(pathToFileURL(fromRebuild.resolve('node-abi')).href)) as {
    getAbi(target: string, runtime: 'electron' | 'node'): string;
  };
  return Number(getAbi(version, 'electron'));
}
