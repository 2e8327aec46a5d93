/**
 * The desktop app's settings, kept by electron-store in Electron's user-data folder. Loaded only by
 * Electron code (electron-store imports electron). Launch at login is off until the user turns it on.
 */
import Store from 'electron-store';
import { DEFAULT_SETTINGS, settingsSchema, type Settings, type SettingsStore } from './settings-schema.ts';

export function openSettings(): SettingsStore {
  const store = new Store<Settings>({ name: 'settings', defaults: DEFAULT_SETTINGS, clearInvalidConfig: true });
  const read = (): Settings => {
    const parsed = settingsSchema.safeParse(store.store);
    return parsed.success ? parsed.data : DEFAULT_SETTINGS;
  };
  return {
    get: read,
    set(patch) {
      const next = settingsSchema.parse({ ...read(), ...patch });
      store.store = next;
      return next;
    },
  };
}
