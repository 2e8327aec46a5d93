import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

export type CliLocation =
  { found: true; path: string; source: 'setting' | 'PATH' | 'install location' } | { found: false; detail: string };

const NAMES = process.platform === 'win32' ? ['claude.exe', 'claude.cmd', 'claude'] : ['claude'];

function executable(path: string): boolean {
  try {
    // Most PATH folders lack the binary: a miss is answered without an exception (this runs for every completion).
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where the CLI is usually installed when it is not on the service's PATH (a desktop app often gets a short PATH); `~` is the HOME of `env`. */
export function usualInstallLocations(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME ?? homedir();
  const dirs = [
    join(home, '.claude', 'local'),
    join(home, '.local', 'bin'),
    join(home, '.npm-global', 'bin'),
    join(home, '.bun', 'bin'),
    join(home, '.volta', 'bin'),
    '/usr/local/bin',
    '/opt/homebrew/bin',
    '/usr/bin',
  ];
  if (process.platform === 'win32' && env.APPDATA) dirs.push(join(env.APPDATA, 'npm'));
  return dirs.flatMap((d) => NAMES.map((n) => join(d, n)));
}

const SET_IT =
  'Install the CLI, or set MODELPROV_CLI_BINARY to the full path of the claude binary and restart the service.';

/**
 * MODELPROV_CLI_BINARY if set (a path, or a name looked up on PATH); otherwise `claude` on PATH, then
 * the usual install locations. PATH and HOME come from `env`, the service's own environment. Looked up
 * afresh at every call, so a binary installed later is found without a restart.
 */
export function locateCli(configured: string | undefined, env: NodeJS.ProcessEnv): CliLocation {
  const pathDirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  if (configured) {
    if (configured.includes('/') || configured.includes('\\') || isAbsolute(configured)) {
      const p = resolve(configured);
      return executable(p)
        ? { found: true, path: p, source: 'setting' }
        : { found: false, detail: `MODELPROV_CLI_BINARY names ${p}, which is not an executable file. ${SET_IT}` };
    }
    for (const d of pathDirs)
      if (executable(join(d, configured))) return { found: true, path: join(d, configured), source: 'setting' };
    return {
      found: false,
      detail: `MODELPROV_CLI_BINARY names "${configured}", which is not on the service's PATH. Set MODELPROV_CLI_BINARY to the full path of the claude binary and restart the service.`,
    };
  }
  for (const d of pathDirs)
    for (const n of NAMES) if (executable(join(d, n))) return { found: true, path: join(d, n), source: 'PATH' };
  for (const p of usualInstallLocations(env))
    if (executable(p)) return { found: true, path: p, source: 'install location' };
  return {
    found: false,
    detail: `The CLI binary (claude) was found neither on the service's PATH nor in the usual install locations (~/.claude/local, ~/.local/bin, ~/.npm-global/bin, ~/.bun/bin, ~/.volta/bin, /usr/local/bin, /opt/homebrew/bin, /usr/bin). ${SET_IT}`,
  };
}

/**
 * Which file a path runs now: the file behind its links, and that file's inode, size and change time.
 * An update in place (the installer moving its link to a new version, a package manager rewriting the
 * file) changes it although the path stays; undefined when the path cannot be read.
 */
export function binaryIdentity(path: string): string | undefined {
  try {
    // The system's realpath, one call: Node's own walks the path a component at a time (this runs for every completion).
    const real = realpathSync.native(path);
    const st = statSync(real);
    return `${real}\0${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
}
