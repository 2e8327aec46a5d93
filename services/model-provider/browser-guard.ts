import type { NextFunction, Request, Response } from 'express';
import { isLoopbackHost } from '../kit/config.ts';
import { ProviderError, renderError } from './errors.ts';

/** The host name of a Host header without its port: "127.0.0.1:8127" → "127.0.0.1", "[::1]:8127" → "::1". */
export function hostName(header: string | undefined): string {
  if (!header) return '';
  const h = header.trim();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') > 0 ? h.indexOf(']') : undefined);
  const colon = h.indexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

/**
 * Localhost is not a wall against browsers. A page can reach loopback through DNS rebinding (its
 * own name, resolving to 127.0.0.1, in Host) or by posting a "simple" text/plain request (CSRF). So,
 * before anything else and for every method and path: only loopback names in Host, and no request
 * that a browser marks with an Origin or as cross-site (a preflight carries an Origin, so it is
 * refused too). No CORS headers. The JSON-only rule is `requireJson`, on the one route with a body.
 */
export function browserGuard(req: Request, res: Response, next: NextFunction): void {
  const refuse = (status: number, code: string, message: string) => renderError(res, new ProviderError(status, code, message));
  const host = hostName(req.headers.host);
  if (!host || !isLoopbackHost(host)) {
    refuse(403, 'host_not_allowed', 'This service answers only requests addressed to a loopback name (127.0.0.1, ::1 or localhost) in the Host header.');
    return;
  }
  if (req.headers.origin !== undefined) {
    refuse(403, 'browser_request_refused', 'Requests from web pages (with an Origin header) are refused; call this service from a local program, not a browser.');
    return;
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'none') {
    refuse(403, 'browser_request_refused', 'Cross-site browser requests are refused; call this service from a local program, not a browser.');
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
