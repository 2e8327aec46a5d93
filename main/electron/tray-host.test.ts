/**
 * Whether a tray icon will be seen: the session bus is asked for a StatusNotifier host. The clients are
 * real processes found on PATH: stand-in `dbus-send` and `gdbus` scripts that answer as the real ones do
 * (and record what they were asked), and, where dbus-daemon is installed, the real dbus-send against a
 * real session bus that has no host, as on GNOME without the AppIndicator extension.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { trayIsShown } from './tray-host.ts';

const made: string[] = [];
const daemons: ChildProcess[] = [];
afterAll(() => {
  for (const daemon of daemons) daemon.kill('SIGTERM');
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A PATH holding only the given stand-in clients (shell scripts, builtins only); each records its arguments. */
function clients(scripts: Record<string, string>): { env: NodeJS.ProcessEnv; asked: (name: string) => string[] } {
  const dir = tempDir('tray-host');
  made.push(dir);
  for (const [name, body] of Object.entries(scripts)) {
    const file = join(dir, name);
    writeFileSync(file, `#!/bin/sh\nprintf '%s\\n' "$@" > '${dir}/${name}.args'\n${body}\n`);
    chmodSync(file, 0o755);
  }
  return {
    env: { PATH: dir },
    asked: (name) =>
      existsSync(join(dir, `${name}.args`))
        ? readFileSync(join(dir, `${name}.args`), 'utf8')
            .trim()
            .split('\n')
        : [],
  };
}

function whichSync(name: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => dir && existsSync(join(dir, name)));
}

describe('is a tray icon seen on this desktop?', () => {
  it('macOS and Windows always show it, without asking', async () => {
    const { env, asked } = clients({ 'dbus-send': 'echo "   variant       boolean false"' });
    expect(await trayIsShown('darwin', env)).toBe(true);
    expect(await trayIsShown('win32', env)).toBe(true);
    expect(asked('dbus-send')).toEqual([]);
  });

  it('Linux with a StatusNotifier host (KDE, or GNOME with AppIndicator): yes, by asking the watcher on the session bus', async () => {
    const { env, asked } = clients({ 'dbus-send': 'echo "   variant       boolean true"' });
    expect(await trayIsShown('linux', env)).toBe(true);
    expect(asked('dbus-send')).toEqual([
      '--session',
      '--print-reply=literal',
      '--reply-timeout=1500',
      '--dest=org.kde.StatusNotifierWatcher',
      '/StatusNotifierWatcher',
      'org.freedesktop.DBus.Properties.Get',
      'string:org.kde.StatusNotifierWatcher',
      'string:IsStatusNotifierHostRegistered',
    ]);
  });

  it('Linux where the watcher runs but no host registered: no', async () => {
    const { env } = clients({ 'dbus-send': 'echo "   variant       boolean false"' });
    expect(await trayIsShown('linux', env)).toBe(false);
  });

  it('Linux without a watcher (GNOME without the extension): no, from the error dbus-send gives', async () => {
    const { env } = clients({
      'dbus-send':
        'echo "Error org.freedesktop.DBus.Error.ServiceUnknown: The name org.kde.StatusNotifierWatcher was not provided by any .service files" >&2; exit 1',
    });
    expect(await trayIsShown('linux', env)).toBe(false);
  });

  it('without dbus-send, gdbus is asked instead', async () => {
    const yes = clients({ gdbus: 'echo "(<true>,)"' });
    expect(await trayIsShown('linux', yes.env)).toBe(true);
    expect(yes.asked('gdbus')).toContain('--dest=org.kde.StatusNotifierWatcher');
    const no = clients({ gdbus: 'echo "(<false>,)"' });
    expect(await trayIsShown('linux', no.env)).toBe(false);
  });

  it('with neither client, or one that hangs past the timeout: no', async () => {
    expect(await trayIsShown('linux', clients({}).env)).toBe(false);
    // `read` waits on the stdin pipe execFile keeps open: a client that never answers.
    const hung = clients({ 'dbus-send': 'read never' });
    expect(await trayIsShown('linux', hung.env, 300)).toBe(false);
    expect(hung.asked('dbus-send')).toContain('--reply-timeout=300');
  });

  it.skipIf(!whichSync('dbus-daemon') || !whichSync('dbus-send'))(
    'a real session bus with no StatusNotifier host: no',
    async () => {
      const daemon = spawn('dbus-daemon', ['--session', '--nofork', '--print-address=1'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      daemons.push(daemon);
      const address = await new Promise<string>((resolve, reject) => {
        daemon.stdout!.setEncoding('utf8');
        daemon.stdout!.once('data', (d: string) => resolve(d.trim()));
        daemon.once('exit', (code) => reject(new Error(`dbus-daemon exited (${code})`)));
      });
      expect(await trayIsShown('linux', { PATH: process.env.PATH, DBUS_SESSION_BUS_ADDRESS: address })).toBe(false);
    },
  );
});
