import type { NextFunction, Request, Response } from 'express';
import { ProviderError } from './errors.ts';

/**
 * POST /v1/chat/completions takes only an application/json body: a browser cannot send that without a
 * preflight, which the kit refuses (any request with an Origin, for an Api that takes no token), so a
 * cross-site form or text/plain post never reaches a run. Mounted on that route only, so other paths and
 * methods get the router's 404 and this says 415 only where a body is read.
 */
export function requireJson(req: Request, _res: Response, next: NextFunction): void {
  if (!req.is('application/json')) {
    next(
      new ProviderError(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.'),
    );
    return;
  }
  next();
}
