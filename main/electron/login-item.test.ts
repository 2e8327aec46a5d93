/**
 * Launch at login starts this app, however it was installed or run: the AppImage file rather than its
 * temporary mount, the installed binary, or Electron with the app's folder in a development run (and on
 * macOS, where a login item takes no arguments, a development run is refused with a reason). Linux
 * entries are launched for real with GLib's `gio launch`, which reads Exec the way the desktop does.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tempDir as makeTempDir } from '../../test/support/identity.ts';
import { DEFAULT_SETTINGS } from './settings-schema.ts';
import { autostartEntry, autostartFile, loginCommand, setLaunchAtLogin, type LaunchTarget } from './login-item.ts';

const linuxDev: LaunchTarget = {
  platform: 'linux',
  execPath: '/home/ada/hub/node_modules/electron/dist/electron',
  appPath: '/home/ada/hub',
  isPackaged: false,
  env: {},
};

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});
function tempDir(prefix: string): string {
  const dir = makeTempDir(prefix);
  made.push(dir);
  return dir;
}

function hasGio(): boolean {
  try {
    execFileSync('gio', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('launch at login is an option, off by default', () => {
  it('defaults to off', () => {
    expect(DEFAULT_SETTINGS.launchAtLogin).toBe(false);
  });

  it('an AppImage starts from its file ($APPIMAGE), not from the mount it runs in', () => {
    const target: LaunchTarget = {
      platform: 'linux',
      execPath: '/tmp/.mount_HubSerXyZ/hub-services',
      appPath: '/tmp/.mount_HubSerXyZ/resources/app.asar',
      isPackaged: true,
      env: { APPIMAGE: '/home/ada/Applications/Hub Services.AppImage', APPDIR: '/tmp/.mount_HubSerXyZ' },
    };
    expect(loginCommand(target)).toEqual({
      executable: '/home/ada/Applications/Hub Services.AppImage',
      args: ['--hidden'],
    });
  });

  it('an installed package starts its own binary', () => {
    expect(loginCommand({ ...linuxDev, execPath: '/opt/Hub Services/hub-services', isPackaged: true })).toEqual({
      executable: '/opt/Hub Services/hub-services',
      args: ['--hidden'],
    });
  });

  it('a development run starts Electron with the app\u2019s folder, even when it inherited $APPIMAGE from an editor', () => {
    const command = { executable: linuxDev.execPath, args: ['/home/ada/hub', '--hidden'] };
    expect(loginCommand(linuxDev)).toEqual(command);
    expect(
      loginCommand({
        ...linuxDev,
        env: { APPIMAGE: '/home/ada/Applications/Editor.AppImage', APPDIR: '/tmp/.mount_Editor' },
      }),
    ).toEqual(command);
  });

  it('writes and removes an XDG autostart entry on Linux', () => {
    const config = tempDir('xdg');
    const app = { setLoginItemSettings: vi.fn() };
    const target = {
      ...linuxDev,
      execPath: '/opt/Hub Services/hub-services',
      isPackaged: true,
      env: { XDG_CONFIG_HOME: config },
    };
    expect(setLaunchAtLogin(app, true, target)).toEqual({ ok: true });
    const file = join(config, 'autostart', 'hub-services.desktop');
    expect(autostartFile(target.env)).toBe(file);
    expect(readFileSync(file, 'utf8')).toContain('\nExec="/opt/Hub Services/hub-services" --hidden\n');
    setLaunchAtLogin(app, false, target);
    expect(existsSync(file)).toBe(false);
    expect(app.setLoginItemSettings).not.toHaveBeenCalled();
  });

  it.skipIf(process.platform !== 'linux' || !hasGio())(
    process.platform === 'linux' && !hasGio()
      ? 'the entry, launched by the desktop, runs the command with its arguments intact (skipped: no gio here)'
      : 'the entry, launched by the desktop, runs the command with its arguments intact',
    async () => {
      // Folder names with the characters the Exec quoting must survive. (GLib looks the binary up before
      // expanding %%, so a % in the binary's own path would not load; in an argument it is fine.)
      const root = tempDir('autostart-exec');
      const dir = join(root, 'My "Apps" $HOME `x` back\\slash');
      const appPath = join(root, "app's 100% folder");
      mkdirSync(dir, { recursive: true });
      const argvFile = join(root, 'argv.txt');
      const executable = join(dir, 'hub services');
      writeFileSync(executable, `#!/bin/sh\nprintf '%s\\n' "$0" "$@" > '${argvFile}'\n`);
      chmodSync(executable, 0o755);
      const config = tempDir('xdg');
      setLaunchAtLogin({ setLoginItemSettings: vi.fn() }, true, {
        ...linuxDev,
        execPath: executable,
        appPath,
        env: { XDG_CONFIG_HOME: config },
      });
      execFileSync('gio', ['launch', autostartFile({ XDG_CONFIG_HOME: config })], {
        env: { PATH: process.env.PATH ?? '' },
        stdio: 'ignore',
        timeout: 10_000,
      });
      await vi.waitFor(() => expect(existsSync(argvFile) && readFileSync(argvFile, 'utf8').endsWith('\n')).toBe(true), {
        timeout: 10_000,
      });
      expect(readFileSync(argvFile, 'utf8').split('\n').slice(0, -1)).toEqual([executable, appPath, '--hidden']);
    },
  );

  it('Windows: the same command in the Run key, a path with spaces in quotes', () => {
    const app = { setLoginItemSettings: vi.fn() };
    const dev: LaunchTarget = {
      platform: 'win32',
      execPath: 'C:\\dev\\node_modules\\electron\\dist\\electron.exe',
      appPath: 'C:\\Users\\Ada Lovelace\\hub',
      isPackaged: false,
      env: {},
    };
    setLaunchAtLogin(app, true, dev);
    setLaunchAtLogin(app, true, {
      ...dev,
      execPath: 'C:\\Program Files\\Hub Services\\Hub Services.exe',
      isPackaged: true,
    });
    expect(app.setLoginItemSettings.mock.calls).toEqual([
      [{ openAtLogin: true, path: dev.execPath, args: ['"C:\\Users\\Ada Lovelace\\hub"', '--hidden'] }],
      [{ openAtLogin: true, path: 'C:\\Program Files\\Hub Services\\Hub Services.exe', args: ['--hidden'] }],
    ]);
  });

  it('macOS: a login item for the installed app; a development run is refused with the reason and nothing is set', () => {
    const app = { setLoginItemSettings: vi.fn() };
    const mac: LaunchTarget = {
      platform: 'darwin',
      execPath: '/Applications/Hub Services.app/Contents/MacOS/Hub Services',
      appPath: '/x',
      isPackaged: true,
      env: {},
    };
    expect(setLaunchAtLogin(app, true, mac)).toEqual({ ok: true });
    expect(app.setLoginItemSettings).toHaveBeenCalledWith({ openAtLogin: true });
    app.setLoginItemSettings.mockClear();
    const refused = setLaunchAtLogin(app, true, { ...mac, isPackaged: false });
    expect(refused).toEqual({ ok: false, reason: expect.stringContaining('needs the installed app') });
    expect(app.setLoginItemSettings).not.toHaveBeenCalled();
    // Turning it off always works.
    expect(setLaunchAtLogin(app, false, { ...mac, isPackaged: false })).toEqual({ ok: true });
    expect(app.setLoginItemSettings).toHaveBeenCalledWith({ openAtLogin: false });
  });

  it('quotes Exec arguments as the Desktop Entry Specification says', () => {
    expect(autostartEntry({ executable: '/opt/hub/hub-services', args: ['--hidden'] })).toContain(
      '\nExec=/opt/hub/hub-services --hidden\n',
    );
    expect(autostartEntry({ executable: '/a b/c', args: ['100%', '--hidden'] })).toContain(
      '\nExec="/a b/c" 100%% --hidden\n',
    );
    // Inside quotes `$` becomes `\$`, and the string-value escape doubles that backslash.
    expect(autostartEntry({ executable: '/a $b/c', args: [] })).toContain('\nExec="/a \\\\$b/c"\n');
  });
});
