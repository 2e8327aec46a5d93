import { join } from 'node:path';
import { createTokenVerifier } from '../kit/auth.ts';
import { SECRET_PREFIXES } from '../../common/secret-formats.ts';
import { createLogger, type Logger } from '../kit/logger.ts';
import { serve, type RunningService } from '../kit/server.ts';
import { openDatabase, type Sqlite } from '../kit/sqlite.ts';
import { DEFAULT_VERIFIED_TOKENS_BYTES, rememberVerifiedTokens } from '../kit/verified-tokens.ts';
import { gatewayApp } from './app.ts';
import { loadRepohostConfig, REPOHOST_AUDIENCE } from './config.ts';
import { CredentialResolver } from './credential-resolver.ts';
import { Platform, type EtagCacheHeld } from './platform/index.ts';
import { SignalAddresses } from './signal-addresses.ts';
import { SignalSender } from './signals.ts';
import { gatewayMigrations, SubscriptionStore, type GatewayDatabase } from './store.ts';
import { Subscriptions } from './subscriptions.ts';

export interface RunningGateway extends RunningService {
  /** For tests and benchmarks in-process: the parts whose counters they read. */
  readonly parts: {
    platform: Platform;
    subscriptions: Subscriptions;
    signals: SignalSender;
    resolver: CredentialResolver;
    sqlite: Sqlite;
  };
  /** What the gateway holds in memory that requests can grow, each part within its own bound (for tests and the benchmark). */
  held(): GatewayHeld;
}

export interface GatewayHeld {
  /** Answers kept for ETag revalidation, all credentials together: `bytes` never exceeds `maxBytes` (REPOHOST_ETAG_CACHE_BYTES). */
  etagAnswers: EtagCacheHeld;
  /** Accepted tokens remembered by the kit, within its byte budget. */
  verifiedTokens: { entries: number; bytes: number; maxBytes: number };
  /** Resolved credentials (at most CREDENTIALS_KEPT) and confirmations (at most four times that). */
  credentials: { credentials: number; confirmations: number };
  /** Platform clients, one per credential (at most CLIENTS_KEPT). */
  platformClients: number;
  /** Credentials held for background sweeps (at most CREDENTIALS_KEPT). */
  sweepHolds: number;
}

/** Starts the gateway from its environment; the same call serves tests, headless and the desktop app. */
export async function startRepohostGateway(
  env: NodeJS.ProcessEnv = process.env,
  logger?: Logger,
): Promise<RunningGateway> {
  const config = loadRepohostConfig(env);
  const log =
    logger ?? createLogger('repohost-gateway', config.logLevel, undefined, { secretPrefixes: SECRET_PREFIXES });
  const database = openDatabase<GatewayDatabase>(join(config.dataDir, 'repohost-gateway.db'), gatewayMigrations);
  const store = new SubscriptionStore(database.db);
  await store.releaseInterrupted();
  const verifier = rememberVerifiedTokens(
    createTokenVerifier({ identityUrl: config.identityUrl, audience: REPOHOST_AUDIENCE, keys: config.identity.keys }),
    { maxBytes: DEFAULT_VERIFIED_TOKENS_BYTES },
  );
  const resolver = new CredentialResolver(
    config.identity.channel,
    config.identityServiceToken,
    config.credentialRecheckMs,
    log,
  );
  const platform = new Platform(
    config.platformUrl,
    config.writeSpacingMs,
    log,
    config.etagCacheBytes,
    config.platformTimeoutMs,
  );
  // The gateway's own port is never a signal's destination, whatever REPOHOST_SIGNAL_REFUSED_PORTS says.
  const signalAddresses = new SignalAddresses(config.signalUrlPrefixes, [
    ...config.signalRefusedPorts,
    ...(config.port ? [config.port] : []),
  ]);
  const signals = new SignalSender(
    store,
    { retryBaseMs: config.signalRetryBaseMs, attempts: config.signalAttempts },
    log,
    signalAddresses,
  );
  const subscriptions = new Subscriptions(
    store,
    resolver,
    platform,
    signals,
    { signalAddresses, credentialHoldMs: config.credentialHoldSeconds * 1000, sweepMs: config.sweepSeconds * 1000 },
    log,
  );
  // A credential found stale drops its client (token and ETag cache) too; the sweep's hold goes in Subscriptions.
  resolver.onStale((credential) => platform.forget(credential));
  if (!config.identityServiceToken)
    log.warn('REPOHOST_IDENTITY_SERVICE_TOKEN is not set; /v1 routes answer 503 until it is');
  const app = gatewayApp({
    logger: log,
    verifier,
    sqlite: database.sqlite,
    resolver,
    platform,
    subscriptions,
    platformUrl: config.platformUrl,
    bodyLimit: config.bodyLimit,
  });
  subscriptions.start();
  const running = await serve(app, config, log, async () => {
    await subscriptions.stop();
    await signals.stop();
    await database.close();
  });
  signalAddresses.refusedPorts.add(Number(new URL(running.url).port));
  const held = (): GatewayHeld => ({
    etagAnswers: platform.answers.held(),
    verifiedTokens: verifier.held,
    credentials: resolver.sizes,
    platformClients: platform.fingerprints().length,
    sweepHolds: subscriptions.holds,
  });
  return {
    ...running,
    close: running.close,
    parts: { platform, subscriptions, signals, resolver, sqlite: database.sqlite },
    held,
  };
}
