/**
 * The desktop app's settings, kept by electron-store in Electron's user-data folder (settings.json).
 * Loaded only by Electron code (electron-store imports electron); what is read and written, and how a
 * corrupt file or an invalid value is handled, is in settings-schema.ts and tested there through conf.
 */
import Store from 'electron-store';
import { STORE_OPTIONS, keepSettings, type SettingsStore } from './settings-schema.ts';

export function openSettings(): SettingsStore {
  return keepSettings(new Store<Record<string, unknown>>({ ...STORE_OPTIONS }));
}
