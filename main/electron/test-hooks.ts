/**
 * What test/electron-app.test.ts drives the real app through, only when HUB_SERVICES_TEST_HOOKS names
 * the test's loopback listener (`127.0.0.1:<port>`): the main process connects to it and reads one JSON
 * line per command, writing one JSON line per answer or event. A socket, not stdin and stdout: Electron on
 * Windows is a GUI program whose standard input a pipe does not reliably reach, and a TCP connection on
 * loopback works the same on all three systems. The app connects out, so it listens on no port. The
 * tray's menu is reachable by no automation on every desktop, and Playwright cannot attach to the
 * installed app's main process (the EnableNodeCliInspectArguments fuse turns its inspector off), so this
 * is how a test reaches what a person reaches: the tray menu (read it, click an item), the window's state
 * and its close button, the services' states. Nothing here runs code it is sent, and nothing is reachable
 * from a page or over IPC.
 */
import { connect } from 'node:net';
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
  const lines = createInterface({ input });
  // readline repeats its input's errors; a lost connection is reported where it was made (connectTestHooks).
  lines.on('error', () => undefined);
  lines.on('line', (line) => {
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

/** The test's listener from HUB_SERVICES_TEST_HOOKS, or why the value cannot be one (it must be a loopback address and port). */
export function testHooksAddress(value: string): { host: string; port: number } | { error: string } {
  const match = /^(127\.0\.0\.1|\[::1\]|localhost):(\d{1,5})$/.exec(value);
  const port = match ? Number(match[2]) : 0;
  if (!match || port < 1 || port > 65535) {
    return {
      error: `${TEST_HOOKS_VARIABLE} must be the test's loopback listener as 127.0.0.1:<port>; the test hooks are off.`,
    };
  }
  return { host: match[1] === '[::1]' ? '::1' : match[1]!, port };
}

/**
 * Connects to the test's listener and serves the hooks over that connection. Events reported before the
 * connection is made are queued by the socket, not lost. A listener that cannot be reached is reported
 * on stderr in one line; the app runs on without hooks.
 */
export function connectTestHooks(
  hooks: DesktopTestHooks,
  value: string,
  report: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): void {
  const address = testHooksAddress(value);
  if ('error' in address) return report(address.error);
  const socket = connect(address.port, address.host);
  socket.setNoDelay(true);
  socket.on('error', (err: NodeJS.ErrnoException) =>
    report(`The test hooks' connection to ${value} failed (${err.code ?? 'error'}); the app runs on without them.`),
  );
  serveTestHooks(hooks, socket, socket);
}
