import type { NextFunction, Request, Response } from 'express';
import { isLoopbackHost } from './config.ts';
import { Problem } from './problem.ts';

/** A Host header split into its name (lower case, IPv6 without brackets) and port; undefined when it is not one. */
export function parseHostHeader(header: string | undefined): { name: string; port?: number } | undefined {
  if (header === undefined) return undefined;
  const match = /^(?:\[([0-9a-f:.]+)\]|([^\s:[\]/@?#]+))(?::(\d{1,5}))?$/i.exec(header.trim());
  if (!match) return undefined;
  const name = (match[1] ?? match[2]!).toLowerCase();
  if (match[3] === undefined) return { name };
  const port = Number(match[3]);
  return port > 65535 ? undefined : { name, port };
}

/**
 * Whether a request's Host names this machine: a loopback name (127.x.x.x, ::1, localhost) with any
 * port, or one of `allowedHosts` ("id.example.com" with any port, "id.example.com:8443" with that one).
 * A missing or malformed Host is not allowed. Usable by any service, whatever its error envelope.
 */
export function isAllowedHost(header: string | undefined, allowedHosts: readonly string[] = []): boolean {
  const host = parseHostHeader(header);
  if (!host) return false;
  if (isLoopbackHost(host.name)) return true;
  return allowedHosts.some((entry) => {
    const allowed = parseHostHeader(entry);
    return (
      allowed !== undefined && allowed.name === host.name && (allowed.port === undefined || allowed.port === host.port)
    );
  });
}

/**
 * DNS rebinding: a web page can make the browser send its requests to 127.0.0.1 under the page's own
 * name, so every request whose Host is not this machine's is refused, before its body is read or any
 * route runs. 421 Misdirected Request says what happened: the request reached a server that does not
 * answer for that name.
 */
export function hostCheck(allowedHosts: readonly string[] = []) {
  const names = [
    '127.0.0.1',
    '[::1]',
    'localhost',
    ...allowedHosts.map((h) => parseHostHeader(h)?.name).filter((n) => n !== undefined),
  ];
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (isAllowedHost(req.headers.host, allowedHosts)) return next();
    const port = req.socket.localPort;
    next(
      new Problem(
        421,
        'Misdirected Request',
        `This service answers only requests addressed to ${names.join(', ')} in the Host header; ` +
          `call it at http://127.0.0.1${port ? `:${port}` : ''}/ (a web page reaching it under another name is refused).`,
      ),
    );
  };
}
