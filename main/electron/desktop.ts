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
import { currentLaunchTarget, loginCommand, setLaunchAtLogin } from './login-item.ts';
import { PRIVILEGED_SCHEME, loadRendererFiles, serveRenderer } from './renderer-protocol.ts';
import { CONSOLE_URL, applySecurityRestrictions, consoleWindowOptions } from './security.ts';
import type { SettingsStore } from './settings-schema.ts';
import { trayIsShown } from './tray-host.ts';
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
  /** Started with --hidden (launch at login): no window until the user asks for it, where a tray is seen. */
  hidden?: boolean;
  /** Whether a tray icon will be seen on this desktop (default: tray-host.ts asks the session bus on Linux). */
  trayShown?: () => Promise<boolean>;
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
  const trayShown = (options.trayShown ?? (() => trayIsShown()))();

  let quitting = false;
  let window: Electron.BrowserWindow | undefined;
  let tray: Electron.Tray | undefined;
  /** Until the user chooses: hide to the tray only where its icon is seen (see README.md here). */
  let closeByDefault: 'hide-to-tray' | 'quit' = 'quit';
  const closeHides = () => tray !== undefined && (settings.get().closeWindow ?? closeByDefault) === 'hide-to-tray';

  const openConsole = () => {
    if (!window || window.isDestroyed()) {
      window = new e.BrowserWindow(consoleWindowOptions(PRELOAD, join(ASSETS, 'icon.png')));
      window.once('ready-to-show', () => window?.show());
      window.on('close', (event) => {
        if (quitting) return;
        if (closeHides()) {
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
  const launchTarget = currentLaunchTarget(app);
  const loginRefused = (() => {
    const command = loginCommand(launchTarget);
    return 'refused' in command ? command.refused : undefined;
  })();
  // Applied at every start, so the entry follows the app when it moves (an AppImage file, a new install).
  setLaunchAtLogin(app, settings.get().launchAtLogin, launchTarget);

  const refreshTray = () => {
    if (!tray) return;
    const statuses = supervisor.status();
    const template = trayTemplate(
      statuses,
      {
        start: (n) => void supervisor.start(n),
        stop: (n) => void supervisor.stop(n),
        restart: (n) => void supervisor.restart(n),
        startAll: () => void supervisor.startAll(),
        stopAll: () => void supervisor.stopAll(),
        openConsole,
        quit,
        setLaunchAtLogin: (on) => {
          if (setLaunchAtLogin(app, on, launchTarget).ok) settings.set({ launchAtLogin: on });
          refreshTray();
        },
        setCloseToTray: (on) => {
          settings.set({ closeWindow: on ? 'hide-to-tray' : 'quit' });
          refreshTray();
        },
      },
      { launchAtLogin: settings.get().launchAtLogin, ...(loginRefused ? { launchAtLoginRefused: loginRefused } : {}), closeToTray: closeHides() },
    );
    // Linux app indicators show only a context menu and ignore clicks, so the menu is set again each time.
    tray.setContextMenu(e.Menu.buildFromTemplate(template));
    tray.setImage(e.nativeImage.createFromPath(trayIconPath(aggregateState(statuses))));
    tray.setToolTip(trayTooltip(statuses));
  };
  closeByDefault = (await trayShown) ? 'hide-to-tray' : 'quit';
  try {
    tray = new e.Tray(e.nativeImage.createFromPath(trayIconPath(aggregateState(supervisor.status()))));
    refreshTray();
  } catch {
    tray = undefined; // no tray on this desktop: closing the window quits instead
  }
  supervisor.on('status', refreshTray);

  // A hidden start leaves only the tray, so it stays hidden only where closing would hide to the tray too.
  if (!options.hidden || !closeHides()) openConsole();
  if (settings.get().startServicesOnLaunch) void supervisor.startAll();
  return { openConsole, quit, get hasTray() {
    return tray !== undefined;
  } };
}
