/**
 * Whether a tray icon will be seen, which decides what closing the window does until the user chooses.
 * On Linux, Electron's tray is a StatusNotifierItem, shown only where a StatusNotifier host runs (KDE,
 * most panels; GNOME only with the AppIndicator extension), yet `new Tray()` succeeds without one. A
 * host registers with org.kde.StatusNotifierWatcher on the session bus, so the watcher is asked, with
 * `dbus-send` or else `gdbus`, under a short timeout. Plain Node: no Electron here.
 */
import { execFile } from 'node:child_process';

const WATCHER = 'org.kde.StatusNotifierWatcher';
const PROPERTY = 'IsStatusNotifierHostRegistered';

/** The two clients, each asking the watcher's property and answering whether the reply says true. */
const ASKS: { command: string; args: (timeoutMs: number) => string[]; yes: RegExp }[] = [
  {
    command: 'dbus-send',
    args: (timeoutMs) => [
      '--session',
      '--print-reply=literal',
      `--reply-timeout=${timeoutMs}`,
      `--dest=${WATCHER}`,
      '/StatusNotifierWatcher',
      'org.freedesktop.DBus.Properties.Get',
      `string:${WATCHER}`,
      `string:${PROPERTY}`,
    ],
    yes: /\bboolean\s+true\b/,
  },
  {
    command: 'gdbus',
    args: (timeoutMs) => [
      'call',
      '--session',
      `--timeout=${Math.max(1, Math.ceil(timeoutMs / 1000))}`,
      `--dest=${WATCHER}`,
      '--object-path=/StatusNotifierWatcher',
      '--method=org.freedesktop.DBus.Properties.Get',
      WATCHER,
      PROPERTY,
    ],
    yes: /^\(<true>,\)/,
  },
];

type Reply = { missing: true } | { missing: false; stdout: string };

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Reply> {
  return new Promise((resolve) => {
    execFile(command, args, { env, timeout: timeoutMs, killSignal: 'SIGKILL', windowsHide: true }, (err, stdout) => {
      if ((err as NodeJS.ErrnoException | null)?.code === 'ENOENT') resolve({ missing: true });
      else resolve({ missing: false, stdout: err ? '' : String(stdout) });
    });
  });
}

/**
 * True on macOS and Windows; on Linux, true only when the session bus has a StatusNotifier host.
 * No answer (no bus, no watcher, no client, a hung client) counts as no tray.
 */
export async function trayIsShown(
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 1_500,
): Promise<boolean> {
  if (platform !== 'linux') return true;
  for (const ask of ASKS) {
    const reply = await run(ask.command, ask.args(timeoutMs), env, timeoutMs);
    if (!reply.missing) return ask.yes.test(reply.stdout.trim());
  }
  return false;
}
