import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

/** One environment variable a service reads: its name without the prefix, how to parse it, its default. */
export interface Setting<T> {
  readonly name: string;
  readonly schema: z.ZodType<T>;
  /** Default as the variable's text; undefined means the variable is optional and absent gives undefined. */
  readonly fallback: string | undefined;
  readonly description: string;
}

export function setting<T>(
  name: string,
  schema: z.ZodType<T>,
  fallback: string | undefined,
  description: string,
): Setting<T> {
  return { name, schema, fallback, description };
}

/** A whole-number setting from `min` to `max`; its help text ends with the range and the default, so it cannot disagree with them. */
export function integerSetting(
  name: string,
  range: { min: number; max: number; fallback: number },
  description: string,
): Setting<number> {
  const { min, max, fallback } = range;
  return setting(
    name,
    parse.integer(min, max),
    String(fallback),
    `${description} A whole number ${min}-${max}; default ${fallback}.`,
  );
}

type Values<S extends Record<string, Setting<unknown>>> = {
  readonly [K in keyof S]: S[K] extends Setting<infer V> ? V : never;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Reads every `<prefix><NAME>` variable once, at start. An unknown name with the prefix stops startup
 * (a typo would otherwise silently fall back to a default), and so does a value that does not parse.
 */
export function loadConfig<S extends Record<string, Setting<unknown>>>(
  prefix: string,
  settings: S,
  env: NodeJS.ProcessEnv = process.env,
): Values<S> {
  const known = new Set(Object.values(settings).map((s) => prefix + s.name));
  const unknown = Object.keys(env)
    .filter((name) => name.startsWith(prefix) && !known.has(name))
    .sort();
  if (unknown.length > 0) {
    throw new ConfigError(
      `Unknown setting ${unknown.join(', ')}: no setting of this service has that name. ` +
        `Remove it or correct its spelling; known settings are ${[...known].sort().join(', ')}.`,
    );
  }
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings)) {
    const name = prefix + s.name;
    const raw = env[name] === undefined || env[name] === '' ? s.fallback : env[name];
    if (raw === undefined) {
      out[key] = undefined;
      continue;
    }
    const parsed = s.schema.safeParse(raw);
    if (!parsed.success) {
      const why = parsed.error.issues.map((i) => i.message).join('; ');
      throw new ConfigError(`Setting ${name} is not valid (${why}). ${s.description}`);
    }
    out[key] = parsed.data;
  }
  return out as Values<S>;
}

/** Parsers for the kinds of value settings hold; each takes the variable's text. */
export const parse = {
  text: () => z.string().min(1),
  port: () => z.coerce.number().int('must be a whole number').min(0).max(65535, 'must be a port number 0-65535'),
  integer: (min: number, max: number) => z.coerce.number().int('must be a whole number').min(min).max(max),
  url: () =>
    z
      .string()
      .url('must be an absolute URL such as http://127.0.0.1:8001')
      .transform((u) => u.replace(/\/+$/, '')),
  /**
   * A size as Express's body limit reads it: whole bytes, or a number with kb, mb or gb (a text it cannot
   * read would fail the app's start; a fraction of a byte it would cut short).
   */
  size: () => z.string().regex(/^(\d+|\d+(\.\d+)? *(kb|mb|gb))$/i, 'must be a size such as 64kb, 2mb or 1048576'),
  boolean: () =>
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
      .transform((v) => ['true', '1', 'yes'].includes(v)),
  /** One of a fixed set of words; the refusal lists them. */
  oneOf: <const T extends readonly [string, ...string[]]>(values: T) =>
    z.enum(values, { message: `must be one of ${values.join(', ')}` }),
  list: () =>
    z.string().transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  /** A comma-separated list whose every item `item` reads; `item` answers a string to refuse one, saying why. */
  listOf: <T extends object | number>(item: (text: string) => T | string) =>
    parse.list().transform((list, ctx) =>
      list.flatMap((text) => {
        const read = item(text);
        if (typeof read !== 'string') return [read];
        ctx.addIssue({ code: 'custom', message: read });
        return [];
      }),
    ),
  /** Comma-separated port numbers (1-65535). */
  ports: () =>
    parse.listOf((text) =>
      /^\d{1,5}$/.test(text) && Number(text) >= 1 && Number(text) <= 65_535
        ? Number(text)
        : `"${text}" is not a port (1-65535)`,
    ),
  /** Comma-separated `<key>=<value>` pairs, each matching `pair` (`message` says the form), no key twice (`key` names one): a Map from key to value. */
  pairs: (pair: RegExp, message: string, key: string) =>
    parse
      .list()
      .refine((items) => items.every((i) => pair.test(i)), { message })
      .transform((items) =>
        items.map((i): [string, string] => [i.slice(0, i.indexOf('=')).trim(), i.slice(i.indexOf('=') + 1).trim()]),
      )
      .refine((pairs) => new Set(pairs.map(([key]) => key)).size === pairs.length, { message: `names ${key} twice` })
      .transform((pairs) => new Map(pairs)),
  loopbackHost: () =>
    z
      .string()
      .refine(
        isLoopbackHost,
        'must be a loopback address (127.0.0.1, ::1 or localhost); these services never listen beyond this machine',
      ),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
};

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/** The per-user folder the desktop app keeps its state in; headless uses the same by default. */
export function appDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const home = homedir();
  if (process.platform === 'darwin') return join(home, 'Library', 'Application Support', 'hub-services');
  if (process.platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), 'hub-services');
  return join(env.XDG_DATA_HOME ?? join(home, '.local', 'share'), 'hub-services');
}

/**
 * What the kit needs of a service's entry in the catalogue (common/services.ts, which the kit does not
 * import): the service passes its entry in, so its name, prefix and default port are written once.
 */
export interface ServiceEntry {
  readonly name: string;
  readonly prefix: string;
  readonly port: number;
}

/**
 * HOST, PORT, DATA_DIR, LOG_LEVEL and BODY_LIMIT, which every service reads; its data folder is named after
 * it, and its body limit is its own (`bodyLimit.why`, what needs that much, goes into the help text).
 */
export function commonSettings(
  service: Pick<ServiceEntry, 'name' | 'port'>,
  bodyLimit: { fallback: string; why?: string },
) {
  return {
    host: setting('HOST', parse.loopbackHost(), '127.0.0.1', 'Address to listen on; loopback only.'),
    port: setting('PORT', parse.port(), String(service.port), `Port to listen on (default ${service.port}).`),
    dataDir: setting(
      'DATA_DIR',
      parse.text(),
      join(appDataDir(), service.name),
      'Folder holding this service\u2019s state.',
    ),
    logLevel: setting(
      'LOG_LEVEL',
      parse.logLevel(),
      'info',
      'Log level: fatal, error, warn, info, debug, trace or silent.',
    ),
    bodyLimit: setting(
      'BODY_LIMIT',
      parse.size(),
      bodyLimit.fallback,
      `Largest JSON body accepted${bodyLimit.why ? ` (${bodyLimit.why})` : ''}.`,
    ),
  };
}

/** IDENTITY_URL of a service that verifies identity's tokens: identity on this machine at its default port unless set. */
export function identityUrlSetting(identityPort: number, description: string) {
  return setting('IDENTITY_URL', parse.url(), `http://127.0.0.1:${identityPort}`, description);
}
