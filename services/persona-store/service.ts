import { join } from 'node:path';
import { createTokenVerifier } from '../kit/auth.ts';
import { SECRET_PREFIXES } from '../../common/secret-formats.ts';
import { createLogger, type Logger } from '../kit/logger.ts';
import { ServiceMetrics } from '../kit/metrics.ts';
import { serve, type RunningService } from '../kit/server.ts';
import { refuseRevokedSessions } from '../kit/revocation.ts';
import { rememberVerifiedTokens } from '../kit/verified-tokens.ts';
import { createPersonaApp } from './app.ts';
import { loadPersonaConfig, PERSONA_AUDIENCE } from './config.ts';
import { startSweeper, sweep } from './forgetting.ts';
import { CountedSql, personaCounters } from './metrics.ts';
import { Personas } from './personas.ts';
import { openEngine } from './engines/open.ts';
import { createPolicySource } from './settings.ts';
import { PersonaSql } from './store.ts';

export const DATABASE_FILE = 'persona-store.db';

export interface PersonaStoreOptions {
  /** Where every time the store writes comes from (entries, change log, grace periods, the sweeper); tests set it. */
  clock?: () => Date;
}

/** The running persona store, with what a test needs to see inside it and to do without waiting. */
export interface PersonaStore extends RunningService {
  /** What requests could grow in memory: both stay bounded whatever is sent (a test holds them to it). */
  held(): { preparedStatements: number; verifiedTokens: { entries: number; bytes: number; maxBytes: number } };
  /** Sweeps now, as the sweeper's timer does: destroys what the clock says is due; returns how many entries. */
  sweep(): Promise<number>;
}

/** Starts the persona store from its environment; the same call serves tests, headless and the desktop app. */
export async function startPersonaStore(
  env: NodeJS.ProcessEnv = process.env,
  logger?: Logger,
  options: PersonaStoreOptions = {},
): Promise<PersonaStore> {
  const config = loadPersonaConfig(env);
  const log = logger ?? createLogger('persona-store', config.logLevel, undefined, { secretPrefixes: SECRET_PREFIXES });
  const clock = options.clock ?? (() => new Date());
  const engine = await openEngine(config, join(config.dataDir, DATABASE_FILE));
  const sql = new PersonaSql(engine);
  const metrics = new ServiceMetrics('persona-store');
  const counters = personaCounters(metrics);
  // The operations write through a store that counts their changes; the sweeper's destructions are not writes.
  const personas = new Personas(
    new CountedSql(engine, counters),
    { maxValueBytes: config.maxValueBytes, maxNoteChars: config.maxNoteChars, maxKeyLength: config.maxKeyLength },
    clock,
  );
  const remembered = rememberVerifiedTokens(
    createTokenVerifier({ identityUrl: config.identityUrl, audience: PERSONA_AUDIENCE, keys: config.identity.keys }),
    { maxBytes: config.verifiedTokensBytes },
  );
  // A signature stays good until exp; whether the token's session credential still stands is asked of identity.
  const verifier = refuseRevokedSessions(remembered, {
    identity: config.identity.channel,
    recheckMs: config.sessionRecheckMs,
  });
  const app = createPersonaApp({
    logger: log,
    databaseAnswers: () => engine.answers(),
    personas,
    policies: createPolicySource(config),
    verifier,
    identity: config.identity.channel,
    bodyLimit: config.bodyLimit,
    metrics,
    counters,
  });
  // Grace periods that ended while the service was stopped end now.
  await sweep(sql, clock());
  const stopSweeper = startSweeper(sql, config.sweepIntervalSeconds, log, clock);
  const running = await serve(app, config, log, async () => {
    stopSweeper();
    await engine.close();
  });
  return {
    url: running.url,
    port: running.port,
    close: () => running.close(),
    held: () => ({ preparedStatements: sql.preparedStatements, verifiedTokens: remembered.held }),
    sweep: () => sweep(sql, clock()),
  };
}
