/**
 * The desktop shell's lifecycle, with Electron handed in (so tests can pass a fake): single-instance
 * lock, tray, console window, IPC, quitting that stops every service. The supervisor does the work.
 */
import { join } from 'node:path';
import type * as Electron from 'electron';
import { createConsoleApi } from '../console/api.ts';
import { PROJECT_ROOT } from '../supervisor/launcher.ts';
import type { Supervisor } from '../supervisor/types.ts';
import { registerConsoleIpc } from './ipc.ts';
import { setLaunchAtLogin } from './login-item.ts';
import { PRIVILEGED_SCHEME, loadRendererFiles, serveRenderer } from './renderer-protocol.ts';
import { CONSOLE_URL, applySecurityRestrictions, consoleWindowOptions } from './security.ts';
import type { SettingsStore } from './settings-schema.ts';
import { aggregateState, trayTemplate, trayTooltip, type AggregateState } from './tray-menu.ts';

export type ElectronParts = Pick<typeof Electron, 'app' | 'BrowserWindow' | 'Tray' | 'Menu' | 'nativeImage' | 'ipcMain' | 'protocol' | 'session'>;

export const PRELOAD = join(PROJECT_ROOT, 'main', 'electron', 'preload.cjs');
export const ASSETS = join(PROJECT_ROOT, 'assets');

export function trayIconPath(state: AggregateState): string {
  return join(ASSETS, `tray-${state}.png`);
}

export interface DesktopOptions {
  supervisor: Supervisor;
  settings: SettingsStore;
  /** Started with --hidden (launch at login): no window until the user asks for it. */
  hidden?: boolean;
}

export interface Desktop {
  openConsole(): void;
  quit(): void;
  readonly hasTray: boolean;
}

/** Returns undefined when another instance holds the lock (that instance focuses its window). */
export async function runDesktop(e: ElectronParts, options: DesktopOptions): Promise<Desktop | undefined> {
  const { app } = e;
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return undefined;
  }
  e.protocol.registerSchemesAsPrivileged([PRIVILEGED_SCHEME]);
  app.enableSandbox();
  const { supervisor, settings } = options;

  let quitting = false;
  let window: Electron.BrowserWindow | undefined;
  let tray: Electron.Tray | undefined;

  const openConsole = () => {
    if (!window || window.isDestroyed()) {
      window = new e.BrowserWindow(consoleWindowOptions(PRELOAD, join(ASSETS, 'icon.png')));
      window.once('ready-to-show', () => window?.show());
      window.on('close', (event) => {
        if (quitting) return;
        if (tray && settings.get().closeToTray) {
          event.preventDefault();
          window?.hide();
        } else {
          quit();
        }
      });
      void window.loadURL(CONSOLE_URL);
      return;
    }
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
  };

  const quit = () => {
    if (quitting) return;
    quitting = true;
    // Every service stops before the app exits; their own stop has a SIGKILL fallback.
    void supervisor.stopAll().finally(() => app.exit(0));
  };

  app.on('second-instance', () => openConsole());
  app.on('before-quit', (event) => {
    if (!quitting) {
      event.preventDefault();
      quit();
    }
  });
  app.on('window-all-closed', () => {
    if (!tray) quit();
  });

  await app.whenReady();
  applySecurityRestrictions(app, e.session.defaultSession);
  serveRenderer(e.protocol, await loadRendererFiles());
  registerConsoleIpc(e.ipcMain, createConsoleApi({ supervisor }), () => (window && !window.isDestroyed() ? window.webContents : undefined));
  setLaunchAtLogin(app, settings.get().launchAtLogin);

  const refreshTray = () => {
    if (!tray) return;
    const statuses = supervisor.status();
    const template = trayTemplate(statuses, {
      start: (n) => void supervisor.start(n),
      stop: (n) => void supervisor.stop(n),
      restart: (n) => void supervisor.restart(n),
      startAll: () => void supervisor.startAll(),
      stopAll: () => void supervisor.stopAll(),
      openConsole,
      quit,
    });
    template.splice(template.length - 1, 0, {
      id: 'launch-at-login',
      label: 'Launch at login',
      type: 'checkbox',
      checked: settings.get().launchAtLogin,
      click: (item) => setLaunchAtLogin(app, settings.set({ launchAtLogin: item.checked }).launchAtLogin),
    });
    // Linux app indicators show only a context menu and ignore clicks, so the menu is set again each time.
    tray.setContextMenu(e.Menu.buildFromTemplate(template));
    tray.setImage(e.nativeImage.createFromPath(trayIconPath(aggregateState(statuses))));
    tray.setToolTip(trayTooltip(statuses));
  };
  try {
    tray = new e.Tray(e.nativeImage.createFromPath(trayIconPath(aggregateState(supervisor.status()))));
    refreshTray();
  } catch {
    tray = undefined; // no tray on this desktop: closing the window quits instead
  }
  supervisor.on('status', refreshTray);

  if (!options.hidden || !tray) openConsole();
  if (settings.get().startServicesOnLaunch) void supervisor.startAll();
  return { openConsole, quit, get hasTray() {
    return tray !== undefined;
  } };
}
