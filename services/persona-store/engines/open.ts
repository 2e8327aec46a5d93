import { readFileSync } from 'node:fs';
import { ConfigError } from '../../kit/config.ts';
import type { PersonaConfig } from '../config.ts';
import type { PersonaEngine } from './engine.ts';
import { openPostgresEngine, type PostgresOptions } from './postgres.ts';
import { openSqliteEngine } from './sqlite.ts';

/** PostgreSQL's connection options from the settings (the URL, pool, TLS and timeout). */
export function postgresOptions(config: PersonaConfig, url: string): PostgresOptions {
  let ca: string | undefined;
  if (config.databaseCaFile !== undefined) {
    try {
      ca = readFileSync(config.databaseCaFile, 'utf8');
    } catch (err) {
      throw new ConfigError(
        `PERSONA_DATABASE_CA_FILE names ${config.databaseCaFile}, which cannot be read (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}); give the path of the CA's PEM file.`,
      );
    }
  }
  return {
    url,
    poolSize: config.databasePoolSize,
    ssl: config.databaseTls === 'off' ? false : { rejectUnauthorized: config.databaseTls === 'verify', ca },
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    sharedAccounts: config.sharedAccounts,
  };
}

/** The engine the settings choose: PostgreSQL when PERSONA_DATABASE_URL is set, else the SQLite file. */
export async function openEngine(config: PersonaConfig, sqliteFile: string): Promise<PersonaEngine> {
  if (config.databaseUrl === undefined) return openSqliteEngine(sqliteFile);
  try {
    return await openPostgresEngine(postgresOptions(config, config.databaseUrl));
  } catch (err) {
    throw whyPostgresFailed(err, config.databaseUrl, config.databaseTls);
  }
}

/** Network failures: the server may come up (or the network), so another start may work. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  '57P03',
]);
/** The server's answers that a setting must change: the login, its password, the database, what the login may do. */
const NEEDS_A_SETTING: Record<string, string> = {
  '28P01': 'refused the password of login "{login}"; correct the login or password in PERSONA_DATABASE_URL',
  '28000':
    'refused login "{login}" ({reason}); correct PERSONA_DATABASE_URL, or ask the server\u2019s operator to let this login connect',
  '3D000':
    'has no database "{database}"; correct the database in PERSONA_DATABASE_URL, or ask the server\u2019s operator to create it',
  '42501':
    'does not let login "{login}" do what the store needs ({reason}); ask the server\u2019s operator to grant it',
};

/**
 * Why PostgreSQL could not be used at start, in words that name the setting and the server (host, port,
 * database) and never the password: a ConfigError (exit 78: a restart cannot fix it) for what a person
 * must change, a plain Error (exit 1: the app starts the store again) for a server that does not answer.
 */
export function whyPostgresFailed(err: unknown, url: string, tls: PersonaConfig['databaseTls']): Error {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.slice(1)) || decodeURIComponent(parsed.username);
  const login = decodeURIComponent(parsed.username);
  const server = `PostgreSQL at ${parsed.hostname}:${parsed.port || 5432}/${database} (PERSONA_DATABASE_URL)`;
  const password = decodeURIComponent(parsed.password);
  // The driver's and the server's words never hold the password; scrubbed all the same, as they may quote the URL.
  const reason = (err instanceof Error ? err.message : String(err))
    .replaceAll(password || '\u0000', '****')
    .replaceAll(url, '(PERSONA_DATABASE_URL)');
  // What migrate found (a login without CREATE, a newer schema) and an unreadable CA file.
  if (err instanceof ConfigError) return new ConfigError(`${server}: ${err.message}`);
  const code = (err as { code?: string } | undefined)?.code ?? '';
  const known = NEEDS_A_SETTING[code];
  if (known)
    return new ConfigError(
      `${server} ${known.replace('{login}', login).replace('{database}', database).replace('{reason}', reason)}.`,
    );
  if (UNREACHABLE.has(code) || /timeout|terminated unexpectedly|Connection terminated/i.test(reason)) {
    return new Error(
      `${server} does not answer (${code || reason}): start the server, or correct the host and port in PERSONA_DATABASE_URL. ` +
        'The store stops; the app starts it again a few times, then waits for you to start it from the tray or console.',
    );
  }
  if (/SSL|TLS|certificate/i.test(reason) || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
    return new ConfigError(
      `${server} and PERSONA_DATABASE_TLS=${tls} do not agree (${reason}); set PERSONA_DATABASE_TLS (and PERSONA_DATABASE_CA_FILE) to what the server offers.`,
    );
  }
  return new Error(`${server} could not be used at start: ${reason}`);
}
