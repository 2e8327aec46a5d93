/**
 * What test/electron-app.test.ts drives the real app through, only when HUB_SERVICES_TEST_HOOKS=1: one
 * JSON line per command on the main process's standard input, one JSON line per answer or event on its
 * standard output. The tray's menu is reachable by no automation on every desktop, and Playwright cannot
 * attach to the installed app's main process (the EnableNodeCliInspectArguments fuse turns its
 * inspector off), so this is how a test reaches what a person reaches: the tray menu (read it, click an
 * item), the window's state and its close button, the services' states. Nothing here runs code it is
 * sent, and nothing is reachable from a page or over IPC.
 */
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { ServiceName, ServiceState } from '../supervisor/types.ts';

export const TEST_HOOKS_VARIABLE = 'HUB_SERVICES_TEST_HOOKS';

/** A tray menu item as the test sees it: what a person would see, without the click function. */
export interface TrayItemView {
  id?: string;
  label?: string;
  type?: string;
  enabled: boolean;
  checked?: boolean;
  submenu?: TrayItemView[];
}

/** The console window as the test sees it. */
export interface WindowView {
  visible: boolean;
  focused: boolean;
  url: string;
  /** The options the page really runs with (Electron's getLastWebPreferences). */
  webPreferences: { contextIsolation?: boolean; sandbox?: boolean; nodeIntegration?: boolean; webSecurity?: boolean };
}

export interface ServiceView {
  name: ServiceName;
  state: ServiceState;
  port: number;
  pid?: number;
}

export interface DesktopTestHooks {
  trayMenu(): TrayItemView[];
  /** Clicks an enabled item as Electron would (a checkbox flips first); false when there is none. */
  clickTrayItem(id: string): boolean;
  /** The console window, undefined when none is open. */
  window(): WindowView | undefined;
  /** Like a click on the window's close button (which hides or quits, as the setting says). */
  closeWindow(): boolean;
  services(): ServiceView[];
  /** Called with each event the app reports (services changed, the window shown or hidden, a second launch). */
  onEvent(listener: (event: TestHookEvent) => void): void;
}

export type TestHookEvent =
  | { event: 'services'; services: ServiceView[]; tooltip: string }
  | { event: 'window'; window: WindowView | undefined }
  | { event: 'second-instance'; window: WindowView | undefined };

type Command = { id?: unknown; command?: unknown; item?: unknown };

/** Answers commands read from `input` on `output`, and writes every event there too. */
export function serveTestHooks(hooks: DesktopTestHooks, input: Readable, output: Writable): void {
  const write = (message: object) => output.write(`${JSON.stringify(message)}\n`);
  hooks.onEvent((event) => write(event));
  createInterface({ input }).on('line', (line) => {
    let request: Command;
    try {
      request = JSON.parse(line) as Command;
    } catch {
      write({ error: 'a command is one JSON object per line' });
      return;
    }
    const id = typeof request.id === 'number' ? request.id : undefined;
    switch (request.command) {
      case 'menu':
        return void write({ id, menu: hooks.trayMenu() });
      case 'click':
        return void write({ id, clicked: typeof request.item === 'string' && hooks.clickTrayItem(request.item) });
      case 'window':
        return void write({ id, window: hooks.window() ?? null });
      case 'close-window':
        return void write({ id, closed: hooks.closeWindow() });
      case 'services':
        return void write({ id, services: hooks.services() });
      default:
        write({ id, error: 'commands: menu, click (with item), window, close-window, services' });
    }
  });
  write({ event: 'hooks-ready' });
}
