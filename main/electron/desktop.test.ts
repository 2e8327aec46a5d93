/**
 * The Electron glue with `electron` mocked (its binary cannot be loaded from plain Node): window options
 * against the security checklist, the tray menu as data, IPC sender and payload checks, navigation,
 * new windows and permissions refused, and the app lifecycle driven through fake Electron objects.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { MenuItemConstructorOptions } from 'electron';
import { createConsoleApi } from '../console/api.ts';
import { ServiceSupervisor } from '../supervisor/supervisor.ts';
import type { ServiceStatus } from '../supervisor/types.ts';
import { tempDir } from '../../test/support/identity.ts';
import { CONSOLE_CHANNEL, handleConsoleCall } from './ipc.ts';
import { PRELOAD } from './desktop.ts';
import { serveTestHooks, type DesktopTestHooks, type TrayItemView } from './test-hooks.ts';
import { loadRendererFiles, rendererResponse } from './renderer-protocol.ts';
import {
  APP_ORIGIN,
  CONSOLE_URL,
  consoleWindowOptions,
  hardenSession,
  hardenWebContents,
  isConsoleUrl,
} from './security.ts';
import { DEFAULT_SETTINGS, type Settings, type SettingsStore } from './settings-schema.ts';
import { aggregateState, trayTemplate, trayTooltip, type TrayActions, type TrayOptions } from './tray-menu.ts';
import { signalNotices, statusNotice, wanted } from './notifications.ts';

/** Fake Electron: plain objects and event emitters that record what the shell does with them. */
const fake = vi.hoisted(() => {
  const { EventEmitter: Emitter } = process.getBuiltinModule('node:events') as typeof import('node:events');
  const state = {
    lock: true,
    windows: [] as Array<InstanceType<typeof FakeWindow>>,
    trays: [] as Array<InstanceType<typeof FakeTray>>,
    handlers: new Map<string, (...args: unknown[]) => unknown>(),
    exited: [] as number[],
    quits: 0,
    schemes: [] as unknown[],
    sandbox: 0,
    loginItems: [] as unknown[],
    protocolHandlers: new Map<string, (request: { url: string }) => Response>(),
    permissionHandler: undefined as undefined | ((...a: unknown[]) => void),
    notifications: [] as Array<{ title: string; body: string; clicked: () => void }>,
  };
  class FakeNotification extends Emitter {
    static isSupported() {
      return true;
    }
    constructor(readonly options: { title: string; body: string }) {
      super();
    }
    show() {
      state.notifications.push({ ...this.options, clicked: () => this.emit('click') });
    }
  }
  class FakeContents extends Emitter {
    url = '';
    openHandler?: (details: { url: string }) => { action: string };
    getURL() {
      return this.url;
    }
    getLastWebPreferences() {
      return { contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true };
    }
    setWindowOpenHandler(h: (details: { url: string }) => { action: string }) {
      this.openHandler = h;
    }
  }
  class FakeWindow extends Emitter {
    webContents = new FakeContents();
    loaded?: string;
    visible = false;
    destroyed = false;
    constructor(readonly options: unknown) {
      super();
      state.windows.push(this);
    }
    loadURL(url: string) {
      this.loaded = url;
      this.webContents.url = url;
      return Promise.resolve();
    }
    isVisible() {
      return this.visible;
    }
    isFocused() {
      return false;
    }
    show() {
      this.visible = true;
    }
    hide() {
      this.visible = false;
    }
    focus() {}
    restore() {}
    isMinimized() {
      return false;
    }
    isDestroyed() {
      return this.destroyed;
    }
    /** Like a click on the window's close button: listeners may prevent it. */
    close() {
      let prevented = false;
      this.emit('close', { preventDefault: () => (prevented = true) });
      if (!prevented) this.destroyed = true;
      return !prevented;
    }
  }
  class FakeTray {
    menu?: { template: MenuItemConstructorOptions[] };
    image?: string;
    tooltip?: string;
    constructor(image: { path: string }) {
      this.image = image.path;
      state.trays.push(this);
    }
    setContextMenu(menu: { template: MenuItemConstructorOptions[] }) {
      this.menu = menu;
    }
    setImage(image: { path: string }) {
      this.image = image.path;
    }
    setToolTip(text: string) {
      this.tooltip = text;
    }
  }
  const app = Object.assign(new Emitter(), {
    requestSingleInstanceLock: () => state.lock,
    quit: () => void state.quits++,
    exit: (code: number) => void state.exited.push(code),
    enableSandbox: () => void state.sandbox++,
    whenReady: () => Promise.resolve(),
    setLoginItemSettings: (s: unknown) => void state.loginItems.push(s),
    getAppMetrics: () => [],
    getAppPath: () => '/work/hub-services',
    isPackaged: false,
  });
  return { state, FakeWindow, FakeTray, FakeContents, FakeNotification, app };
});

