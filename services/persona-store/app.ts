import type { Express, NextFunction, Request, Response } from 'express';
import { createApp } from '../kit/app.ts';
import type { TokenVerifier } from '../kit/auth.ts';
import type { IdentityChannel } from '../kit/identity-channel.ts';
import type { Logger } from '../kit/logger.ts';
import type { ServiceMetrics } from '../kit/metrics.ts';
import { fastShape, worthSecretlint } from './credential-screen.ts';
import type { PersonaCounters } from './metrics.ts';
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
  /** The one way to identity: /ready names it while it does not answer (every token is refused with 503 then). */
  identity: IdentityChannel;
  bodyLimit: string;
  /** The app's counters at GET /metrics (the kit's HTTP counters and the persona store's own). */
  metrics?: ServiceMetrics;
  /** Writes and recalls, counted at /metrics; absent, none are counted. */
  counters?: PersonaCounters;
}

/** Builds the persona store's HTTP app from its parts, so a test can build it on a temp folder. */
export function createPersonaApp(parts: PersonaAppParts): Express {
  return createApp({
    logger: parts.logger,
    api: personaApi(parts),
    bodyLimit: parts.bodyLimit,
    metrics: parts.metrics,
    probes: {
      checks: {
        database: parts.databaseAnswers,
        identity_keys: () => parts.verifier.keysAvailable(),
        identity: () => parts.identity.answers(),
      },
      explain: {
        database: 'the database does not answer',
        identity_keys:
          'the identity service\u2019s public keys are not at hand (it writes them into its data folder when it starts), so no token could be verified; start the identity service, or check PERSONA_IDENTITY_KEYS_FILE',
        identity: `the identity service does not answer on ${parts.identity.where}, so no session can be confirmed and every token is refused with 503; start the identity service, or check PERSONA_IDENTITY_SOCKET`,
      },
      readiness:
        'Readiness: the database answers, the identity service\u2019s keys are at hand and the identity service answers where it proves itself',
    },
    // Before the Host and token checks, which may answer (and log) a request before any route sees it.
    before: redactCredentialPaths,
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
