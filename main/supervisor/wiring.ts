import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { SECRET_FORMATS } from '../../common/secret-formats.ts';
import { CLI_ENVIRONMENT_NAMES } from '../../services/model-provider/invocation.ts';
import { StreamMode } from '../../services/model-provider/shapes.ts';
import {
  IDENTITY_PLACES,
  PROVIDER_SOCKET,
  SERVICE_CATALOGUE,
  SERVICE_NAMES,
  type ServiceName,
  type WiredSetting,
} from '../../common/services.ts';

/**
 * What a service gets of the environment the app was started from, besides its own prefixed variables
 * and the wiring: what the system and its libraries need (finding programs, the user folder, the user
 * name, temporary files, locale and time zone, Windows' own folders and shell), and the network settings
 * a person sets for every program (proxies, in both spellings, and extra certificate authorities: the
 * gateway reaches GitHub or a GitHub Enterprise behind them). Nothing else of the person's shell reaches
 * a service: not another program's token, not NODE_OPTIONS (which would load code into it), not another
 * service's settings. PostgreSQL's own PG* variables are not passed either: the persona store's database
 * is PERSONA_DATABASE_URL alone (a password file in HOME, ~/.pgpass, still works).
 */
export const SYSTEM_ENVIRONMENT = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'TMPDIR',
  'TMP',
  'TEMP',
  'LANG',
  'LANGUAGE',
  'TZ',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  'NODE_USE_ENV_PROXY',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  // Windows
  'SystemRoot',
  'SystemDrive',
  'windir',
  'ComSpec',
  'PATHEXT',
  'APPDATA',
  'LOCALAPPDATA',
  'USERPROFILE',
  'USERNAME',
  'HOMEDRIVE',
  'HOMEPATH',
  'ProgramData',
  'ProgramFiles',
  'ProgramFiles(x86)',
] as const;

/** Whole families: locale categories (LC_ALL, LC_CTYPE, ...) and the XDG base folders (data, config, cache, runtime). */
export const SYSTEM_ENVIRONMENT_PREFIXES = ['LC_', 'XDG_'] as const;

/**
 * What a service needs beyond that: the provider runs the person's CLI, which finds its login through
 * the variables of its own allow-list (CLAUDE_CONFIG_DIR and the like; invocation.ts says why each).
 */
const SERVICE_ENVIRONMENT: Readonly<Record<ServiceName, readonly string[]>> = {
  identity: [],
  'persona-store': [],
  'repohost-gateway': [],
  'model-provider': CLI_ENVIRONMENT_NAMES,
};

/** Whether `name` of the parent's environment reaches this service (Windows compares names without regard to case). */
function passedThrough(service: ServiceName, name: string, platform: NodeJS.Platform): boolean {
  const caseless = platform === 'win32';
  const n = caseless ? name.toUpperCase() : name;
  const same = (listed: string) => (caseless ? listed.toUpperCase() : listed) === n;
  return (
    SYSTEM_ENVIRONMENT.some(same) ||
    SERVICE_ENVIRONMENT[service].some(same) ||
    SYSTEM_ENVIRONMENT_PREFIXES.some((prefix) => n.startsWith(prefix) && n.length > prefix.length)
  );
}

/** The gateway's service token towards identity: made once per install, kept owner-only in the data folder. */
export const GATEWAY_TOKEN_FILE = 'repohost-service-token';

/** A new service token, in the format the persona store refuses to keep (a file made before holds a bare one, still used as it is). */
export function newGatewayServiceToken(): string {
  const { prefix, bytes, encoding } = SECRET_FORMATS.gatewayServiceToken;
  return `${prefix}${randomBytes(bytes).toString(encoding)}`;
}

/** The persona store's service token towards identity (to read a person's settings there): made once per install, like the gateway's. */
export const PERSONA_SETTINGS_TOKEN_FILE = 'persona-settings-token';

export function gatewayServiceToken(dataDir: string): string {
  return serviceTokenIn(dataDir, GATEWAY_TOKEN_FILE);
}

export function personaSettingsToken(dataDir: string): string {
  return serviceTokenIn(dataDir, PERSONA_SETTINGS_TOKEN_FILE);
}

