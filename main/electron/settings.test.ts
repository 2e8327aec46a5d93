/**
 * Settings persistence without Electron. First through conf, the library electron-store is built on,
 * opened as electron-store opens it (settings.json in the user-data folder); then settings.ts itself,
 * whose electron-store gets a stand-in `electron` that names a temporary user-data folder. Real files
 * throughout: the first launch, a corrupt file, an invalid stored value.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Conf from 'conf';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_SETTINGS, STORE_OPTIONS, keepSettings, readSettings, type SettingsStore } from './settings-schema.ts';

const work = mkdtempSync(join(tmpdir(), 'settings-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let folders = 0;
function userDataFolder(): string {
  return join(work, `user-data-${++folders}`);
}

/** What electron-store passes to conf: the user-data folder as cwd, `name` as configName, the app's version. */
function openWithConf(userData: string): SettingsStore {
  const { name, ...rest } = STORE_OPTIONS;
  return keepSettings(
    new Conf<Record<string, unknown>>({ ...rest, configName: name, cwd: userData, projectVersion: '0.1.0' }),
  );
}

/** The settings added for the first run and the notifications, at their defaults. */
const NEW = {
  providerStream: 'whole',
  firstRunDone: false,
  notifications: { serviceGaveUp: true, signalFailed: true, cliSignedOut: true, credentialExpiring: true },
  hubCredentialDays: 90,
};

function fileOf(userData: string): unknown {
  return JSON.parse(readFileSync(join(userData, 'settings.json'), 'utf8'));
}

describe('settings kept in the user-data folder (through conf)', () => {
  it('the first launch writes the defaults to settings.json; a change is there at the next launch', () => {
    const userData = userDataFolder();
    const first = openWithConf(userData);
    expect(first.get()).toEqual(DEFAULT_SETTINGS);
    expect(fileOf(userData)).toEqual({ launchAtLogin: false, startServicesOnLaunch: true, ...NEW });

    expect(first.set({ launchAtLogin: true, closeWindow: 'hide-to-tray' })).toEqual({
      launchAtLogin: true,
      closeWindow: 'hide-to-tray',
      startServicesOnLaunch: true,
      ...NEW,
    });
    expect(fileOf(userData)).toEqual({
      launchAtLogin: true,
      closeWindow: 'hide-to-tray',
      startServicesOnLaunch: true,
      ...NEW,
    });
    expect(openWithConf(userData).get()).toEqual({
      launchAtLogin: true,
      closeWindow: 'hide-to-tray',
      startServicesOnLaunch: true,
      ...NEW,
    });
  });

  it('a file that is not JSON (a crash mid-write, a hand edit) gives the defaults instead of stopping the app, and is written whole again', () => {
    const userData = userDataFolder();
    openWithConf(userData).set({ launchAtLogin: true });
    writeFileSync(join(userData, 'settings.json'), '{"launchAtLogin": tru');
    const reopened = openWithConf(userData);
    expect(reopened.get()).toEqual(DEFAULT_SETTINGS);
    reopened.set({ closeWindow: 'quit' });
    expect(fileOf(userData)).toEqual({
      launchAtLogin: false,
      closeWindow: 'quit',
      startServicesOnLaunch: true,
      ...NEW,
    });
  });

  it('an invalid stored value falls back to its default alone; the others are kept, unknown keys dropped at the next write', () => {
    const userData = userDataFolder();
    openWithConf(userData);
    writeFileSync(
      join(userData, 'settings.json'),
      JSON.stringify({
        launchAtLogin: 'yes',
        closeWindow: 'hide-to-tray',
        startServicesOnLaunch: false,
        fromAnotherVersion: 1,
      }),
    );
    const reopened = openWithConf(userData);
    expect(reopened.get()).toEqual({
      launchAtLogin: false,
      closeWindow: 'hide-to-tray',
      startServicesOnLaunch: false,
      ...NEW,
    });
    reopened.set({ launchAtLogin: true });
    expect(fileOf(userData)).toEqual({
      launchAtLogin: true,
      closeWindow: 'hide-to-tray',
      startServicesOnLaunch: false,
      ...NEW,
    });
  });

  it('a value that is not a setting is refused before anything is written', () => {
    const userData = userDataFolder();
    const store = openWithConf(userData);
    store.set({ closeWindow: 'quit' });
    expect(() => store.set({ closeWindow: 'minimise' as never })).toThrow();
    expect(fileOf(userData)).toEqual({
      launchAtLogin: false,
      closeWindow: 'quit',
      startServicesOnLaunch: true,
      ...NEW,
    });
  });

  it('a notification turned off is kept, the others stay on; an invalid one falls back to all on', () => {
    const userData = userDataFolder();
    const store = openWithConf(userData);
    store.set({ notifications: { ...DEFAULT_SETTINGS.notifications, signalFailed: false }, firstRunDone: true });
    expect(openWithConf(userData).get()).toMatchObject({
      firstRunDone: true,
      notifications: { serviceGaveUp: true, signalFailed: false, cliSignedOut: true },
    });
    expect(readSettings({ notifications: { signalFailed: 'no' } }).notifications).toEqual(NEW.notifications);
  });

  it('a stored file that is not an object at all reads as the defaults', () => {
    for (const stored of [null, [], 'text', 3, { __proto__: { launchAtLogin: true } }])
      expect(readSettings(stored)).toEqual(DEFAULT_SETTINGS);
  });
});

describe('settings.ts itself (electron-store, with a stand-in for Electron\u2019s app)', () => {
  const userData = userDataFolder();
  vi.doMock('electron', () => {
    const app = {
      getPath: (name: string) => (name === 'userData' ? userData : join(work, name)),
      getVersion: () => '0.1.0',
    };
    const ipcMain = { on: () => undefined };
    return { default: { app, ipcMain }, app, ipcMain };
  });

  it('opens settings.json in Electron\u2019s user-data folder, as the conf tests above do', async () => {
    const { openSettings } = await import('./settings.ts');
    const settings = openSettings();
    expect(settings.get()).toEqual(DEFAULT_SETTINGS);
    settings.set({ launchAtLogin: true });
    expect(existsSync(join(userData, 'settings.json'))).toBe(true);
    expect(fileOf(userData)).toEqual({ launchAtLogin: true, startServicesOnLaunch: true, ...NEW });
    expect(openWithConf(userData).get()).toEqual({ launchAtLogin: true, startServicesOnLaunch: true, ...NEW });
  });
});
