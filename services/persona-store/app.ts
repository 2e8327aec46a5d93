import type { Express, NextFunction, Request, Response } from 'express';
import { z } from 'zod';
import { createApp } from '../kit/app.ts';
import type { TokenVerifier } from '../kit/auth.ts';
import type { Logger } from '../kit/logger.ts';
import { mountProbes } from '../kit/probes.ts';
import { fastShape, worthSecretlint } from './credentials.ts';
import type { Personas } from './personas.ts';
import { personaApi } from './routes.ts';
import type { PolicySource } from './settings.ts';

export interface PersonaAppParts {
  logger: Logger;
  /** For /ready: the database answers (whichever engine holds the data). */
  databaseAnswers: () => boolean | Promise<boolean>;
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
    extraRoutes: (app) => {
      app.use(redactCredentialPaths);
      mountProbes(
        app,
        { database: parts.databaseAnswers, identity_keys: () => parts.verifier.keysAvailable() },
        {
          database: 'the database does not answer',
          identity_keys: 'the identity service\u2019s keys cannot be fetched, so no token could be verified; start the identity service or check PERSONA_IDENTITY_URL',
        },
      );
    },
  });
}

/**
 * A path segment can carry a credential (a field key is caller text). The request log line and the
 * problem's `instance` both use req.originalUrl, so a segment shaped like a credential is replaced
 * there; routing uses req.url and is unaffected.
 */
const NOTE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function redactCredentialPaths(req: Request, _res: Response, next: NextFunction): void {
  const [path, query] = req.originalUrl.split('?', 2) as [string, string | undefined];
  const segments = path.split('/');
  let changed = false;
  for (let i = 0; i < segments.length; i++) {
    let text = segments[i]!;
    try {
      text = decodeURIComponent(text);
    } catch {
      /* keep it as sent */
    }
    if (text.length >= 16 && !NOTE_ID.test(text) && (fastShape(text) || worthSecretlint(text))) {
      segments[i] = '[redacted]';
      changed = true;
    }
  }
  if (changed) req.originalUrl = segments.join('/') + (query === undefined ? '' : `?${query}`);
  next();
}
