/**
 * The desktop app users get, driven as a person would: the packaged app where one was built (`npm run
 * dist`; `.github/workflows/desktop.yml` builds it on Linux, macOS and Windows and runs this file
 * against it), else the development app (Electron on the project folder, after `npm run build`).
 *
 * The tray menu, the window's state and its close button are reached through the app's test hooks
 * (main/electron/test-hooks.ts): the test listens on loopback and names the address in
 * HUB_SERVICES_TEST_HOOKS; the main process connects to it and they exchange JSON lines, the same on
 * Linux, macOS and Windows (whose GUI programs do not reliably read a piped stdin). The console page is
 * reached through Chromium's DevTools protocol (--remote-debugging-port), because the installed app's
 * EnableNodeCliInspectArguments fuse keeps Playwright's _electron (which attaches to the main process's
 * inspector) out. On macOS the app runs with --use-mock-keychain: the cookie-encryption fuse makes
 * Chromium ask the keychain for its key, and a test's temporary HOME has no keychain to answer without
 * a prompt. Where neither a packaged app nor Electron's binary is here (it is downloaded
 * on first use, which needs the network), or there is no display, the test is skipped with the reason.
 *
 * HUB_SERVICES_APP names the packaged app's executable; `HUB_SERVICES_APP=development` tests the
 * development app even where a packaged one exists.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { electronBinary, whyNoDesktop } from '../main/electron/binary.ts';
import type { ServiceView, TrayItemView, WindowView } from '../main/electron/test-hooks.ts';
import { SERVICE_NAMES } from '../main/supervisor/types.ts';
import { startGitHubDouble, type GitHubDouble } from './github-double/double.ts';
import { stackEnv } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { processExists, ROOT } from './support/process.ts';

interface AppUnderTest {
  kind: 'packaged' | 'development';
  executable: string;
  /** Arguments before ours: the app folder for the development app. */
  args: string[];
}

/** The packaged app's executable where electron-builder leaves it (release/, electron-builder.yml's output). */
function packagedExecutable(): string | undefined {
  const release = join(ROOT, 'release');
  if (!existsSync(release)) return undefined;
  if (process.platform === 'linux') return join(release, 'linux-unpacked', 'hub-services');
  if (process.platform === 'win32') return join(release, 'win-unpacked', 'Hub services.exe');
  if (process.platform === 'darwin') {
    const folder = readdirSync(release).find(
      (name) => /^mac/.test(name) && existsSync(join(release, name, 'Hub services.app')),
    );
    return folder ? join(release, folder, 'Hub services.app', 'Contents', 'MacOS', 'Hub services') : undefined;
  }
  return undefined;
}

function appUnderTest(): AppUnderTest | { skipped: string } {
  const named = process.env.HUB_SERVICES_APP;
  const display = process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY;
  if (named && named !== 'development') {
    // Named on purpose (CI): a missing app is a failure, not a skip.
    if (!existsSync(named))
      throw new Error(`HUB_SERVICES_APP names ${named}, which does not exist; run \`npm run dist\` first.`);
    if (display)
      return { skipped: 'there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set); run under Xvfb (xvfb-run)' };
    return { kind: 'packaged', executable: named, args: [] };
  }
  const packaged = named === 'development' ? undefined : packagedExecutable();
  if (packaged && existsSync(packaged)) {
    if (display)
      return { skipped: 'there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set); run under Xvfb (xvfb-run)' };
    return { kind: 'packaged', executable: packaged, args: [] };
  }
  const reason = whyNoDesktop();
  if (reason) return { skipped: `no packaged app in release/ and ${reason}` };
  return { kind: 'development', executable: electronBinary()!, args: [ROOT] };
}

const target = appUnderTest();
const skipped = 'skipped' in target ? target.skipped : undefined;
if (skipped) process.stdout.write(`[electron-app.test] skipped: ${skipped}.\n`);
else
  process.stdout.write(
    `[electron-app.test] testing the ${(target as AppUnderTest).kind} app: ${(target as AppUnderTest).executable}\n`,
  );

