/**
 * The desktop app's settings, kept by electron-store in Electron's user-data folder. Loaded only by
 * Electron code (electron-store imports electron). Launch at login is off until the user turns it on.
 */
import Store from 'electron-store';
import { z } from 'zod';

export const settingsSchema = z.object({
  /** Start the app when the user signs in (macOS and Windows through Electron; off by default). */
  launchAtLogin: z.boolean().default(false),
  /** Closing the window hides it to the tray; where no tray can be shown, closing always quits. */
  closeToTray: z.boolean().default(true),
  /** Start every service when the app starts. */
  startServicesOnLaunch: z.boolean().default(true),
});

export type Settings = z.infer<typeof settingsSchema>;

export const DEFAULT_SETTINGS: Settings = settingsSchema.parse({});

export interface SettingsStore {
  get(): Settings;
  set(patch: Partial<Settings>): Settings;
}

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