/** A service token kept in `<dataDir>/<name>`, owner-only: made the first time, read after. */
function serviceTokenIn(dataDir: string, name: string): string {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, name);
  if (!existsSync(file)) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${newGatewayServiceToken()}\n`);
      closeSync(fd);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const token = readFileSync(file, 'utf8').trim();
  if (token.length < 16)
    throw new Error(`${file} does not hold a service token; delete it and start again to make a new one.`);
  return token;
}

/** The app's settings that reach a service's environment; each applies when its service (re)starts. */
export const ServiceSettings = z.object({
  /** MODELPROV_STREAM of the provider. */
  providerStream: StreamMode.default('whole'),
});
export type ServiceSettings = z.infer<typeof ServiceSettings>;

export interface ServiceSettingsStore {
  get(): ServiceSettings;
  set(patch: Partial<ServiceSettings>): ServiceSettings;
}

/** Headless (`npm run serve`) keeps them here, in the data folder; the desktop app in its own settings. */
export const SETTINGS_FILE = 'settings.json';

/**
 * The settings in `<dataDir>/settings.json`: read at every get (a hand edit applies at the next restart);
 * a file that is missing, not JSON or holds a value that is not valid gives the defaults for what is wrong;
 * every write is the whole, checked object, written beside and renamed over (never half a file).
 */
export function settingsFile(dataDir: string): ServiceSettingsStore {
  const file = join(dataDir, SETTINGS_FILE);
  const read = (): ServiceSettings => {
    let stored: Record<string, unknown> = {};
    try {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
        stored = parsed as Record<string, unknown>;
    } catch {
      /* missing or not JSON: the defaults */
    }
    const settings = ServiceSettings.parse({});
    for (const [key, schema] of Object.entries(ServiceSettings.shape)) {
      const value = schema.safeParse(stored[key]);
      if (value.success) (settings as Record<string, unknown>)[key] = value.data;
    }
    return settings;
  };
  return {
    get: read,
    set(patch) {
      const next = ServiceSettings.parse({ ...read(), ...patch });
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      writeFileSync(`${file}.tmp`, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
      renameSync(`${file}.tmp`, file);
      return next;
    },
  };
}

/** What the supervisor wires into the services' environments. */
export interface Wiring {
  dataDir: string;
  identityUrl: string;
  /** Identity's public keys file and socket, in its data folder (`identityPlaces`). */
  identityKeysFile: string;
  identitySocket: string;
  gatewayToken: string;
  /** The persona store's token at identity's settings service (PERSONA_SETTINGS_API_TOKEN); absent: not wired. */
  settingsToken?: string;
  /** The other ports this app listens on (the headless console's). */
  appPorts?: Iterable<number>;
  providerStream?: StreamMode;
}

interface WiredContext {
  /** The service's `<prefix><key>` as the user set it (or undefined). */
  own: (key: string) => string | undefined;
  /** Whether the user set the service's `<prefix><key>` themselves (before any wiring). */
  userSet: (key: string) => boolean;
  /** Writes `<prefix><key>` where the user did not; `put` whatever the user did (merging is the caller's). */
  set: (key: string, value: string) => void;
  put: (key: string, value: string) => void;
  wiring: Wiring;
  placements: () => Placement[];
}

/** The name the gateway's service token is registered under at identity: the gateway's audience. */
const GATEWAY_REGISTRATION = SERVICE_CATALOGUE['repohost-gateway'].audience!;
/** The name the persona store's settings token is registered under at identity: its audience. */
const PERSONA_REGISTRATION = SERVICE_CATALOGUE['persona-store'].audience!;

/** How each wired setting is filled; which service gets which is the catalogue's `wired`. */
const WIRED: Readonly<Record<WiredSetting, (c: WiredContext) => void>> = {
  IDENTITY_URL: ({ set, wiring }) => set('IDENTITY_URL', wiring.identityUrl),
  // Identity's keys and socket are the app's own identity's, unless the user pointed the service at another identity.
  IDENTITY_KEYS_FILE: ({ set, userSet, wiring }) => {
    if (!['IDENTITY_URL', 'IDENTITY_KEY_THUMBPRINTS'].some(userSet)) set('IDENTITY_KEYS_FILE', wiring.identityKeysFile);
  },
  IDENTITY_SOCKET: ({ set, userSet, wiring }) => {
    if (!userSet('IDENTITY_URL')) set('IDENTITY_SOCKET', wiring.identitySocket);
  },
  IDENTITY_SERVICE_TOKEN: ({ set, wiring }) => set('IDENTITY_SERVICE_TOKEN', wiring.gatewayToken),
  // Identity's register gets the gateway's token beside the user's own, unless the user registered the gateway already.
  // So does the persona store's settings token (identity is its settings service).
  SERVICE_TOKENS: ({ own, put, wiring }) => {
    const pairs = own('SERVICE_TOKENS') ?? '';
    const names = new Set(pairs.split(',').map((pair) => pair.split('=')[0]?.trim()));
    const added = [
      ...(names.has(GATEWAY_REGISTRATION) ? [] : [`${GATEWAY_REGISTRATION}=${wiring.gatewayToken}`]),
      ...(names.has(PERSONA_REGISTRATION) || !wiring.settingsToken
        ? []
        : [`${PERSONA_REGISTRATION}=${wiring.settingsToken}`]),
    ];
    if (added.length > 0) put('SERVICE_TOKENS', [pairs, ...added].filter(Boolean).join(','));
  },
  // The person's own choices (forgetting, replaced values) are kept at identity, which the persona store reads as its
  // settings service; not where the user named a settings service or another identity themselves.
  // Both at once, with the base URL (one without the other would stop the persona store).
  SETTINGS_API_BASE_URL: ({ own, put, wiring }) => {
    if (!wiring.settingsToken || own('SETTINGS_API_BASE_URL') || own('SETTINGS_API_TOKEN') || own('IDENTITY_URL'))
      return;
    put('SETTINGS_API_BASE_URL', wiring.identityUrl);
    put('SETTINGS_API_TOKEN', wiring.settingsToken);
  },
  SETTINGS_API_TOKEN: () => undefined,
  // Signals never go to a port of this app (its services wherever the user moved them, the console); the user's own list is kept beside.
  SIGNAL_REFUSED_PORTS: ({ own, put, wiring, placements }) => {
    const theirs = (own('SIGNAL_REFUSED_PORTS') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const ours = [...placements().map((p) => p.port), ...(wiring.appPorts ?? [])].map(String);
    put('SIGNAL_REFUSED_PORTS', [...new Set([...theirs, ...ours])].join(','));
  },
  STREAM: ({ set, wiring }) => {
    if (wiring.providerStream) set('STREAM', wiring.providerStream);
  },
};

export interface Placement {
  host: string;
  port: number;
  dataDir: string;
}

/** Where a service listens and keeps its state: the user's own variables win, the supervisor's defaults otherwise. */
export function placement(name: ServiceName, dataDir: string, env: NodeJS.ProcessEnv): Placement {
  const { prefix, port } = SERVICE_CATALOGUE[name];
  const rawPort = env[`${prefix}PORT`];
  const parsedPort = rawPort ? Number(rawPort) : port;
  return {
    host: env[`${prefix}HOST`] || '127.0.0.1',
    // A bad value is passed on as it is below, so the service itself names the variable and exits 78.
    port: Number.isInteger(parsedPort) && parsedPort > 0 && parsedPort < 65536 ? parsedPort : port,
    dataDir: env[`${prefix}DATA_DIR`] || join(dataDir, name),
  };
}

/** Identity's public keys file and socket, in identity's data folder wherever the user placed it. */
export function identityPlaces(dataDir: string, env: NodeJS.ProcessEnv): { keysFile: string; socket: string } {
  const folder = placement('identity', dataDir, env).dataDir;
  return { keysFile: join(folder, IDENTITY_PLACES.keysFile), socket: join(folder, IDENTITY_PLACES.socket) };
}

/** The provider's socket, in its data folder wherever the user placed it. */
export function providerSocket(dataDir: string, env: NodeJS.ProcessEnv): string {
  return join(placement('model-provider', dataDir, env).dataDir, PROVIDER_SOCKET);
}

export function baseUrl(p: Pick<Placement, 'host' | 'port'>): string {
  const host = p.host.includes(':') ? `[${p.host}]` : p.host;
  return `http://${host}:${p.port}`;
}

