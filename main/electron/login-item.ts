/**
 * Launch at login, off by default: Electron's login items on macOS and Windows, an XDG autostart entry
 * on Linux (where Electron has no API for it). The command is the one that started this app: the
 * AppImage file (not its temporary mount), the installed binary, or in a development run Electron with
 * the app's folder.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { App } from 'electron';

/** What decides the command that starts this app again. */
export interface LaunchTarget {
  platform: NodeJS.Platform;
  /** process.execPath: the app's binary, or Electron's in a development run. */
  execPath: string;
  /** app.getAppPath(): the folder (or asar) Electron loaded the app from. */
  appPath: string;
  /** app.isPackaged: false in a development run (`electron .`). */
  isPackaged: boolean;
  env: NodeJS.ProcessEnv;
}

/** The command that starts the app hidden at login, or the sentence why there is none here. */
export type LoginCommand = { executable: string; args: string[] } | { refused: string };

export function currentLaunchTarget(app: Pick<App, 'getAppPath' | 'isPackaged'>): LaunchTarget {
  return {
    platform: process.platform,
    execPath: process.execPath,
    appPath: app.getAppPath(),
    isPackaged: app.isPackaged,
    env: process.env,
  };
}

export function loginCommand(t: LaunchTarget): LoginCommand {
  // An AppImage runs from a mount that is gone after it quits; $APPIMAGE is the file itself. A development
  // run started from inside another AppImage (an editor's terminal) inherits $APPIMAGE, so only when packaged.
  if (
    t.platform === 'linux' &&
    t.isPackaged &&
    t.env.APPIMAGE &&
    (!t.env.APPDIR || t.execPath.startsWith(`${t.env.APPDIR}/`))
  ) {
    return { executable: t.env.APPIMAGE, args: ['--hidden'] };
  }
  if (t.isPackaged) return { executable: t.execPath, args: ['--hidden'] };
  // macOS login items open the app bundle and pass no arguments, so a development run cannot be one.
  if (t.platform === 'darwin') {
    return {
      refused:
        'Launch at login needs the installed app: a development run (electron .) cannot be opened at login on macOS.',
    };
  }
  return { executable: t.execPath, args: [t.appPath, '--hidden'] };
}

export function autostartFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'autostart', 'hub-services.desktop');
}

/** Characters the Desktop Entry Specification reserves in an Exec argument: such an argument is quoted. */
const RESERVED = /[\s"'\\><~|&;$*?#()`]/;

/**
 * One Exec argument: quoted with `"`, escaping `"`, `` ` ``, `$` and `\` inside, when it holds a reserved
 * character; then the string-value escape (each `\` doubled) and `%` doubled, as it is not a field code.
 */
function execArgument(arg: string): string {
  const quoted = RESERVED.test(arg) ? `"${arg.replace(/(["`$\\])/g, '\\$1')}"` : arg;
  return quoted.replace(/\\/g, '\\\\').replace(/%/g, '%%');
}

export function autostartEntry(command: { executable: string; args: string[] }): string {
  const exec = [command.executable, ...command.args].map(execArgument).join(' ');
  return [
    '[Desktop Entry]',
    'Type=Application',
    'Name=Hub services',
    'Comment=Local services for your AI-assistant hub',
    `Exec=${exec}`,
    'X-GNOME-Autostart-enabled=true',
    '',
  ].join('\n');
}

/** Windows' Run key keeps one command line: an argument with a space must carry its own quotes. */
function windowsArgument(arg: string): string {
  return /\s/.test(arg) ? `"${arg}"` : arg;
}

/**
 * Turns launch at login on or off. Turning it on where it cannot work (a development run on macOS)
 * changes nothing and answers why; turning it off always works.
 */
export function setLaunchAtLogin(
  app: Pick<App, 'setLoginItemSettings'>,
  enabled: boolean,
  target: LaunchTarget,
): { ok: true } | { ok: false; reason: string } {
  const command = loginCommand(target);
  if (enabled && 'refused' in command) return { ok: false, reason: command.refused };
  if (target.platform === 'linux') {
    const file = autostartFile(target.env);
    if (enabled && 'executable' in command) {
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, autostartEntry(command));
    } else if (existsSync(file)) {
      rmSync(file);
    }
  } else if (target.platform === 'win32' && 'executable' in command) {
    app.setLoginItemSettings({
      openAtLogin: enabled,
      path: command.executable,
      args: command.args.map(windowsArgument),
    });
  } else {
    // macOS: the login item is the app bundle; the app learns it was opened at login from wasOpenedAtLogin.
    app.setLoginItemSettings({ openAtLogin: enabled });
  }
  return { ok: true };
}
