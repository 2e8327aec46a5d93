/** The desktop app's settings: their shape and defaults (plain Node; the store itself is in settings.ts). */
import { z } from 'zod';

export const settingsSchema = z.object({
  /** Start the app when the user signs in (login items on macOS and Windows, XDG autostart on Linux). Off by default. */
  launchAtLogin: z.boolean().default(false),
  /**
   * What closing the console window does: keep running in the tray, or quit (which stops every service).
   * Unset until the user chooses in the tray menu; until then the app decides at each launch from whether
   * a tray icon can be seen (desktop.ts). Where no tray could be made, closing always quits.
   */
  closeWindow: z.enum(['hide-to-tray', 'quit']).optional(),
  /** Start every service when the app starts. */
  startServicesOnLaunch: z.boolean().default(true),
});

export type Settings = z.infer<typeof settingsSchema>;

export const DEFAULT_SETTINGS: Settings = settingsSchema.parse({});

export interface SettingsStore {
  get(): Settings;
  set(patch: Partial<Settings>): Settings;
}