vi.mock('electron', () => ({
  app: fake.app,
  BrowserWindow: fake.FakeWindow,
  Tray: fake.FakeTray,
  Notification: fake.FakeNotification,
  Menu: { buildFromTemplate: (template: MenuItemConstructorOptions[]) => ({ template }) },
  nativeImage: { createFromPath: (path: string) => ({ path }) },
  ipcMain: { handle: (channel: string, h: (...args: unknown[]) => unknown) => fake.state.handlers.set(channel, h) },
  protocol: {
    registerSchemesAsPrivileged: (schemes: unknown[]) => fake.state.schemes.push(...schemes),
    handle: (scheme: string, h: (request: { url: string }) => Response) => fake.state.protocolHandlers.set(scheme, h),
  },
  session: {
    defaultSession: {
      setPermissionRequestHandler: (h: (...a: unknown[]) => void) => (fake.state.permissionHandler = h),
      setPermissionCheckHandler: () => undefined,
    },
  },
}));

function status(
  name: ServiceStatus['name'],
  state: ServiceStatus['state'],
  extra: Partial<ServiceStatus> = {},
): ServiceStatus {
  return { name, state, port: 8000, url: 'http://127.0.0.1:8000', restarts: 0, ...extra };
}

function memorySettings(initial: Partial<Settings> = {}): SettingsStore {
  let current: Settings = { ...DEFAULT_SETTINGS, ...initial };
  return {
    get: () => current,
    set: (patch) => (current = { ...current, ...patch }),
  };
}

const supervisors: ServiceSupervisor[] = [];
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
});

