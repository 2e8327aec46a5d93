/**
 * The desktop shell's lifecycle, with Electron handed in (so tests can pass a fake): single-instance
 * lock, tray, console window, IPC, quitting that stops every service. The supervisor does the work.
 */
import { join } from 'node:path';
import type * as Electron from 'electron';
import { PRELOAD_FILE, targetDir } from '../supervisor/build-outputs.ts';
import type { DesktopSettingsView } from '../../common/contract.ts';
import { createConsoleApi } from '../console/api.ts';
import type { SessionCredentialView } from '../console/answers.ts';
import { expiringSoon } from '../console/overview.ts';
import { PROJECT_ROOT } from '../supervisor/launcher.ts';
import type { ServiceStatus, Supervisor } from '../supervisor/types.ts';
import { registerConsoleIpc } from './ipc.ts';
import { expiryNotices, signalNotices, statusNotice, wanted, type Notice } from './notifications.ts';
import { openTerminal } from './terminal.ts';
import { currentLaunchTarget, loginCommand, setLaunchAtLogin } from './login-item.ts';
import { PRIVILEGED_SCHEME, loadRendererFiles, serveRenderer } from './renderer-protocol.ts';
import { CONSOLE_URL, applySecurityRestrictions, consoleWindowOptions } from './security.ts';
import type { SettingsStore } from './settings-schema.ts';
import { trayIsShown } from './tray-host.ts';
import type { DesktopTestHooks, ServiceView, TestHookEvent, TrayItemView, WindowView } from './test-hooks.ts';
import { aggregateState, trayTemplate, trayTooltip, type AggregateState, type TrayItem } from './tray-menu.ts';

export type ElectronParts = Pick<
  typeof Electron,
  'app' | 'BrowserWindow' | 'Tray' | 'Menu' | 'nativeImage' | 'ipcMain' | 'protocol' | 'session'
> &
  Partial<Pick<typeof Electron, 'Notification' | 'shell'>>;

/** How often the app looks for signals that failed for good (the gateway's own retries take minutes). */
export const SIGNAL_WATCH_MS = 60_000;

/** Built by `npm run build` from preload.ts (a sandboxed preload must be one CommonJS file). */
export const PRELOAD = join(targetDir('main'), PRELOAD_FILE);
export const ASSETS = join(PROJECT_ROOT, 'assets');

export function trayIconPath(state: AggregateState): string {
  return join(ASSETS, `tray-${state}.png`);
}

/** What the desktop shell runs on: the supervisor, the settings, and how it starts. */
export interface DesktopParts {
  supervisor: Supervisor;
  settings: SettingsStore;
  /** Started with --hidden (launch at login): no window until the user asks for it, where a tray is seen. */
  hidden?: boolean;
  /** Whether a tray icon will be seen on this desktop (default: tray-host.ts asks the session bus on Linux). */
  trayShown?: () => Promise<boolean>;
  /** How often to look for signals that failed for good (default SIGNAL_WATCH_MS). */
  signalWatchMs?: number;
  /** Hands a test the hooks of test-hooks.ts (app.ts serves them to the test's loopback listener named in HUB_SERVICES_TEST_HOOKS); never in normal use. */
  testHooks?: (hooks: DesktopTestHooks) => void;
}

export interface Desktop {
  openConsole(): void;
  quit(): void;
  readonly hasTray: boolean;
}

