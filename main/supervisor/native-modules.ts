/**
 * A native module (better-sqlite3) that cannot be loaded here is a mistake a person fixes, not a crash
 * to retry: the service stops with one line that says what to do, and exit code 78, on which the
 * supervisor gives up at once and shows that line. Installed by service-prelude.ts in every service.
 */
import { writeSync } from 'node:fs';

/** Exit code of a service that cannot start until a person changes something (EX_CONFIG, as the kit uses). */
export const NEEDS_A_PERSON_EXIT = 78;

/** Whether this process is Electron's (the installed app) or Node's (a checkout). */
export interface RuntimeVersions {
  electron?: string;
}

/** The package a native file belongs to (`better-sqlite3` from .../node_modules/better-sqlite3/prebuilds/linux-x64.node). */
export function nativePackage(file: string): string {
  const match = /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)[\\/](?!.*node_modules[\\/])/.exec(file);
  return match ? match[1]!.replace(/\\/g, '/') : 'a native module';
}

/** Loader messages that mean the file was made for another platform or architecture. */
const BUILT_FOR_ANOTHER =
  /invalid ELF header|wrong ELF class|ELF file's architecture|mach-o|incompatible architecture|not a valid Win32 application/i;

/**
 * One line for a person when loading a native file failed (ERR_DLOPEN_FAILED): made for another
 * platform or architecture, or otherwise unloadable (a C library too old for it, a damaged file), with
 * how to fix it where this process runs; undefined for any other failure. better-sqlite3 is a Node-API
 * module, so the Node.js or Electron version that loads it is never the cause.
 */
export function nativeLoadFailure(
  err: unknown,
  file: string,
  versions: RuntimeVersions = process.versions,
  system: { platform: string; arch: string } = process,
): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : '';
  if (code !== 'ERR_DLOPEN_FAILED' && !BUILT_FOR_ANOTHER.test(message)) return undefined;
  const pkg = nativePackage(file);
  const what = BUILT_FOR_ANOTHER.test(message)
    ? `${pkg} could not be loaded: its binary is for another platform or architecture (${flatten(message, file)})`
    : `${pkg} could not be loaded (${flatten(message, file)})`;
  const fix = versions.electron
    ? `Reinstall the app with the installer for this system (${system.platform}, ${system.arch}).`
    : `Reinstall the dependencies on this machine (\`npm ci\` in the project folder), then start again.`;
  return `${what}. ${fix}`;
}

/**
 * Wraps process.dlopen (what require() of a .node file calls) so that a native module that cannot be
 * loaded stops this service with one line on stderr and exit code 78, instead of a stack trace and a
 * round of restarts. Any other failure is thrown on unchanged.
 */
export function guardNativeModules(service: string): void {
  const dlopen = process.dlopen;
  process.dlopen = function guardedDlopen(this: unknown, module: object, filename: string, ...rest: unknown[]) {
    try {
      return (dlopen as (...args: unknown[]) => unknown).call(process, module, filename, ...rest) as void;
    } catch (err) {
      const line = nativeLoadFailure(err, filename);
      if (line === undefined) throw err;
      // Written synchronously: an exit right after an asynchronous write to a pipe can lose it.
      writeSync(2, `${service}: ${line}\n`);
      process.exit(NEEDS_A_PERSON_EXIT);
    }
  } as typeof process.dlopen;
}

/** The loader's message without the file's path and without the line breaks Node puts in it. */
function flatten(message: string, file: string): string {
  const flat = message.split(file).join('<file>').replace(/\s+/g, ' ').trim();
  return flat.length > 160 ? `${flat.slice(0, 157)}...` : flat;
}
