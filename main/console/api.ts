/**
 * The console API: one dispatcher of `{ method, params }` for both transports (IPC in Electron, HTTP
 * headless). It validates the request with zod, runs the method and answers a ConsoleResult; it never
 * throws and never lets a token, a credential or a stack trace into an answer.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { PathSegmentError } from '../../common/url-path.ts';
import type { Supervisor } from '../supervisor/types.ts';
import type { ConsoleApi, ConsoleRequest, ConsoleResult } from '../../common/contract.ts';
import { ActivityHistory } from './activity.ts';
import { rememberCrashes } from './crashes.ts';
import type { FirstRunSettings, OpenTerminal } from './method-spec.ts';
import { consoleSettingsFile } from './settings-file.ts';
import type { ConsolePreferences, DesktopSettings } from './settings.ts';
import { METHOD_NAMES, METHODS, type MethodContext, type MethodName } from './methods.ts';
import { ConsoleError, ServiceClient } from './service-client.ts';

const Request = z.object({ method: z.string().min(1).max(100), params: z.unknown().optional() }).strict();

export interface ConsoleApiParts {
  supervisor: Supervisor;
  /** The environment the services were configured from (default process.env): the installation's forget mode. */
  env?: Readonly<Record<string, string | undefined>>;
  /** How often every service's /metrics is read for the charts (default a minute; the overview also reads when it asks). */
  activityIntervalMs?: number;
  /** Where the first run's "done" is kept (default `<dataDir>/console/settings.json`; the desktop app passes its settings). */
  firstRun?: FirstRunSettings;
  /** Opens a terminal running a program (the desktop app passes one; without it the console says what to run). */
  openTerminal?: OpenTerminal;
  /** The console's preferences (default: the console's settings file; the desktop app passes its settings). */
  preferences?: ConsolePreferences;
  /** The desktop app's own settings and its log folder (the desktop app only). */
  desktop?: DesktopSettings;
}

export function createConsoleApi(parts: ConsoleApiParts): ConsoleApi {
  const services = new ServiceClient(parts.supervisor);
  const activity = new ActivityHistory(parts.supervisor, services, {
    intervalMs: parts.activityIntervalMs,
    file: join(parts.supervisor.dataDir, 'console', 'activity.json'),
  });
  activity.start();
  const ctx: MethodContext = {
    supervisor: parts.supervisor,
    services,
    crashes: rememberCrashes(parts.supervisor),
    activity,
    env: parts.env ?? process.env,
    firstRun: parts.firstRun ?? consoleSettingsFile(parts.supervisor.dataDir),
    ...(parts.openTerminal ? { openTerminal: parts.openTerminal } : {}),
    preferences: parts.preferences ?? consoleSettingsFile(parts.supervisor.dataDir),
    ...(parts.desktop ? { desktop: parts.desktop } : {}),
  };
  return {
    async call(request: ConsoleRequest): Promise<ConsoleResult> {
      const parsed = Request.safeParse(request);
      if (!parsed.success) {
        return failure(
          'A console request is an object with a method name and optional params; send {"method": "...", "params": {...}}.',
          400,
        );
      }
      const { method, params } = parsed.data;
      if (!Object.hasOwn(METHODS, method)) {
        return failure(
          `There is no console method "${method.slice(0, 100)}"; the methods are: ${METHOD_NAMES.join(', ')}.`,
          404,
        );
      }
      const spec = METHODS[method as MethodName];
      const checked = spec.params.safeParse(params);
      if (!checked.success) return failure(describeParams(method, checked.error), 422);
      try {
        // Each method's params were parsed by its own schema just above.
        const run = spec.run as (p: unknown, c: MethodContext) => Promise<unknown>;
        return { ok: true, data: (await run(checked.data, ctx)) ?? null };
      } catch (err) {
        if (err instanceof ConsoleError) return failure(err.message, err.status);
        if (err instanceof PathSegmentError) return failure(err.message, 422);
        return failure(
          `The ${method} request failed inside the console; try again, and if it keeps failing see the log of the desktop app.`,
          500,
        );
      }
    },
  };
}

function failure(message: string, status?: number): ConsoleResult {
  return { ok: false, error: status === undefined ? { message } : { message, status } };
}

/** "params.profile: a profile is ..." – names the member and never echoes the value sent. */
function describeParams(method: string, error: z.ZodError): string {
  const issues = error.issues.slice(0, 5).map((i) => {
    const where = i.path.length ? `params.${i.path.map(String).join('.')}` : 'params';
    return `${where}: ${i.message}`;
  });
  return `The ${method} request is not right: ${issues.join('; ')}. Correct it and try again.`;
}