/**
 * A service's environment, allow-listed: of the parent's environment only what the system needs
 * (`SYSTEM_ENVIRONMENT`, and the provider's CLI its own list) and the user's own variables with this
 * service's prefix; then the wiring (ports, data folders, identity URL, the gateway's service token, the
 * provider's stream mode from the settings) where the user did not set it. `appPorts` are the other ports
 * this app listens on (the headless console's): signals are refused there too.
 */
export function serviceEnv(
  name: ServiceName,
  parentEnv: NodeJS.ProcessEnv,
  wiring: Wiring,
  platform: NodeJS.Platform = process.platform,
): Record<string, string> {
  const { prefix } = SERVICE_CATALOGUE[name];
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(parentEnv)) {
    if (value === undefined) continue;
    if (key.startsWith(prefix) || passedThrough(name, key, platform)) env[key] = value;
  }
  const p = placement(name, wiring.dataDir, parentEnv);
  const own = (key: string) => env[prefix + key];
  const userSet = (key: string) => Boolean(parentEnv[prefix + key]);
  const put = (key: string, value: string) => {
    env[prefix + key] = value;
  };
  const set = (key: string, value: string) => {
    if (!own(key)) put(key, value);
  };
  set('HOST', p.host);
  set('PORT', String(p.port));
  set('DATA_DIR', p.dataDir);
  const placements = () => SERVICE_NAMES.map((n) => placement(n, wiring.dataDir, parentEnv));
  for (const wired of SERVICE_CATALOGUE[name].wired) WIRED[wired]({ own, userSet, set, put, wiring, placements });
  return env;
}
