import type { Express } from 'express';
import { createApp } from '../kit/app.ts';
import type { Logger } from '../kit/logger.ts';
import { databaseAnswers, type Sqlite } from '../kit/sqlite.ts';
import { gatewayApi, type GatewayParts } from './routes/index.ts';

export interface GatewayAppParts extends GatewayParts {
  logger: Logger;
  sqlite: Sqlite;
  platformUrl: string;
  bodyLimit: string;
}

/** Whether the platform answers at all (its API root; no credential, no quota). */
async function platformAnswers(platformUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${platformUrl}/`, {
      signal: AbortSignal.timeout(3_000),
      headers: { accept: 'application/vnd.github+json' },
    });
    await res.body?.cancel();
    return res.status < 500;
  } catch {
    return false;
  }
}

export function gatewayApp(parts: GatewayAppParts): Express {
  return createApp({
    logger: parts.logger,
    api: gatewayApi(parts),
    bodyLimit: parts.bodyLimit,
    probes: {
      checks: {
        identity_keys: () => parts.verifier.keysAvailable(),
        identity: () => parts.resolver.identity.answers(),
        platform: () => platformAnswers(parts.platformUrl),
        database: () => databaseAnswers(parts.sqlite),
        service_token: () => parts.resolver.configured,
      },
      explain: {
        identity_keys:
          'the identity service\u2019s public keys are not at hand (it writes them into its data folder when it starts), so no token could be verified; start the identity service, or check REPOHOST_IDENTITY_KEYS_FILE',
        identity: `the identity service does not answer on ${parts.resolver.identity.where}, so no platform credential can be resolved or confirmed and every call is refused with 503; start the identity service, or check REPOHOST_IDENTITY_SOCKET`,
        platform: `the platform at ${parts.platformUrl} cannot be reached (check REPOHOST_PLATFORM_URL and the network)`,
        database: 'the database does not answer (check REPOHOST_DATA_DIR)',
        service_token:
          'REPOHOST_IDENTITY_SERVICE_TOKEN is not set, so no credential can be resolved; set it to the token registered as repohost-api in the identity service\u2019s IDENTITY_SERVICE_TOKENS',
      },
      readiness:
        'Readiness: the identity service\u2019s keys are at hand and it answers where it proves itself, the platform answers, the database answers and REPOHOST_IDENTITY_SERVICE_TOKEN is set',
    },
  });
}
