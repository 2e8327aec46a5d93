import { readFileSync } from 'node:fs';
import type { PersonaConfig } from '../config.ts';
import type { PersonaEngine } from './engine.ts';
import { openPostgresEngine, type PostgresOptions } from './postgres.ts';
import { openSqliteEngine } from './sqlite.ts';

/** PostgreSQL's connection options from the settings (the URL, pool, TLS and timeout). */
export function postgresOptions(config: PersonaConfig, url: string): PostgresOptions {
  return {
    url,
    poolSize: config.databasePoolSize,
    ssl:
      config.databaseTls === 'off'
        ? false
        : {
            rejectUnauthorized: config.databaseTls === 'verify',
            ca: config.databaseCaFile === undefined ? undefined : readFileSync(config.databaseCaFile, 'utf8'),
          },
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    sharedAccounts: config.sharedAccounts,
  };
}

/** The engine the settings choose: PostgreSQL when PERSONA_DATABASE_URL is set, else the SQLite file. */
export async function openEngine(config: PersonaConfig, sqliteFile: string): Promise<PersonaEngine> {
  if (config.databaseUrl !== undefined) return openPostgresEngine(postgresOptions(config, config.databaseUrl));
  return openSqliteEngine(sqliteFile);
}
