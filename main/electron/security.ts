/**
 * Electron's security checklist in one place: window options, navigation, new windows, webviews and
 * permission requests. Types only from Electron; the app passes in the real objects.
 */
import type { App, BrowserWindowConstructorOptions, Session, WebContents } from 'electron';

/** The console is served from this origin by a privileged custom protocol (see renderer-protocol.ts). */
export const APP_SCHEME = 'app';
export const APP_HOST = 'console';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
export const CONSOLE_URL = `${APP_ORIGIN}/index.html`;

export function consoleWindowOptions(preloadPath: string, iconPath: string): BrowserWindowConstructorOptions {
  return {
    width: 1200,
    height: 800,
    minWidth: 720,
    minHeight: 480,
    show: false,
    title: 'Hub services',
    icon: iconPath,
    backgroundColor: '#ffffff',
    webPreferences: {
      preload: preloadPath,
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
    },
  };
}

/** Same origin as the console, compared by parsed origin, never by string prefix. */
export function isConsoleUrl(url: string | undefined): boolean {
  if (!url) return false;
  try {
    const parsed = new URL(url);
    return parsed.protocol === `${APP_SCHEME}:` && parsed.host === APP_HOST;
  } catch {
    return false;
  }
}

/** Navigation away from the console, new windows and webviews are refused. */
export function hardenWebContents(contents: WebContents): void {
  contents.on('will-navigate', (event, url) => {
    if (!isConsoleUrl(url)) event.preventDefault();
  });
  contents.on('will-redirect', (event, url) => {
    if (!isConsoleUrl(url)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.setWindowOpenHandler(() => ({ action: 'deny' }));
}

/** The one permission the console uses: writing plain text to the clipboard (the hub page's Copy buttons), from the console itself. */
const CONSOLE_PERMISSION = 'clipboard-sanitized-write';

export function hardenSession(session: Session): void {
  session.setPermissionRequestHandler((_contents, permission, callback, details) =>
    callback(permission === CONSOLE_PERMISSION && isConsoleUrl(details?.requestingUrl)),
  );
  session.setPermissionCheckHandler(
    (_contents, permission, requestingOrigin) => permission === CONSOLE_PERMISSION && isConsoleUrl(requestingOrigin),
  );
  session.setDevicePermissionHandler?.(() => false);
}

export function applySecurityRestrictions(app: App, session: Session): void {
  app.on('web-contents-created', (_event, contents) => hardenWebContents(contents));
  hardenSession(session);
}
