import type { Express } from 'express';
import { createApp } from '../kit/app.ts';
import type { Logger } from '../kit/logger.ts';
import { databaseAnswers, type Sqlite } from '../kit/sqlite.ts';
import { identityApi, type IdentityParts } from './routes.ts';

export interface IdentityAppParts extends IdentityParts {
  logger: Logger;
  sqlite: Sqlite;
  bodyLimit: string;
}

/** Builds identity's HTTP app from its parts (the kit's app, its routes, its probes), so a test can build it on a temp folder. */
export function createIdentityApp(parts: IdentityAppParts): Express {
  return createApp({
    logger: parts.logger,
    api: identityApi(parts),
    bodyLimit: parts.bodyLimit,
    probes: {
      checks: { database: () => databaseAnswers(parts.sqlite), keys: () => parts.keys.ready },
      explain: { database: 'the database does not answer', keys: 'no signing key is loaded' },
      readiness: 'Readiness: the database answers and a signing key is loaded',
    },
  });
}