/** The stand-in CLI is a POSIX shell script: on Windows the provider runs without a CLI and stays live, not ready. */
const providerCanBeReady = process.platform !== 'win32';
if (!providerCanBeReady)
  process.stdout.write(
    '[electron-app.test] the model provider is expected live, not ready: the stand-in CLI is a shell script, which Windows cannot run.\n',
  );

type Line = Record<string, unknown>;

/**
 * The loopback listener the app's test hooks connect to (HUB_SERVICES_TEST_HOOKS): the app connects out,
 * so it listens on no port of its own. Every connection is kept, so a test can see who connected.
 */
class HooksListener {
  readonly connections: Socket[] = [];
  private readonly server: Server;
  private readonly waiters: Array<(socket: Socket) => void> = [];

  private constructor(server: Server) {
    this.server = server;
    server.on('connection', (socket) => {
      this.connections.push(socket);
      for (const waiter of this.waiters.splice(0)) waiter(socket);
    });
  }

  static async open(): Promise<HooksListener> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new HooksListener(server);
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** The next connection (or the first, when one is already here and not yet taken). */
  nextConnection(taken: number): Promise<Socket> {
    const waiting = this.connections[taken];
    return waiting ? Promise.resolve(waiting) : new Promise((resolve) => this.waiters.push(resolve));
  }

  close(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** One running app: its hooks' lines (over the listener's connection), commands, and the DevTools endpoint Chromium printed. */
class RunningApp {
  readonly lines: Line[] = [];
  private readonly waiters: Array<() => void> = [];
  private stderr = '';
  private nextId = 1;
  private hooks?: Socket;
  exited?: { code: number | null; signal: string | null };

  constructor(
    readonly child: ChildProcess,
    hooks?: Promise<Socket>,
  ) {
    void hooks?.then((socket) => {
      this.hooks = socket;
      let buffered = '';
      socket.on('data', (d: Buffer) => {
        buffered += d.toString();
        let newline;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line.startsWith('{')) this.lines.push(JSON.parse(line) as Line);
        }
        this.wake();
      });
      this.wake();
    });
    // What the app prints goes with its errors (both are shown when it exits too early).
    child.stdout!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
      this.wake();
    });
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
      this.wake();
    });
    child.once('exit', (code, signal) => {
      this.exited = { code, signal };
      this.wake();
    });
  }

  private wake(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves with the first value `find` returns, looking again at every line the app writes; fails if the app exits first. */
  async until<T>(find: () => T | undefined, what: string): Promise<T> {
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (this.exited)
        throw new Error(
          `the app exited (${this.exited.code ?? this.exited.signal}) before ${what}.\nstderr:\n${this.stderr.slice(-4000)}`,
        );
      await new Promise<void>((wake) => this.waiters.push(wake));
    }
  }

  /** The first line after `from` (an index into lines) that matches. */
  event(match: (line: Line) => boolean, what: string, from = 0): Promise<Line> {
    return this.until(() => this.lines.slice(from).find(match), what);
  }

  async command(command: string, more: Line = {}): Promise<Line> {
    const id = this.nextId++;
    const hooks = await this.until(() => this.hooks, 'its test hooks connected');
    hooks.write(`${JSON.stringify({ id, command, ...more })}\n`);
    return this.event((l) => l.id === id, `the answer to ${command}`);
  }

  devToolsEndpoint(): Promise<string> {
    return this.until(
      () => /DevTools listening on (ws:\/\/\S+)/.exec(this.stderr)?.[1],
      'Chromium printed its DevTools endpoint',
    );
  }

  exit(): Promise<{ code: number | null; signal: string | null }> {
    return this.until(() => this.exited, 'it exited');
  }
}

/** Whether something accepts a connection on the port (a refused connection is the event that says no). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Every service ready (the provider live where its stand-in CLI cannot run). */
function allUp(services: ServiceView[]): boolean {
  return (
    services.length === SERVICE_NAMES.length &&
    services.every(
      (s) =>
        s.state === 'ready' ||
        (!providerCanBeReady &&
          s.name === 'model-provider' &&
          (s.state === 'live' || s.state === 'waiting' || s.state === 'degraded')),
    )
  );
}

