/**
 * Who made a request, as the service proved it, for the `caller` label of its HTTP counters: the
 * app's own traffic (this console, the services' calls to each other, the supervisor's probes) apart
 * from a hub's. Never read from anything a caller chooses freely (a header, a user agent): only from a
 * credential the service verified, or the owner-only socket the request arrived on.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Request } from 'express';
import type { Principal } from './auth.ts';

/**
 * - `app`: the app's own: a request on the service's owner-only socket (`local-socket.ts`: the
 *   console and the services call identity there, the console the provider), a credential of purpose
 *   `owner` (the person's own: the console, the command line), a registered service's token (the
 *   persona store reading a person's settings at identity), or a probe (`/healthy`, `/ready`).
 * - `hub`: a verified credential that is not the person's own (purpose `hub`, or none said).
 * - `unverified`: nothing proven: no credential, one refused, or a route that takes none (the
 *   provider's). Whoever it is, it is not shown to be the app.
 */
export const CALLERS = ['app', 'hub', 'unverified'] as const;
export type Caller = (typeof CALLERS)[number];

const proven = new WeakMap<Request, Caller>();
const appSockets = new WeakSet<Socket>();

/** Records who a verified credential says made `req`: the person's own credential is the app's, any other a hub's. */
export function noteVerifiedCaller(req: Request, principal: Pick<Principal, 'purpose'>): void {
  proven.set(req, principal.purpose === 'owner' ? 'app' : 'hub');
}

/** Records that `req` carried a token of a service the service knows as the app's own (identity's register). */
export function noteAppCaller(req: Request): void {
  proven.set(req, 'app');
}

/** Every request that arrives on `server` is the app's: call it only for a server on an owner-only socket. */
export function servesTheAppOnly(server: Server): void {
  server.on('connection', (socket: Socket) => appSockets.add(socket));
}

/** What was proven of `req`'s caller: its channel first, then its credential; undefined when nothing was. */
export function provenCaller(req: Request): Caller | undefined {
  if (appSockets.has(req.socket)) return 'app';
  return proven.get(req);
}
