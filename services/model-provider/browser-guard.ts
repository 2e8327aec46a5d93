import type { NextFunction, Request, Response } from 'express';
import { parseHostHeader } from '../kit/host-check.ts';
import { ProviderError } from './errors.ts';

/** The host name of a Host header without its port: "127.0.0.1:8127" → "127.0.0.1", "[::1]:8127" → "::1". */
export function hostName(header: string | undefined): string {
  return parseHostHeader(header)?.name ?? '';
}

/**
 * Localhost is not a wall against browsers. The kit refuses a Host that is not loopback (DNS rebinding);
 * what it does not refuse is a request a browser marks with an Origin or as cross-site: a page posting a
 * "simple" text/plain request (CSRF), or a preflight (which carries an Origin). Mounted as the kit's
 * `guard`: after the Host check, for every method and path, before the body is read. No CORS headers.
 * The JSON-only rule is `requireJson`, on the one route with a body.
 */
export function browserGuard(req: Request, _res: Response, next: NextFunction): void {
  if (req.headers.origin !== undefined) {
    next(new ProviderError(403, 'browser_request_refused', 'Requests from web pages (with an Origin header) are refused; call this service from a local program, not a browser.'));
    return;
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'none') {
    next(new ProviderError(403, 'browser_request_refused', 'Cross-site browser requests are refused; call this service from a local program, not a browser.'));
    return;
  }
  next();
}

/**
 * POST /v1/chat/completions takes only an application/json body: a browser cannot send that without a
 * preflight (refused above), so a cross-site form or text/plain post never reaches a run. Other paths
 * and methods are answered by the router first (404), so this says 415 only where a body is read.
 */
export function requireJson(req: Request, _res: Response, next: NextFunction): void {
  if (!req.is('application/json')) {
    next(new ProviderError(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.'));
    return;
  }
  next();
}
