/**
 * What a console method is (params checked by a strict zod schema, and what it runs with), and the
 * param shapes several methods share.
 */
import { z } from 'zod';
import { urlPath } from '../../common/url-path.ts';
import type { Supervisor } from '../supervisor/types.ts';
import type { ActivityHistory } from './activity.ts';
import type { CrashMemory } from './crashes.ts';
import type { TerminalOpened } from '../../common/contract.ts';
import type { ServiceClient } from './service-client.ts';
import type { ConsolePreferences, DesktopSettings } from './settings.ts';

export interface MethodContext {
  supervisor: Supervisor;
  services: ServiceClient;
  crashes: CrashMemory;
  activity: ActivityHistory;
  /** The environment the services were configured from (the installation's defaults, e.g. PERSONA_FORGET_MODE). */
  env: Readonly<Record<string, string | undefined>>;
  /** Whether the person finished the first run (the desktop app's settings, or a file of the console's own). */
  firstRun: FirstRunSettings;
  /** Opens a terminal running a program: the desktop app only. */
  openTerminal?: OpenTerminal;
  /** The console's own preferences (a hub credential's default lifetime). */
  preferences: ConsolePreferences;
  /** The desktop app's settings (launch at login, notifications, the log folder): the desktop app only. */
  desktop?: DesktopSettings;
}

export interface MethodSpec<S extends z.ZodType> {
  params: S;
  run: (params: z.infer<S>, ctx: MethodContext) => Promise<unknown>;
}

export function method<S extends z.ZodType>(
  params: S,
  run: (params: z.infer<S>, ctx: MethodContext) => Promise<unknown>,
): MethodSpec<S> {
  return { params, run };
}

export const Profile = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'a profile is 1-64 letters, digits, dot, dash or underscore');
export const NoParams = z.object({}).strict().optional();
export const Limit = z.number().int().min(1).max(500).optional();
/** A page cursor exactly as the persona store sent it in `next_after`: opaque, passed back untouched. */
export const Cursor = z.string().max(300).optional();

export const personaPath = (profile: string) => urlPath`/v1/personas/${profile}`;

/** What the first run keeps: whether the person finished or dismissed the guide. */
export interface FirstRunSettings {
  firstRunDone(): boolean;
  setFirstRunDone(done: boolean): void;
}

/**
 * Opens a terminal running one program, the path of an executable with no arguments (quoted by the
 * opener for the shell it runs in); given by the desktop app only (a browser tab must not start programs).
 */
export type OpenTerminal = (program: string) => Promise<TerminalOpened>;
