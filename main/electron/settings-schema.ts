/**
 * The desktop app's settings: their shape and defaults, and how they are read from and written to the
 * store (plain Node; settings.ts opens the store itself with electron-store, which needs Electron).
 */
import { z } from 'zod';
import { DEFAULT_HUB_CREDENTIAL_DAYS } from '../console/settings.ts';
import { ServiceSettings } from '../supervisor/wiring.ts';

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
  /** How the provider sends a streamed completion (its MODELPROV_STREAM); changed on the console's provider page, applied when the provider restarts. */
  providerStream: ServiceSettings.shape.providerStream,
  /** The person finished (or dismissed) the first-run guide; until then the console opens on it. */
  firstRunDone: z.boolean().default(false),
  /** Native notifications, each of which the tray turns off: a service gave up, a signal failed for good, the CLI signed out. */
  notifications: z
    .object({
      serviceGaveUp: z.boolean().default(true),
      signalFailed: z.boolean().default(true),
      cliSignedOut: z.boolean().default(true),
      credentialExpiring: z.boolean().default(true),
    })
    .default({ serviceGaveUp: true, signalFailed: true, cliSignedOut: true, credentialExpiring: true }),
  /** Days a hub credential made in the console lives unless the person picks another; null: never (chosen on the Settings page). */
  hubCredentialDays: z.number().int().min(1).max(3650).nullable().default(DEFAULT_HUB_CREDENTIAL_DAYS),
});

export type Settings = z.infer<typeof settingsSchema>;

export const DEFAULT_SETTINGS: Settings = settingsSchema.parse({});

export interface SettingsStore {
  get(): Settings;
  set(patch: Partial<Settings>): Settings;
}

/**
 * How the store is opened: `settings.json` in Electron's user-data folder, the defaults written on first
 * launch, and a file that is not JSON (a crash mid-write on an old version, a hand edit) replaced by the
 * defaults instead of stopping the app from starting.
 */
export const STORE_OPTIONS = { name: 'settings', defaults: DEFAULT_SETTINGS, clearInvalidConfig: true } as const;

/** The part of electron-store (and conf, which it extends) the settings use: the whole object, read and written at once. */
export interface SettingsFile {
  store: Record<string, unknown>;
}

/** The settings kept in a store; every write is the whole, checked object (conf writes it atomically). */
export function keepSettings(file: SettingsFile): SettingsStore {
  const read = () => readSettings(file.store);
  return {
    get: read,
    set(patch) {
      const next = settingsSchema.parse({ ...read(), ...patch });
      file.store = next;
      return next;
    },
  };
}

/**
 * Each setting on its own: a stored value that is not valid (a hand edit, a setting from another
 * version) falls back to its default and the others are kept; unknown keys are ignored and dropped at
 * the next write.
 */
export function readSettings(stored: unknown): Settings {
  const source = stored !== null && typeof stored === 'object' ? (stored as Record<string, unknown>) : {};
  const settings: Record<string, unknown> = { ...DEFAULT_SETTINGS };
  for (const [key, schema] of Object.entries(settingsSchema.shape)) {
    if (!Object.hasOwn(source, key)) continue;
    const parsed = schema.safeParse(source[key]);
    if (parsed.success && parsed.data !== undefined) settings[key] = parsed.data;
  }
  return settings as Settings;
}
