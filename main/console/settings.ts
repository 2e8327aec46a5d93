/**
 * The Settings page: the person's forgetting (kept at identity, the persona store's settings service),
 * the default lifetime of hub credentials, and, in the desktop app, launch at login and notifications.
 * The provider's streaming mode has its own methods (`provider.*`); the page shows it here too.
 */
import { z } from 'zod';
import {
  DEFAULT_FORGET_MODE,
  DEFAULT_GRACE_PERIOD_SECONDS,
  FORGET_MODES,
  MAX_GRACE_PERIOD_SECONDS,
  type ForgetMode,
} from '../../common/change-log.ts';
import type { DesktopSettingsView, ForgettingView, SettingsView } from '../../common/contract.ts';
import { method, NoParams, type MethodContext } from './method-spec.ts';
import { ConsoleError } from './service-client.ts';

/** What identity keeps for the persona store (services/identity/person-settings.ts), as the console reads it. */
interface PersonaSettings {
  forget_mode?: ForgetMode;
  grace_period_seconds?: number;
  keep_replaced_values?: boolean;
}

/** The installation's own forgetting (PERSONA_*), the default of what the person did not choose. */
function installationDefaults(env: MethodContext['env']): ForgettingView['defaults'] {
  const mode = env.PERSONA_FORGET_MODE as ForgetMode | undefined;
  const grace = Number(env.PERSONA_GRACE_PERIOD_SECONDS ?? DEFAULT_GRACE_PERIOD_SECONDS);
  return {
    mode: mode && FORGET_MODES.includes(mode) ? mode : DEFAULT_FORGET_MODE,
    gracePeriodSeconds: Number.isInteger(grace) && grace > 0 ? grace : DEFAULT_GRACE_PERIOD_SECONDS,
    keepReplacedValues: env.PERSONA_KEEP_REPLACED_VALUES === 'true',
  };
}

/**
 * Whether the person's choice reaches the persona store: the supervisor makes identity its settings service
 * unless the user named another settings service or pointed it at another identity (main/supervisor/wiring.ts).
 */
function wiredToIdentity(env: MethodContext['env']): string | undefined {
  if (env.PERSONA_SETTINGS_API_BASE_URL || env.PERSONA_SETTINGS_API_TOKEN)
    return 'Your installation names its own settings service for the persona store, so forgetting is chosen there, not here.';
  if (env.PERSONA_IDENTITY_URL)
    return 'The persona store uses another identity service than this app\u2019s, so forgetting is chosen where that one keeps settings.';
  return undefined;
}

async function forgetting(ctx: MethodContext): Promise<ForgettingView> {
  const defaults = installationDefaults(ctx.env);
  const elsewhere = wiredToIdentity(ctx.env);
  if (elsewhere) return { available: false, why: elsewhere, chosen: {}, defaults };
  const chosen = (await ctx.services.call<PersonaSettings>('identity', { path: '/v1/account/settings/persona' })).body;
  return {
    available: true,
    chosen: {
      ...(chosen.forget_mode ? { mode: chosen.forget_mode } : {}),
      ...(chosen.grace_period_seconds ? { gracePeriodSeconds: chosen.grace_period_seconds } : {}),
      ...(chosen.keep_replaced_values !== undefined ? { keepReplacedValues: chosen.keep_replaced_values } : {}),
    },
    defaults,
  };
}

/** The desktop app's own settings, when the console runs in it (launch at login, notifications). */
export interface DesktopSettings {
  get(): DesktopSettingsView;
  set(patch: Partial<Pick<DesktopSettingsView, 'launchAtLogin' | 'notifications'>>): DesktopSettingsView;
  /** Opens the folder of the services' log files in the system's file manager. */
  openLogFolder(): Promise<{ opened: boolean; message: string }>;
}

/** The console's own preferences: kept by the desktop app, or in the console's settings file headless. */
export interface ConsolePreferences {
  /** Days a new hub credential lives unless the person picks otherwise; null: never expires. */
  hubCredentialDays(): number | null;
  setHubCredentialDays(days: number | null): void;
}

/** A new hub credential's lifetime unless the person chooses another: 90 days (the person may choose never). */
export const DEFAULT_HUB_CREDENTIAL_DAYS = 90;

const ForgettingChoice = z
  .object({
    /** null: not chosen, the installation's applies. */
    mode: z.enum(FORGET_MODES).nullable(),
    gracePeriodDays: z
      .number()
      .int()
      .min(1)
      .max(MAX_GRACE_PERIOD_SECONDS / 86_400)
      .nullable()
      .optional(),
    keepReplacedValues: z.boolean().nullable().optional(),
  })
  .strict();

export const SETTINGS_METHODS = {
  'settings.get': method(NoParams, async (_p, ctx): Promise<SettingsView> => {
    const [forget] = await Promise.allSettled([forgetting(ctx)]);
    return {
      forgetting:
        forget.status === 'fulfilled'
          ? forget.value
          : {
              available: false,
              why: (forget.reason as Error).message,
              chosen: {},
              defaults: installationDefaults(ctx.env),
            },
      hubCredentialDays: ctx.preferences.hubCredentialDays(),
      desktop: ctx.desktop?.get() ?? null,
    };
  }),
  // The whole choice is written at once: identity keeps exactly what the person chose now.
  'settings.setForgetting': method(ForgettingChoice, async (choice, ctx): Promise<ForgettingView> => {
    const elsewhere = wiredToIdentity(ctx.env);
    if (elsewhere) throw new ConsoleError(elsewhere, 409);
    const body: PersonaSettings = {
      ...(choice.mode ? { forget_mode: choice.mode } : {}),
      ...(choice.gracePeriodDays ? { grace_period_seconds: choice.gracePeriodDays * 86_400 } : {}),
      ...(typeof choice.keepReplacedValues === 'boolean' ? { keep_replaced_values: choice.keepReplacedValues } : {}),
    };
    await ctx.services.call('identity', { method: 'PUT', path: '/v1/account/settings/persona', body });
    return forgetting(ctx);
  }),
  'settings.setHubCredentialDays': method(
    z.object({ days: z.number().int().min(1).max(3650).nullable() }).strict(),
    async ({ days }, ctx) => {
      ctx.preferences.setHubCredentialDays(days);
      return { hubCredentialDays: ctx.preferences.hubCredentialDays() };
    },
  ),
  'settings.setDesktop': method(
    z
      .object({
        launchAtLogin: z.boolean().optional(),
        notifications: z
          .object({
            serviceGaveUp: z.boolean().optional(),
            signalFailed: z.boolean().optional(),
            cliSignedOut: z.boolean().optional(),
            credentialExpiring: z.boolean().optional(),
          })
          .strict()
          .optional(),
      })
      .strict(),
    async (patch, ctx): Promise<DesktopSettingsView> => {
      if (!ctx.desktop)
        throw new ConsoleError(
          'Launch at login and notifications belong to the desktop app; this console runs in a browser without it.',
          409,
        );
      return ctx.desktop.set(patch as Parameters<DesktopSettings['set']>[0]);
    },
  ),
  'services.openLogFolder': method(NoParams, async (_p, ctx) => {
    if (ctx.desktop) return ctx.desktop.openLogFolder();
    return {
      opened: false,
      message: `The log files are in ${ctx.supervisor.dataDir.replace(/[/\\]+$/, '')}/logs; a page in a browser cannot open folders.`,
    };
  }),
};
