/**
 * Whether Electron's binary is on this machine, decided by files alone: loading the `electron` package
 * from plain Node tries to download the binary (Electron >= 42), which fails offline.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../supervisor/launcher.ts';

export function electronBinary(root = PROJECT_ROOT, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const pkg = join(root, 'node_modules', 'electron');
  const pathFile = join(pkg, 'path.txt');
  if (!existsSync(pathFile)) return undefined;
  const relative = readFileSync(pathFile, 'utf8').trim();
  const full = env.ELECTRON_OVERRIDE_DIST_PATH
    ? join(env.ELECTRON_OVERRIDE_DIST_PATH, relative)
    : join(pkg, 'dist', relative);
  return existsSync(full) ? full : undefined;
}

/** Whether a window can open here: Linux needs DISPLAY or WAYLAND_DISPLAY. */
export function hasDisplay(env: NodeJS.ProcessEnv = process.env, platform = process.platform): boolean {
  return platform !== 'linux' || Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

/** Why the desktop app cannot open here, or undefined when it can. The display first: without one, no download helps. */
export function whyNoDesktop(
  root = PROJECT_ROOT,
  env: NodeJS.ProcessEnv = process.env,
  platform = process.platform,
): string | undefined {
  if (!hasDisplay(env, platform)) return 'there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set)';
  if (!electronBinary(root, env))
    return 'Electron\u2019s binary is not installed on this machine (`npx install-electron` downloads it, which needs the network)';
  return undefined;
}
