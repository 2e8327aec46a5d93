/**
 * The tray menu as data: a pure function of the services' statuses and the app's options (Podman
 * Desktop's pattern), applied by a thin wrapper in desktop.ts. Types only from Electron, so it loads in
 * plain Node.
 */
import type { MenuItemConstructorOptions } from 'electron';
import type { ServiceStatus } from '../../common/contract.ts';
import { SERVICE_TITLES, type ServiceName } from '../../common/services.ts';
import { headline, serviceNeed } from '../../common/needs.ts';
import { NOTICE_LABELS, type NoticeKind } from './notifications.ts';
import {
  aggregateState as aggregateOf,
  STATE_WORDS,
  type AggregateState,
  type ServiceState,
} from '../../common/states.ts';

export type { AggregateState } from '../../common/states.ts';

export interface TrayActions {
  start(name: ServiceName): void;
  stop(name: ServiceName): void;
  restart(name: ServiceName): void;
  startAll(): void;
  stopAll(): void;
  openConsole(): void;
  quit(): void;
  setLaunchAtLogin(on: boolean): void;
  setCloseToTray(on: boolean): void;
  setNotification(kind: NoticeKind, on: boolean): void;
}

/** The app's own options shown in the menu, as they stand. */
export interface TrayOptions {
  launchAtLogin: boolean;
  /** Why launch at login cannot be turned on here (a development run on macOS), if it cannot. */
  launchAtLoginRefused?: string;
  /** Closing the window keeps the app running in the tray (else it quits). */
  closeToTray: boolean;
  /** Which native notifications are on (all, unless turned off here). */
  notifications?: Record<NoticeKind, boolean>;
}

/**
 * One item of the tray menu: Electron's options, with a click that reads only whether the item is checked,
 * so that the test hooks click an item as Electron would (desktop.ts) without making a MenuItem.
 */
export type TrayItem = Omit<MenuItemConstructorOptions, 'click' | 'submenu'> & {
  click?: (item: { checked: boolean }) => void;
  submenu?: TrayItem[];
};

// Not RUNNING_STATES: here a service backing off can be started at once, and one stopping cannot.
const RUNNING: ServiceState[] = ['starting', 'live', 'waiting', 'ready', 'degraded', 'stopping'];

/** One state for the tray icon, the worst news first: the rule the console's overview shows too. */
export function aggregateState(statuses: readonly ServiceStatus[]): AggregateState {
  return aggregateOf(statuses.map((s) => s.state));
}

/** The tray's tooltip: the overview's headline (what the services wait for, when they do) and how many are ready. */
export function trayTooltip(statuses: readonly ServiceStatus[]): string {
  const ready = statuses.filter((s) => s.state === 'ready').length;
  const needs = statuses.flatMap((s) => serviceNeed(s) ?? []);
  const { text } = headline(statuses, needs);
  return `Hub services: ${text} (${ready} of ${statuses.length} ready)`;
}

export function trayTemplate(
  statuses: readonly ServiceStatus[],
  actions: TrayActions,
  options: TrayOptions,
): TrayItem[] {
  const services: TrayItem[] = statuses.map((s) => {
    const running = RUNNING.includes(s.state);
    const need = serviceNeed(s);
    return {
      id: `service:${s.name}`,
      label: `${SERVICE_TITLES[s.name]}: ${STATE_WORDS[s.state]}`,
      ...(s.lastError && s.state !== 'ready' ? { toolTip: s.lastError } : {}),
      submenu: [
        { id: `service:${s.name}:port`, label: `Port ${s.port}`, enabled: false },
        ...(need
          ? [
              {
                id: `service:${s.name}:need`,
                label: `${need.action}…`,
                toolTip: need.text,
                click: () => actions.openConsole(),
              },
            ]
          : s.lastError && s.state !== 'ready'
            ? [{ id: `service:${s.name}:error`, label: shorten(s.lastError), enabled: false }]
            : []),
        { type: 'separator' as const },
        { id: `service:${s.name}:start`, label: 'Start', enabled: !running, click: () => actions.start(s.name) },
        {
          id: `service:${s.name}:stop`,
          label: 'Stop',
          enabled: running && s.state !== 'stopping',
          click: () => actions.stop(s.name),
        },
        {
          id: `service:${s.name}:restart`,
          label: 'Restart',
          enabled: s.state !== 'stopping',
          click: () => actions.restart(s.name),
        },
      ],
    };
  });
  const anyStopped = statuses.some((s) => !RUNNING.includes(s.state));
  const anyRunning = statuses.some((s) => RUNNING.includes(s.state));
  return [
    { id: 'open-console', label: 'Open console', click: () => actions.openConsole() },
    { type: 'separator' },
    ...services,
    { type: 'separator' },
    { id: 'start-all', label: 'Start all', enabled: anyStopped, click: () => actions.startAll() },
    { id: 'stop-all', label: 'Stop all', enabled: anyRunning, click: () => actions.stopAll() },
    { type: 'separator' },
    {
      id: 'close-to-tray',
      label: 'Keep running in the tray when the window closes',
      type: 'checkbox',
      checked: options.closeToTray,
      click: (item) => actions.setCloseToTray(item.checked),
    },
    {
      id: 'notifications',
      label: 'Notifications',
      submenu: (Object.keys(NOTICE_LABELS) as NoticeKind[]).map((kind) => ({
        id: `notify:${kind}`,
        label: NOTICE_LABELS[kind],
        type: 'checkbox' as const,
        checked: options.notifications?.[kind] ?? true,
        click: (item: { checked: boolean }) => actions.setNotification(kind, item.checked),
      })),
    },
    options.launchAtLoginRefused
      ? {
          id: 'launch-at-login',
          label: 'Launch at login (only the installed app)',
          type: 'checkbox',
          checked: false,
          enabled: false,
          toolTip: options.launchAtLoginRefused,
        }
      : {
          id: 'launch-at-login',
          label: 'Launch at login',
          type: 'checkbox',
          checked: options.launchAtLogin,
          click: (item) => actions.setLaunchAtLogin(item.checked),
        },
    { type: 'separator' },
    { id: 'quit', label: 'Quit (stops every service)', click: () => actions.quit() },
  ];
}

function shorten(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
