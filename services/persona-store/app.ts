import type { Express } from 'express';
import { z } from 'zod';
import { createApp } from '../kit/app.ts';
import type { TokenVerifier } from '../kit/auth.ts';
import type { Logger } from '../kit/logger.ts';
import { mountProbes } from '../kit/probes.ts';
import { databaseAnswers, type Sqlite } from '../kit/sqlite.ts';
import type { Personas } from './personas.ts';
import { personaApi } from './routes.ts';
import type { PolicySource } from './settings.ts';

export interface PersonaAppParts {
  logger: Logger;
  sqlite: Sqlite;
  personas: Personas;
  policies: PolicySource;
  verifier: TokenVerifier;
  bodyLimit: string;
}

/** Builds the persona store's HTTP app from its parts, so a test can build it on a temp folder. */
export function createPersonaApp(parts: PersonaAppParts): Express {
  const api = personaApi(parts);
  const probe = (path: string, operationId: string, summary: string) =>
    api.registry.registerPath({
      method: 'get',
      path,
      operationId,
      summary,
      tags: ['probes'],
      security: [],
      responses: {
        200: { description: 'OK.', content: { 'application/json': { schema: z.object({ status: z.string() }).passthrough() } } },
        ...(operationId === 'ready' ? { 503: { description: 'Not ready; the detail says what is missing.' } } : {}),
      },
    });
  probe('/healthy', 'healthy', 'Liveness: answers whenever the process is up; checks nothing');
  probe('/ready', 'ready', 'Readiness: the database answers and the identity service\u2019s keys are at hand');
  return createApp({
    logger: parts.logger,
    api,
    bodyLimit: parts.bodyLimit,
    extraRoutes: (app) =>
      mountProbes(
        app,
        { database: () => databaseAnswers(parts.sqlite), identity_keys: () => parts.verifier.keysAvailable() },
        {
          database: 'the database does not answer',
          identity_keys: 'the identity service\u2019s keys cannot be fetched, so no token could be verified; start the identity service or check PERSONA_IDENTITY_URL',
        },
      ),
  });
}