describe('the desktop app in Electron (the packaged app where one was built, else the development app)', () => {
  let platform: GitHubDouble | undefined;
  let app: RunningApp | undefined;
  let browser: Browser | undefined;
  let hooks: HooksListener | undefined;
  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    if (app && !app.exited) app.child.kill('SIGKILL');
    await hooks?.close();
    await platform?.close();
  });

  it.skipIf(skipped !== undefined)(
    skipped
      ? `tray menu, console window, every service ready, quit stops them all, a second launch focuses the first (skipped: ${skipped})`
      : 'tray menu, console window, every service ready, quit stops them all, a second launch focuses the first',
    { timeout: 300_000 },
    async () => {
      const { executable, args } = target as AppUnderTest;
      const home = tempDir('electron-home-');
      const userData = join(home, 'user-data');
      mkdirSync(userData, { recursive: true });
      platform = await startGitHubDouble();
      hooks = await HooksListener.open();
      const services = await stackEnv(join(home, 'stack'), platform.url);
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...services,
        // Everything the app and its services keep goes under the temporary home, never the user's own.
        HOME: home,
        USERPROFILE: home,
        XDG_DATA_HOME: join(home, 'data'),
        XDG_CONFIG_HOME: join(home, 'config'),
        APPDATA: join(home, 'AppData', 'Roaming'),
        LOCALAPPDATA: join(home, 'AppData', 'Local'),
        HUB_SERVICES_TEST_HOOKS: hooks.address,
        // The development app runs its services with this Node (main/supervisor/service-runtime.ts).
        HUB_SERVICES_NODE: process.execPath,
      };
      // macOS: Chromium's mock keychain, not the temporary HOME's (which would prompt or fail).
      const launchArgs = [
        ...args,
        `--user-data-dir=${userData}`,
        ...(process.platform === 'darwin' ? ['--use-mock-keychain'] : []),
      ];
      app = new RunningApp(
        spawn(executable, [...launchArgs, '--remote-debugging-port=0'], { env, stdio: ['ignore', 'pipe', 'pipe'] }),
        hooks.nextConnection(0),
      );
      await app.event((l) => l.event === 'hooks-ready', 'its test hooks were ready');

      // The console window: the built console on its own origin, hardened.
      const shown = (
        await app.event(
          (l) => l.event === 'window' && (l.window as WindowView | undefined)?.visible === true,
          'the console window was shown',
        )
      ).window as WindowView;
      expect(shown.url).toBe('app://console/index.html');
      expect(shown.webPreferences).toEqual({
        contextIsolation: true,
        sandbox: true,
        nodeIntegration: false,
        webSecurity: true,
      });
      const { chromium } = await import('playwright-core');
      browser = await chromium.connectOverCDP(await app.devToolsEndpoint());
      const context = browser.contexts()[0]!;
      const page: Page =
        context.pages().find((p) => p.url().startsWith('app://console/')) ??
        (await context.waitForEvent('page', { predicate: (p) => p.url().startsWith('app://console/') }));
      await page.waitForLoadState('load');
      expect(await page.evaluate(() => typeof (globalThis as { require?: unknown }).require)).toBe('undefined');
      expect(
        await page.evaluate(() => Object.keys((window as unknown as { consoleBridge?: object }).consoleBridge ?? {})),
      ).toEqual(['call']);
      expect(
        await page.evaluate(() => {
          try {
            return String(eval('1'));
          } catch {
            return 'blocked';
          }
        }),
      ).toBe('blocked');
      const listed = (await page.evaluate(() =>
        (window as unknown as { consoleBridge: { call(r: unknown): Promise<unknown> } }).consoleBridge.call({
          method: 'services.list',
        }),
      )) as {
        ok: boolean;
        data: Array<{ name: string }>;
      };
      expect(listed.ok).toBe(true);
      expect(listed.data.map((s) => s.name)).toEqual([...SERVICE_NAMES]);

      // Every service reaches ready, in the process the app chose for it, and answers on its port.
      const upEvent = await app.event(
        (l) => l.event === 'services' && allUp(l.services as ServiceView[]),
        'every service was ready',
      );
      const up = upEvent.services as ServiceView[];
      if (providerCanBeReady)
        expect(upEvent.tooltip).toBe(`Hub services: ${SERVICE_NAMES.length} of ${SERVICE_NAMES.length} ready`);
      for (const [name, variable] of [
        ['identity', 'IDENTITY_PORT'],
        ['persona-store', 'PERSONA_PORT'],
        ['repohost-gateway', 'REPOHOST_PORT'],
      ] as const) {
        expect(up.find((s) => s.name === name)!.port).toBe(Number(services[variable]));
        expect((await fetch(`http://127.0.0.1:${services[variable]}/ready`)).status, `${name} /ready`).toBe(200);
      }
      await page.screenshot({ path: join(ROOT, 'test-artifacts', 'electron-app-console.png') }).catch(() => undefined);

      // The tray menu: each service with its state and port, then the app's own items.
      const menu = (await app.command('menu')).menu as TrayItemView[];
      expect(menu.map((i) => i.id).filter(Boolean)).toEqual(
        expect.arrayContaining([
          'open-console',
          ...SERVICE_NAMES.map((n) => `service:${n}`),
          'start-all',
          'stop-all',
          'close-to-tray',
          'launch-at-login',
          'quit',
        ]),
      );
      for (const name of SERVICE_NAMES) {
        const item = menu.find((i) => i.id === `service:${name}`)!;
        expect(item.submenu!.find((i) => i.id === `service:${name}:port`)!.label).toBe(
          `Port ${up.find((s) => s.name === name)!.port}`,
        );
      }
      expect(menu.find((i) => i.id === 'launch-at-login')!.checked).toBe(false);

      // Closing the window hides it to the tray once that is chosen; the tray's "Open console" brings it back.
      if (!menu.find((i) => i.id === 'close-to-tray')!.checked)
        expect((await app.command('click', { item: 'close-to-tray' })).clicked).toBe(true);
      let mark = app.lines.length;
      expect((await app.command('close-window')).closed).toBe(true);
      await app.event(
        (l) => l.event === 'window' && (l.window as WindowView).visible === false,
        'the window was hidden',
        mark,
      );
      mark = app.lines.length;
      expect((await app.command('click', { item: 'open-console' })).clicked).toBe(true);
      await app.event(
        (l) => l.event === 'window' && (l.window as WindowView).visible === true,
        'the tray brought the window back',
        mark,
      );

      // A second launch does not start a second app: it brings the first one's window back and exits.
      mark = app.lines.length;
      expect((await app.command('close-window')).closed).toBe(true);
      await app.event(
        (l) => l.event === 'window' && (l.window as WindowView).visible === false,
        'the window was hidden again',
        mark,
      );
      mark = app.lines.length;
      const second = new RunningApp(spawn(executable, launchArgs, { env, stdio: ['ignore', 'pipe', 'pipe'] }));
      const focused = await app.event(
        (l) => l.event === 'second-instance',
        'the first app heard of the second launch',
        mark,
      );
      expect((focused.window as WindowView).visible).toBe(true);
      expect((await second.exit()).code).toBe(0);
      // The second launch never got as far as its hooks: only the first app ever connected.
      expect(hooks.connections).toHaveLength(1);

      // Quit from the tray stops every service before the app exits.
      const pids = up.map((s) => s.pid).filter((pid): pid is number => pid !== undefined);
      expect(pids).toHaveLength(SERVICE_NAMES.length);
      await browser.close().catch(() => undefined);
      browser = undefined;
      expect((await app.command('click', { item: 'quit' })).clicked).toBe(true);
      expect((await app.exit()).code).toBe(0);
      for (const service of up) expect(await answers(service.port), `${service.name} after quitting`).toBe(false);
      expect(pids.filter((pid) => processExists(pid))).toEqual([]);
    },
  );
});
