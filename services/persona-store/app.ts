import type { Express, NextFunction, Request, Response } from 'express';
import { z } from 'zod';
import { createApp } from '../kit/app.ts';
import type { TokenVerifier } from '../kit/auth.ts';
import type { Logger } from '../kit/logger.ts';
import { mountProbes } from '../kit/probes.ts';
import { databaseAnswers, type Sqlite } from '../kit/sqlite.ts';
import { fastShape, refuseCredentials, stringsOf, worthSecretlint, type WrittenString } from './credentials.ts';
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
    extraRoutes: (app) => {
      app.use(redactCredentialPaths);
      app.use(refuseCredentialWrites(parts.verifier));
      mountProbes(
        app,
        { database: () => databaseAnswers(parts.sqlite), identity_keys: () => parts.verifier.keysAvailable() },
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

const WRITES = new Set(['POST', 'PUT', 'PATCH']);
/** The routes' own words: not caller text. */
const ROUTE_WORDS = new Set(['', 'v1', 'personas', 'fields', 'notes']);
/** How a path segment is named in a refusal, by the segment before it. */
const PATH_MEMBERS: Record<string, string> = { personas: 'profile', fields: 'key', notes: 'note_id' };

/**
 * Credential refusal for every write, in one place and one pass, before the route validates anything:
 * every string of the JSON body (member names too, members the route does not know included), every
 * path segment (a field key is caller text) and the Idempotency-Key header (it is stored). Running
 * before schema validation means a credential in a member with a length cap or a fixed form (a PEM
 * key in display_name, a token as language) is refused as a credential, naming the identity service,
 * rather than as too long; and before the size limits of values and notes. A request whose token does
 * not verify is left to the route, which answers 401: nothing is written either way.
 */
function refuseCredentialWrites(verifier: TokenVerifier) {
  const check = async (req: Request): Promise<void> => {
    try {
      await verifier.verify(req.get('authorization'));
    } catch {
      return;
    }
    const strings: WrittenString[] = [];
    const segments = req.path.split('/');
    for (let i = 1; i < segments.length; i++) {
      if (ROUTE_WORDS.has(segments[i]!)) continue;
      let text = segments[i]!;
      try {
        text = decodeURIComponent(text);
      } catch {
        /* checked as sent */
      }
      strings.push({ where: `path ${PATH_MEMBERS[segments[i - 1]!] ?? 'segment'}`, text });
    }
    const idempotencyKey = req.get('idempotency-key');
    if (idempotencyKey !== undefined) strings.push({ where: 'header Idempotency-Key', text: idempotencyKey });
    if (req.body !== undefined) stringsOf(req.body, 'body', strings);
    await refuseCredentials(strings);
  };
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (!WRITES.has(req.method) || !req.path.startsWith('/v1/')) return next();
    check(req).then(() => next(), next);
  };
}
