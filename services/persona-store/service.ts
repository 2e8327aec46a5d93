import { join } from 'node:path';
import { createTokenVerifier } from '../kit/auth.ts';
import { createLogger, type Logger } from '../kit/logger.ts';
import { listen, type RunningService } from '../kit/server.ts';
import { openDatabase } from '../kit/sqlite.ts';
import { createPersonaApp } from './app.ts';
import { loadPersonaConfig, PERSONA_AUDIENCE } from './config.ts';
import { startSweeper, sweep } from './forgetting.ts';
import { Personas } from './personas.ts';
import { personaMigrations } from './schema.ts';
import { createPolicySource } from './settings.ts';
import { PersonaSql } from './store.ts';
import { rememberVerifiedTokens } from './verified-tokens.ts';

export const DATABASE_FILE = 'persona-store.db';

/** Starts the persona store from its environment; the same call serves tests, headless and the desktop app. */
export async function startPersonaStore(env: NodeJS.ProcessEnv = process.env, logger?: Logger): Promise<RunningService> {
  const config = loadPersonaConfig(env);
  const log = logger ?? createLogger('persona-store', config.logLevel);
  const database = openDatabase(join(config.dataDir, DATABASE_FILE), personaMigrations);
  const sql = new PersonaSql(database.sqlite);
  const personas = new Personas(sql, { maxValueBytes: config.maxValueBytes, maxNoteChars: config.maxNoteChars, maxKeyLength: config.maxKeyLength });
  const verifier = rememberVerifiedTokens(createTokenVerifier({ identityUrl: config.identityUrl, audience: PERSONA_AUDIENCE }));
  const app = createPersonaApp({ logger: log, sqlite: database.sqlite, personas, policies: createPolicySource(config), verifier, bodyLimit: config.bodyLimit });
  // Grace periods that ended while the service was stopped end now.
  sweep(sql);
  const stopSweeper = startSweeper(sql, config.sweepIntervalSeconds, log);
  return listen({
    app,
    host: config.host,
    port: config.port,
    logger: log,
    onClose: async () => {
      stopSweeper();
      await database.close();
    },
  });
}