describe('the console window follows the security checklist', () => {
  it('isolates, sandboxes and gives the page no Node', () => {
    const options = consoleWindowOptions('/app/preload.cjs', '/app/icon.png');
    expect(options.show).toBe(false);
    expect(options.webPreferences).toEqual({
      preload: '/app/preload.cjs',
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      experimentalFeatures: false,
      webviewTag: false,
      navigateOnDragDrop: false,
      spellcheck: false,
    });
    expect(options.webPreferences).not.toHaveProperty('enableBlinkFeatures');
  });

  it('the preload exposes one narrow function and nothing of Node or ipcRenderer, in source and as built', () => {
    const preload = readFileSync(join(import.meta.dirname, 'preload.ts'), 'utf8');
    expect(preload.match(/exposeInMainWorld\(/g)).toHaveLength(1);
    expect(preload).toContain(
      "exposeInMainWorld('consoleBridge', {\n  call: (request: unknown) => ipcRenderer.invoke('console:call', request),\n});",
    );
    expect(preload.match(/from '([^']+)'/g)).toEqual(["from 'electron'"]);
    // The built file is what the window loads: CommonJS (a sandboxed preload cannot be a module) that requires electron only.
    const built = readFileSync(PRELOAD, 'utf8');
    expect(built.match(/require\("([^"]+)"\)/g)).toEqual(['require("electron")']);
    expect(built).not.toMatch(/^\s*(import|export)\s/m);
  });

  it('the console is served with a strict CSP from its own origin, and nothing else is', async () => {
    const files = new Map([
      ['index.html', { contentType: 'text/html; charset=utf-8', body: Buffer.from('<p>hi</p>') }],
    ]);
    const page = rendererResponse(files, `${APP_ORIGIN}/index.html`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(rendererResponse(files, `${APP_ORIGIN}/../../etc/passwd`).status).toBe(404);
    expect(rendererResponse(files, 'app://elsewhere/index.html').status).toBe(404);
  });

  it('a path that names an object\u2019s own property, or climbs out, is a 404 like any missing file', () => {
    const files = loadRendererFiles();
    expect(rendererResponse(files, `${APP_ORIGIN}/app.js`).status).toBe(200);
    for (const path of [
      '/constructor',
      '/__proto__',
      '/hasOwnProperty',
      '/toString',
      '/valueOf',
      '/prototype',
      '/__defineGetter__',
      '/%2e%2e/package.json',
      '/%2E%2E/%2e%2e/etc/passwd',
      '/..%2fpackage.json',
      '/%E0%A4%A',
      '/index.html/..',
    ]) {
      expect(rendererResponse(files, `${APP_ORIGIN}${path}`).status, path).toBe(path === '/index.html/..' ? 200 : 404);
    }
    expect(rendererResponse(files, 'not a url').status).toBe(404);
  });
});

describe('navigation, new windows, webviews and permissions are refused', () => {
  it('navigation leaves the console origin never; same-origin anchors are fine', () => {
    const contents = new fake.FakeContents();
    hardenWebContents(contents as unknown as Electron.WebContents);
    const navigate = (url: string) => {
      const preventDefault = vi.fn();
      contents.emit('will-navigate', { preventDefault }, url);
      return preventDefault.mock.calls.length > 0;
    };
    expect(navigate('https://evil.example/')).toBe(true);
    expect(navigate('file:///etc/passwd')).toBe(true);
    expect(navigate('app://console.evil.example/index.html')).toBe(true);
    expect(navigate('javascript:alert(1)')).toBe(true);
    expect(navigate(`${CONSOLE_URL}#/personas`)).toBe(false);
    const redirected = vi.fn();
    contents.emit('will-redirect', { preventDefault: redirected }, 'https://evil.example/');
    expect(redirected).toHaveBeenCalled();
    expect(contents.openHandler!({ url: 'https://github.com/' })).toEqual({ action: 'deny' });
    expect(contents.openHandler!({ url: CONSOLE_URL })).toEqual({ action: 'deny' });
    const webview = vi.fn();
    contents.emit('will-attach-webview', { preventDefault: webview });
    expect(webview).toHaveBeenCalled();
  });

  it('every permission request and check answers no, but the console\u2019s own clipboard writes', () => {
    let request:
      | ((wc: unknown, permission: string, cb: (ok: boolean) => void, details?: { requestingUrl?: string }) => void)
      | undefined;
    let check: ((wc: unknown, permission: string, origin: string) => boolean) | undefined;
    hardenSession({
      setPermissionRequestHandler: (h: typeof request) => (request = h),
      setPermissionCheckHandler: (h: typeof check) => (check = h),
    } as unknown as Electron.Session);
    for (const permission of ['media', 'geolocation', 'notifications', 'clipboard-read', 'openExternal']) {
      const cb = vi.fn();
      request!({}, permission, cb, { requestingUrl: CONSOLE_URL });
      expect(cb).toHaveBeenCalledWith(false);
      expect(check!({}, permission, CONSOLE_URL)).toBe(false);
    }
    const allowed = vi.fn();
    request!({}, 'clipboard-sanitized-write', allowed, { requestingUrl: CONSOLE_URL });
    expect(allowed).toHaveBeenCalledWith(true);
    expect(check!({}, 'clipboard-sanitized-write', CONSOLE_URL)).toBe(true);
    // From anywhere else, or without saying where from, it is refused too.
    for (const where of [{ requestingUrl: 'https://evil.example/' }, {}, undefined]) {
      const cb = vi.fn();
      request!({}, 'clipboard-sanitized-write', cb, where);
      expect(cb).toHaveBeenCalledWith(false);
    }
    expect(check!({}, 'clipboard-sanitized-write', 'app://consolex')).toBe(false);
  });

  it('isConsoleUrl compares parsed origins, not prefixes', () => {
    expect(isConsoleUrl(CONSOLE_URL)).toBe(true);
    expect(isConsoleUrl('app://console:8080/index.html')).toBe(false);
    expect(isConsoleUrl('app://consolex/index.html')).toBe(false);
    expect(isConsoleUrl('app://console@evil/index.html')).toBe(false);
    expect(isConsoleUrl('not a url')).toBe(false);
    expect(isConsoleUrl(undefined)).toBe(false);
  });
});

describe('the tray menu is built from the services\u2019 state', () => {
  const actions = (): TrayActions & Record<string, ReturnType<typeof vi.fn>> =>
    ({
      start: vi.fn(),
      stop: vi.fn(),
      restart: vi.fn(),
      startAll: vi.fn(),
      stopAll: vi.fn(),
      openConsole: vi.fn(),
      quit: vi.fn(),
      setLaunchAtLogin: vi.fn(),
      setCloseToTray: vi.fn(),
    }) as never;
  const options: TrayOptions = { launchAtLogin: false, closeToTray: true };

  it('shows each service with its state, and start/stop enabled by state', () => {
    const a = actions();
    const template = trayTemplate(
      [
        status('identity', 'ready'),
        status('persona-store', 'gave-up', { lastError: 'Port 8004 on 127.0.0.1 is already in use.' }),
        status('model-provider', 'live'),
      ],
      a,
      options,
    );
    expect(template.map((i) => i.label ?? i.type)).toEqual([
      'Open console',
      'separator',
      'Identity: ready',
      'Persona store: gave up',
      'Chat-model provider: up, not ready yet',
      'separator',
      'Start all',
      'Stop all',
      'separator',
      'Keep running in the tray when the window closes',
      'Notifications',
      'Launch at login',
      'separator',
      'Quit (stops every service)',
    ]);
    const persona = template.find((i) => i.id === 'service:persona-store')!.submenu!;
    expect(persona.map((i) => [i.label ?? i.type, i.enabled ?? true])).toEqual([
      ['Port 8000', false],
      ['Port 8004 on 127.0.0.1 is already in use.', false],
      ['separator', true],
      ['Start', true],
      ['Stop', false],
      ['Restart', true],
    ]);
    const identity = template.find((i) => i.id === 'service:identity')!.submenu!;
    expect(identity.find((i) => i.label === 'Start')!.enabled).toBe(false);
    identity.find((i) => i.label === 'Stop')!.click!({ checked: false });
    expect(a.stop).toHaveBeenCalledWith('identity');
    template.find((i) => i.id === 'quit')!.click!({ checked: false });
    expect(a.quit).toHaveBeenCalled();
  });

  it('the app\u2019s options are checkboxes showing where they stand; a click passes the new value on', () => {
    const a = actions();
    const template = trayTemplate([status('identity', 'ready')], a, { launchAtLogin: true, closeToTray: false });
    const close = template.find((i) => i.id === 'close-to-tray')!;
    const login = template.find((i) => i.id === 'launch-at-login')!;
    expect([close.type, close.checked, login.type, login.checked]).toEqual(['checkbox', false, 'checkbox', true]);
    close.click!({ checked: true });
    expect(a.setCloseToTray).toHaveBeenCalledWith(true);
    login.click!({ checked: false });
    expect(a.setLaunchAtLogin).toHaveBeenCalledWith(false);
  });

  it('launch at login that cannot work here is shown disabled, with the reason', () => {
    const template = trayTemplate([status('identity', 'ready')], actions(), {
      ...options,
      launchAtLoginRefused: 'Launch at login needs the installed app.',
    });
    expect(template.find((i) => i.id === 'launch-at-login')).toMatchObject({
      label: 'Launch at login (only the installed app)',
      enabled: false,
      checked: false,
      toolTip: 'Launch at login needs the installed app.',
    });
  });

  it('a crashed service waiting for its restart says it crashed', () => {
    const template = trayTemplate(
      [
        status('persona-store', 'backing-off', {
          lastError: 'The persona store exited with code 1. Restarting in 0.5 s.',
        }),
      ],
      actions(),
      options,
    );
    expect(template.find((i) => i.id === 'service:persona-store')!.label).toBe(
      'Persona store: crashed, restarting soon',
    );
  });

  it('has one aggregate state for the icon: the worst news first', () => {
    expect(aggregateState([status('identity', 'ready'), status('persona-store', 'ready')])).toBe('ready');
    expect(aggregateState([status('identity', 'ready'), status('persona-store', 'starting')])).toBe('starting');
    expect(aggregateState([status('identity', 'degraded'), status('persona-store', 'starting')])).toBe('degraded');
    expect(aggregateState([status('identity', 'ready'), status('persona-store', 'backing-off')])).toBe('error');
    expect(aggregateState([status('identity', 'gave-up'), status('persona-store', 'stopped')])).toBe('error');
    expect(aggregateState([status('identity', 'stopped'), status('persona-store', 'stopped')])).toBe('stopped');
    expect(aggregateState([status('identity', 'ready'), status('persona-store', 'stopped')])).toBe('degraded');
    // Waiting for the person is not starting, and comes before it.
    expect(
      aggregateState([status('identity', 'starting'), status('model-provider', 'waiting', { waitingOn: ['login'] })]),
    ).toBe('waiting');
    expect(
      aggregateState([status('identity', 'degraded'), status('model-provider', 'waiting', { waitingOn: ['login'] })]),
    ).toBe('degraded');
  });

  it('a service waiting for the person: the tooltip and its submenu say what to do', () => {
    const statuses = [
      status('identity', 'ready'),
      status('model-provider', 'waiting', { waitingOn: ['login'], lastError: 'Not ready: login (not signed in).' }),
    ];
    expect(trayTooltip(statuses)).toBe('Hub services: Waiting for you: Sign in to the CLI. (1 of 2 ready)');
    expect(trayTooltip([status('identity', 'ready'), status('model-provider', 'ready')])).toBe(
      'Hub services: All services are ready. (2 of 2 ready)',
    );
    const a = actions();
    const template = trayTemplate(statuses, a, options);
    expect(template.find((i) => i.id === 'service:model-provider')!.label).toBe('Chat-model provider: waiting');
    const provider = template.find((i) => i.id === 'service:model-provider')!.submenu as MenuItemConstructorOptions[];
    const need = provider.find((i) => i.id === 'service:model-provider:need')!;
    expect(need).toMatchObject({
      label: 'Sign in to the CLI…',
      toolTip: 'The CLI is not signed in, so the chat-model provider cannot answer.',
    });
    need.click!({} as never, undefined, {} as never);
    expect(a.openConsole).toHaveBeenCalled();
    // It runs: Stop applies, Start does not.
    expect([
      provider.find((i) => i.label === 'Start')!.enabled,
      provider.find((i) => i.label === 'Stop')!.enabled,
    ]).toEqual([false, true]);
  });

  it('a service the person stopped changes the icon and is named in the tooltip, as on the overview', () => {
    const statuses = [
      status('identity', 'ready'),
      status('persona-store', 'stopped'),
      status('model-provider', 'ready'),
    ];
    expect(aggregateState(statuses)).toBe('degraded');
    expect(trayTooltip(statuses)).toBe(
      'Hub services: Stopped: persona store. Start it on the Services page. (2 of 3 ready)',
    );
    // Stopped beside one that waits for the person: the stop is the news.
    const waiting = [status('persona-store', 'stopped'), status('model-provider', 'waiting', { waitingOn: ['login'] })];
    expect(trayTooltip(waiting)).toBe(
      'Hub services: Stopped: persona store. Start it on the Services page. (0 of 2 ready)',
    );
  });
});

describe('notification decisions', () => {
  it("a first launch that is not signed in is the guide's news, not a notification", () => {
    expect(
      statusNotice(status('model-provider', 'live'), status('model-provider', 'waiting', { waitingOn: ['login'] })),
    ).toBeUndefined();
    expect(
      statusNotice(status('model-provider', 'degraded'), status('model-provider', 'waiting', { waitingOn: ['login'] }))
        ?.kind,
    ).toBe('cliSignedOut');
    expect(
      statusNotice(status('model-provider', 'ready'), status('model-provider', 'waiting', { waitingOn: ['cli'] })),
    ).toBeUndefined();
  });

  it('signals that failed for good: the first look learns the old ones, later looks tell only new ones', () => {
    const seen = { ids: new Set<string>(), first: true };
    expect(
      signalNotices(seen, [
        { id: 'sub_old', signal: 'failed' },
        { id: 'sub_ok', signal: 'sent' },
      ]),
    ).toEqual([]);
    expect(signalNotices(seen, [{ id: 'sub_old', signal: 'failed' }])).toEqual([]);
    expect(
      signalNotices(seen, [
        { id: 'sub_old', signal: 'failed' },
        { id: 'sub_new', signal: 'failed', repo: 'octo/hello' },
      ]),
    ).toEqual([
      {
        kind: 'signalFailed',
        title: 'A signal could not reach your hub',
        body: "The gateway gave up delivering (octo/hello) after every attempt: open the console's Platform page to see why.",
      },
    ]);
    expect(
      signalNotices(seen, [
        { id: 'sub_a', signal: 'failed' },
        { id: 'sub_b', signal: 'failed' },
        { id: 'sub_c', signal: 'pending' },
      ])[0]!.title,
    ).toBe('2 signals could not reach your hub');
    expect(
      wanted(
        { kind: 'signalFailed', title: '', body: '' },
        { notifications: { serviceGaveUp: true, signalFailed: false, cliSignedOut: true, credentialExpiring: true } },
      ),
    ).toBe(false);
  });
});

describe('IPC: only the console window, only well-formed requests', () => {
  const consoleFrame = { url: `${CONSOLE_URL}#/services`, parent: null };

  async function setup() {
    const supervisor = new ServiceSupervisor({ dataDir: tempDir('ipc-'), services: ['identity'], env: {} });
    supervisors.push(supervisor);
    const api = createConsoleApi({ supervisor });
    const window = new fake.FakeContents();
    const call = (event: { sender: unknown; senderFrame: unknown }, payload: unknown) =>
      handleConsoleCall(event as never, payload, api, () => window as never);
    return { window, call };
  }

  it('a well-formed call from the console window reaches the console API', async () => {
    const { window, call } = await setup();
    const answer = await call({ sender: window, senderFrame: consoleFrame }, { method: 'services.list' });
    expect(answer).toMatchObject({ ok: true, data: [{ name: 'identity', state: 'stopped' }] });
  });

  it('a foreign sender is refused: another webContents, another origin, or a sub-frame', async () => {
    const { window, call } = await setup();
    const refused = {
      ok: false,
      error: { message: 'Refused: this message did not come from the console window.', status: 403 },
    };
    expect(
      await call({ sender: new fake.FakeContents(), senderFrame: consoleFrame }, { method: 'services.list' }),
    ).toEqual(refused);
    expect(
      await call(
        { sender: window, senderFrame: { url: 'https://evil.example/', parent: null } },
        { method: 'services.list' },
      ),
    ).toEqual(refused);
    expect(
      await call({ sender: window, senderFrame: { url: CONSOLE_URL, parent: {} } }, { method: 'services.list' }),
    ).toEqual(refused);
    expect(await call({ sender: window, senderFrame: null }, { method: 'services.list' })).toEqual(refused);
  });

  it('a bad payload is refused before it reaches the API', async () => {
    const { window, call } = await setup();
    for (const payload of [
      undefined,
      'services.list',
      { method: 42 },
      { method: '' },
      { method: 'services.list', extra: 1 },
      { method: '../x' },
      [{ method: 'x' }],
    ]) {
      expect(await call({ sender: window, senderFrame: consoleFrame }, payload)).toEqual({
        ok: false,
        error: {
          message: 'Refused: a console call is { method: string, params?: object } and nothing else.',
          status: 400,
        },
      });
    }
  });
});

describe('the desktop lifecycle, with Electron mocked', () => {
  // Launch at login writes an XDG autostart entry on Linux: keep it in a temp folder, never the user's.
  beforeEach(() => {
    vi.stubEnv('XDG_CONFIG_HOME', tempDir('desktop-xdg-'));
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    fake.state.lock = true;
    fake.state.windows.length = 0;
    fake.state.trays.length = 0;
    fake.state.handlers.clear();
    fake.state.exited.length = 0;
    fake.state.quits = 0;
    fake.state.notifications.length = 0;
    fake.app.removeAllListeners();
  });

  /** Runs the shell on fake Electron; by default on a desktop whose tray icon is seen. */
  async function launch(
    settings = memorySettings({ startServicesOnLaunch: false }),
    more: { trayShown?: boolean; hidden?: boolean; testHooks?: (hooks: DesktopTestHooks) => void } = {},
  ) {
    const electron = await import('electron');
    const { runDesktop } = await import('./desktop.ts');
    const supervisor = new ServiceSupervisor({
      dataDir: tempDir('desktop-'),
      services: ['identity', 'persona-store'],
      env: {},
    });
    supervisors.push(supervisor);
    const desktop = await runDesktop(electron, {
      supervisor,
      settings,
      hidden: more.hidden,
      trayShown: async () => more.trayShown ?? true,
      testHooks: more.testHooks,
    });
    return { desktop, supervisor };
  }

  const trayItem = (id: string) => fake.state.trays[0]!.menu!.template.find((i) => i.id === id)!;
  const click = (id: string, checked: boolean) => trayItem(id).click!({ checked } as never, undefined, {} as never);

  it('a second instance quits at once and leaves the first to focus its window', async () => {
    fake.state.lock = false;
    const { desktop } = await launch();
    expect(desktop).toBeUndefined();
    expect(fake.state.quits).toBe(1);
    expect(fake.state.windows).toHaveLength(0);
  });

  it('opens the hardened console window on app://console, with a tray and the IPC channel', async () => {
    const { desktop } = await launch();
    expect(desktop!.hasTray).toBe(true);
    expect(fake.state.sandbox).toBeGreaterThan(0);
    expect(fake.state.schemes).toContainEqual(
      expect.objectContaining({ scheme: 'app', privileges: expect.objectContaining({ standard: true, secure: true }) }),
    );
    const [window] = fake.state.windows;
    expect(window!.loaded).toBe(CONSOLE_URL);
    expect(window!.options).toEqual(
      consoleWindowOptions(
        expect.stringMatching(/preload\.cjs$/) as never,
        expect.stringMatching(/icon\.png$/) as never,
      ),
    );
    expect(fake.state.handlers.has(CONSOLE_CHANNEL)).toBe(true);
    expect(fake.state.permissionHandler).toBeTypeOf('function');
    const tray = fake.state.trays[0]!;
    expect(tray.image).toMatch(/tray-stopped\.png$/);
    expect(tray.menu!.template.map((i) => i.label)).toContain('Launch at login');
    // The page is served by the app:// handler.
    const page = fake.state.protocolHandlers.get('app')!({ url: CONSOLE_URL });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Content-Security-Policy');
    // A second launch focuses the same window instead of opening another.
    fake.app.emit('second-instance');
    expect(fake.state.windows).toHaveLength(1);
    expect(window!.visible).toBe(true);
  });

  it('closing the window hides it to the tray; quit stops every service, then exits', async () => {
    const { supervisor } = await launch();
    const [window] = fake.state.windows;
    window!.emit('ready-to-show');
    expect(window!.close()).toBe(false);
    expect(window!.visible).toBe(false);
    const stopAll = vi.spyOn(supervisor, 'stopAll');
    const preventDefault = vi.fn();
    fake.app.emit('before-quit', { preventDefault });
    expect(preventDefault).toHaveBeenCalled();
    expect(stopAll).toHaveBeenCalled();
    await vi.waitFor(() => expect(fake.state.exited).toEqual([0]));
  });

  it('without a tray, closing the window quits', async () => {
    const electron = await import('electron');
    const Tray = electron.Tray;
    (electron as { Tray: unknown }).Tray = class {
      constructor() {
        throw new Error('no tray on this desktop');
      }
    };
    try {
      const { desktop } = await launch();
      expect(desktop!.hasTray).toBe(false);
      const [window] = fake.state.windows;
      window!.close();
      await vi.waitFor(() => expect(fake.state.exited).toEqual([0]));
    } finally {
      (electron as { Tray: unknown }).Tray = Tray;
    }
  });

  it('notifies when a service gives up and when the CLI signs out, each off from the tray; a click opens the console', async () => {
    const settings = memorySettings({ startServicesOnLaunch: false });
    const { supervisor } = await launch(settings);
    supervisor.emit(
      'status',
      status('persona-store', 'gave-up', { lastError: 'Port 8004 on 127.0.0.1 is already in use.' }),
    );
    expect(fake.state.notifications.map((n) => [n.title, n.body])).toEqual([
      ['Persona store gave up', 'Port 8004 on 127.0.0.1 is already in use.'],
    ]);
    const windows = fake.state.windows.length;
    fake.state.notifications[0]!.clicked();
    expect(fake.state.windows.length).toBeGreaterThanOrEqual(Math.max(windows, 1));
    // The same state again is not news.
    supervisor.emit(
      'status',
      status('persona-store', 'gave-up', { lastError: 'Port 8004 on 127.0.0.1 is already in use.' }),
    );
    expect(fake.state.notifications).toHaveLength(1);

    const submenu = trayItem('notifications').submenu as MenuItemConstructorOptions[];
    expect(submenu.map((i) => [i.label, i.checked])).toEqual([
      ['When a service gives up', true],
      ['When a signal fails for good', true],
      ['When the CLI signs out', true],
      ['A week before a hub credential expires', true],
    ]);
    submenu.find((i) => i.id === 'notify:serviceGaveUp')!.click!({ checked: false } as never, undefined, {} as never);
    expect(settings.get().notifications).toEqual({
      serviceGaveUp: false,
      signalFailed: true,
      cliSignedOut: true,
      credentialExpiring: true,
    });
    expect((trayItem('notifications').submenu as MenuItemConstructorOptions[])[0]!.checked).toBe(false);
    supervisor.emit('status', status('persona-store', 'starting'));
    supervisor.emit('status', status('persona-store', 'gave-up', { lastError: 'Gave up after 5 crashes.' }));
    expect(fake.state.notifications).toHaveLength(1);

    // The provider was ready; its CLI signs out (a completion found it): a notification says so.
    supervisor.emit('status', status('identity', 'ready'));
    const provider = (state: ServiceStatus['state'], extra: Partial<ServiceStatus> = {}) => ({
      ...status('identity', state, extra),
      name: 'model-provider' as const,
    });
    supervisor.emit('status', provider('ready'));
    supervisor.emit('status', provider('waiting', { waitingOn: ['login'] }));
    expect(fake.state.notifications.at(-1)).toMatchObject({ title: 'The CLI signed out' });
  });

  it('the tray menu is rebuilt on every status change, and launch at login toggles the setting', async () => {
    const settings = memorySettings({ startServicesOnLaunch: false });
    const { supervisor } = await launch(settings);
    const tray = fake.state.trays[0]!;
    const before = tray.menu;
    supervisor.emit('status', status('identity', 'stopped'));
    expect(tray.menu).not.toBe(before);
    expect(tray.tooltip).toBe('Hub services: All services are stopped. (0 of 2 ready)');
    expect(trayItem('launch-at-login').checked).toBe(false);
    click('launch-at-login', true);
    expect(settings.get().launchAtLogin).toBe(true);
    expect(trayItem('launch-at-login').checked).toBe(true);
    if (process.platform === 'linux') {
      // A development run: Electron's binary with the app's folder, so the entry starts this app and not Electron's default one.
      const entry = readFileSync(join(process.env.XDG_CONFIG_HOME!, 'autostart', 'hub-services.desktop'), 'utf8');
      expect(entry).toContain(`Exec=${process.execPath} /work/hub-services --hidden`);
    }
  });

  it('offers the test hooks only when asked: the tray menu as a person sees it and can click it, over JSON lines', async () => {
    let handed: DesktopTestHooks | undefined;
    await launch();
    fake.app.removeAllListeners();
    fake.state.windows.length = 0;

    const settings = memorySettings({ startServicesOnLaunch: false });
    expect(handed).toBeUndefined();
    await launch(settings, { testHooks: (hooks) => (handed = hooks) });
    const hooks = handed!;
    const input = new PassThrough();
    const output = new PassThrough();
    const lines: Array<Record<string, unknown>> = [];
    const waiters: Array<() => void> = [];
    createInterface({ input: output }).on('line', (line) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
      waiters.splice(0).forEach((wake) => wake());
    });
    const until = async (match: (line: Record<string, unknown>) => boolean) => {
      for (;;) {
        const found = lines.find(match);
        if (found) return found;
        await new Promise<void>((wake) => waiters.push(wake));
      }
    };
    const answer = (id: number) => until((l) => l.id === id);
    serveTestHooks(hooks, input, output);
    await until((l) => l.event === 'hooks-ready');

    input.write('{"id":1,"command":"menu"}\n');
    const menu = (await answer(1)).menu as TrayItemView[];
    expect(menu[0]).toEqual({ id: 'open-console', label: 'Open console', enabled: true });
    expect(menu.find((i) => i.id === 'service:identity')!.submenu!.map((i) => i.id)).toContain(
      'service:identity:start',
    );
    expect(JSON.stringify(menu)).not.toContain('click');
    // A checkbox flips as Electron flips it before calling click.
    expect(menu.find((i) => i.id === 'close-to-tray')!.checked).toBe(true);
    input.write('{"id":2,"command":"click","item":"close-to-tray"}\n');
    expect(await answer(2)).toEqual({ id: 2, clicked: true });
    expect(settings.get().closeWindow).toBe('quit');
    expect(hooks.trayMenu().find((i) => i.id === 'close-to-tray')!.checked).toBe(false);
    // A disabled item (Stop of a stopped service), an unknown one and a malformed command are not clicked.
    input.write(
      '{"id":3,"command":"click","item":"service:identity:stop"}\n{"id":4,"command":"click","item":"no-such-item"}\n{"id":5,"command":"eval","item":"1"}\n',
    );
    expect(await answer(3)).toEqual({ id: 3, clicked: false });
    expect(await answer(4)).toEqual({ id: 4, clicked: false });
    expect((await answer(5)).error).toMatch(/^commands: /);

    fake.state.windows[0]!.emit('ready-to-show');
    input.write('{"id":6,"command":"window"}\n');
    expect(await answer(6)).toEqual({
      id: 6,
      window: {
        visible: true,
        focused: false,
        url: CONSOLE_URL,
        webPreferences: { contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true },
      },
    });
    input.write('{"id":7,"command":"services"}\n');
    expect(await answer(7)).toEqual({
      id: 7,
      services: [
        { name: 'identity', state: 'stopped', port: 8001 },
        { name: 'persona-store', state: 'stopped', port: 8004 },
      ],
    });

    // A second launch brings the window back and says so.
    fake.state.windows[0]!.hide();
    fake.app.emit('second-instance');
    expect(await until((l) => l.event === 'second-instance')).toMatchObject({ window: { visible: true } });
  });
});

describe('what closing the window does, with Electron mocked', () => {
  beforeEach(() => {
    vi.stubEnv('XDG_CONFIG_HOME', tempDir('desktop-xdg-'));
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    fake.state.windows.length = 0;
    fake.state.trays.length = 0;
    fake.state.exited.length = 0;
    fake.app.removeAllListeners();
  });

  async function launch(settings: SettingsStore, more: { trayShown: boolean; hidden?: boolean }) {
    const electron = await import('electron');
    const { runDesktop } = await import('./desktop.ts');
    const supervisor = new ServiceSupervisor({ dataDir: tempDir('desktop-'), services: ['identity'], env: {} });
    supervisors.push(supervisor);
    await runDesktop(electron, { supervisor, settings, hidden: more.hidden, trayShown: async () => more.trayShown });
  }
  const trayItem = (id: string) => fake.state.trays[0]!.menu!.template.find((i) => i.id === id)!;
  const closeWindow = () => {
    const window = fake.state.windows[fake.state.windows.length - 1]!;
    window.emit('ready-to-show');
    return window.close();
  };

  it('where no tray icon is seen (GNOME without a StatusNotifier host), closing quits until the user chooses otherwise', async () => {
    const settings = memorySettings({ startServicesOnLaunch: false });
    await launch(settings, { trayShown: false });
    expect(trayItem('close-to-tray').checked).toBe(false);
    expect(closeWindow()).toBe(true);
    await vi.waitFor(() => expect(fake.state.exited).toEqual([0]));
    expect(settings.get().closeWindow).toBeUndefined();
  });

  it('where no tray icon is seen, a hidden start (launch at login) still opens the window', async () => {
    await launch(memorySettings({ startServicesOnLaunch: false }), { trayShown: false, hidden: true });
    expect(fake.state.windows).toHaveLength(1);
  });

  it('where the tray icon is seen, a hidden start opens no window', async () => {
    await launch(memorySettings({ startServicesOnLaunch: false }), { trayShown: true, hidden: true });
    expect(fake.state.windows).toHaveLength(0);
  });

  it('ticking the tray\u2019s checkbox keeps the app in the tray when the window closes, and it is kept as a setting', async () => {
    const settings = memorySettings({ startServicesOnLaunch: false });
    await launch(settings, { trayShown: false });
    trayItem('close-to-tray').click!({ checked: true } as never, undefined, {} as never);
    expect(settings.get().closeWindow).toBe('hide-to-tray');
    expect(trayItem('close-to-tray').checked).toBe(true);
    expect(closeWindow()).toBe(false);
    expect(fake.state.windows[0]!.visible).toBe(false);
    expect(fake.state.exited).toEqual([]);
  });

  it('unticking it makes closing quit even where the tray is seen', async () => {
    const settings = memorySettings({ startServicesOnLaunch: false });
    await launch(settings, { trayShown: true });
    expect(trayItem('close-to-tray').checked).toBe(true);
    trayItem('close-to-tray').click!({ checked: false } as never, undefined, {} as never);
    expect(settings.get().closeWindow).toBe('quit');
    expect(closeWindow()).toBe(true);
    await vi.waitFor(() => expect(fake.state.exited).toEqual([0]));
  });

  it('a choice once made wins over what the desktop offers', async () => {
    await launch(memorySettings({ startServicesOnLaunch: false, closeWindow: 'hide-to-tray' }), { trayShown: false });
    expect(closeWindow()).toBe(false);
    expect(fake.state.exited).toEqual([]);
  });
});
