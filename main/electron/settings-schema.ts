/** The desktop app's settings: their shape and defaults (plain Node; the store itself is in settings.ts). */
import { z } from 'zod';

export const settingsSchema = z.object({
  /** Start the app when the user signs in (login items on macOS and Windows, XDG autostart on Linux). Off by default. */
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