/** Returns undefined when another instance holds the lock (that instance focuses its window). */
export async function runDesktop(e: ElectronParts, parts: DesktopParts): Promise<Desktop | undefined> {
  const { app } = e;
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return undefined;
  }
  e.protocol.registerSchemesAsPrivileged([PRIVILEGED_SCHEME]);
  app.enableSandbox();
  const { supervisor, settings } = parts;
  const trayShown = (parts.trayShown ?? (() => trayIsShown()))();

  let quitting = false;
  let window: Electron.BrowserWindow | undefined;
  let tray: Electron.Tray | undefined;
  /** Until the user chooses: hide to the tray only where its icon is seen (see README.md here). */
  let closeByDefault: 'hide-to-tray' | 'quit' = 'quit';
  const closeHides = () => tray !== undefined && (settings.get().closeWindow ?? closeByDefault) === 'hide-to-tray';

  const hookListeners: Array<(event: TestHookEvent) => void> = [];
  const report = (event: TestHookEvent) => hookListeners.forEach((listener) => listener(event));

  const openConsole = () => {
    if (!window || window.isDestroyed()) {
      window = new e.BrowserWindow(consoleWindowOptions(PRELOAD, join(ASSETS, 'icon.png')));
      window.once('ready-to-show', () => window?.show());
      window.on('show', () => report({ event: 'window', window: windowView() }));
      window.on('hide', () => report({ event: 'window', window: windowView() }));
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

  const windowView = (): WindowView | undefined => {
    if (!window || window.isDestroyed()) return undefined;
    const prefs = window.webContents.getLastWebPreferences() ?? {};
    return {
      visible: window.isVisible(),
      focused: window.isFocused(),
      url: window.webContents.getURL(),
      webPreferences: {
        contextIsolation: prefs.contextIsolation,
        sandbox: prefs.sandbox,
        nodeIntegration: prefs.nodeIntegration,
        webSecurity: prefs.webSecurity,
      },
    };
  };

  const quit = () => {
    if (quitting) return;
    quitting = true;
    // Every service stops before the app exits; their own stop has a SIGKILL fallback.
    void supervisor.stopAll().finally(() => app.exit(0));
  };

  app.on('second-instance', () => {
    openConsole();
    report({ event: 'second-instance', window: windowView() });
  });
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
  serveRenderer(e.protocol, loadRendererFiles());
  const logFolder = join(supervisor.dataDir, 'logs');
  const desktopSettings = (): DesktopSettingsView => ({
    launchAtLogin: settings.get().launchAtLogin,
    ...(loginRefused ? { launchAtLoginRefused: loginRefused } : {}),
    notifications: settings.get().notifications,
    logFolder,
  });
  const api = createConsoleApi({
    supervisor,
    firstRun: {
      firstRunDone: () => settings.get().firstRunDone,
      setFirstRunDone: (done) => void settings.set({ firstRunDone: done }),
    },
    preferences: {
      hubCredentialDays: () => settings.get().hubCredentialDays,
      setHubCredentialDays: (days) => void settings.set({ hubCredentialDays: days }),
    },
    // The Settings page changes what the tray's shortcuts change, the same way, and the tray follows.
    desktop: {
      get: desktopSettings,
      set: (patch) => {
        if (patch.launchAtLogin !== undefined && setLaunchAtLogin(app, patch.launchAtLogin, launchTarget).ok)
          settings.set({ launchAtLogin: patch.launchAtLogin });
        if (patch.notifications)
          settings.set({ notifications: { ...settings.get().notifications, ...patch.notifications } });
        refreshTray();
        return desktopSettings();
      },
      openLogFolder: async () => {
        if (!e.shell) return { opened: false, message: `The log files are in ${logFolder}.` };
        const failed = await e.shell.openPath(logFolder);
        return failed
          ? { opened: false, message: `The log folder ${logFolder} could not be opened: ${failed}` }
          : { opened: true, message: `Opened ${logFolder} in your file manager.` };
      },
    },
    openTerminal: (program) => openTerminal(program),
  });
  registerConsoleIpc(e.ipcMain, api, () => (window && !window.isDestroyed() ? window.webContents : undefined));

  // Native notifications: decided in notifications.ts, each kind turned off from the tray.
  const notify = (notice: Notice) => {
    if (!e.Notification?.isSupported() || !wanted(notice, settings.get())) return;
    const shown = new e.Notification({ title: notice.title, body: notice.body });
    shown.on('click', () => openConsole());
    shown.show();
  };
  const lastStatus = new Map<string, ServiceStatus>();
  for (const s of supervisor.status()) lastStatus.set(s.name, s);
  supervisor.on('status', (next: ServiceStatus) => {
    const notice = statusNotice(lastStatus.get(next.name), next);
    lastStatus.set(next.name, next);
    if (notice) notify(notice);
  });
  const signalsSeen = { ids: new Set<string>(), first: true };
  const watchSignals = async () => {
    const listed = await api.call({ method: 'subscriptions.list', params: { limit: 100 } });
    // The gateway or identity not answering is the services' own news, shown by their states.
    if (listed.ok)
      for (const notice of signalNotices(
        signalsSeen,
        (listed.data as { items: { id?: unknown; signal?: unknown; repo?: unknown }[] }).items,
      ))
        notify(notice);
  };
  // A week before a hub credential expires, once per credential (the overview says it too).
  const expiryTold = new Set<string>();
  const watchExpiry = async () => {
    const hub = await api.call({ method: 'hub.get' });
    if (!hub.ok) return;
    const { credentials } = hub.data as { credentials: SessionCredentialView[] };
    for (const notice of expiryNotices(expiryTold, expiringSoon(credentials, new Date()))) notify(notice);
  };
  const signalTimer = setInterval(() => {
    void watchSignals();
    void watchExpiry();
  }, parts.signalWatchMs ?? SIGNAL_WATCH_MS);
  signalTimer.unref();
  app.on('will-quit', () => clearInterval(signalTimer));
  const launchTarget = currentLaunchTarget(app);
  const loginRefused = (() => {
    const command = loginCommand(launchTarget);
    return 'refused' in command ? command.refused : undefined;
  })();
  // Applied at every start, so the entry follows the app when it moves (an AppImage file, a new install).
  setLaunchAtLogin(app, settings.get().launchAtLogin, launchTarget);

  let menu: TrayItem[] = [];
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
        setNotification: (kind, on) => {
          settings.set({ notifications: { ...settings.get().notifications, [kind]: on } });
          refreshTray();
        },
      },
      {
        launchAtLogin: settings.get().launchAtLogin,
        ...(loginRefused ? { launchAtLoginRefused: loginRefused } : {}),
        closeToTray: closeHides(),
        notifications: settings.get().notifications,
      },
    );
    menu = template;
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
  if (parts.testHooks) {
    const services = (): ServiceView[] =>
      supervisor
        .status()
        .map(({ name, state, port, pid }) => ({ name, state, port, ...(pid !== undefined ? { pid } : {}) }));
    supervisor.on('status', () =>
      report({ event: 'services', services: services(), tooltip: trayTooltip(supervisor.status()) }),
    );
    parts.testHooks({
      trayMenu: () => menu.map(viewOf),
      clickTrayItem: (id) => clickItem(menu, id),
      window: windowView,
      closeWindow: () => {
        if (!window || window.isDestroyed()) return false;
        window.close();
        return true;
      },
      services,
      onEvent: (listener) => void hookListeners.push(listener),
    });
  }

  // A hidden start leaves only the tray, so it stays hidden only where closing would hide to the tray too.
  if (!parts.hidden || !closeHides()) openConsole();
  if (settings.get().startServicesOnLaunch) void supervisor.startAll();
  return {
    openConsole,
    quit,
    get hasTray() {
      return tray !== undefined;
    },
  };
}

function viewOf(item: TrayItem): TrayItemView {
  const submenu = Array.isArray(item.submenu) ? item.submenu.map(viewOf) : undefined;
  return {
    ...(item.id !== undefined ? { id: item.id } : {}),
    ...(item.label !== undefined ? { label: item.label } : {}),
    ...(item.type !== undefined ? { type: item.type } : {}),
    enabled: item.enabled !== false,
    ...(item.checked !== undefined ? { checked: item.checked } : {}),
    ...(submenu ? { submenu } : {}),
  };
}

function clickItem(items: TrayItem[], id: string): boolean {
  for (const item of items) {
    if (item.id === id) {
      if (item.enabled === false || !item.click) return false;
      const checked = item.type === 'checkbox' ? !item.checked : Boolean(item.checked);
      item.click({ checked });
      return true;
    }
    if (Array.isArray(item.submenu) && clickItem(item.submenu, id)) return true;
  }
  return false;
}
