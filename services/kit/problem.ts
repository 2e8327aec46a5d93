import { STATUS_CODES } from 'node:http';
/**
 * The one error type of the services: an RFC 9457 problem. `detail` always says what to do about it.
 * Thrown anywhere, rendered once by the app's error handler; never carries a stack to the caller.
 */
export class Problem extends Error {
  override name = 'Problem';
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    /** `code`: a stable name of the refusal for a service whose envelope carries codes (the provider); never rendered in problem+json. */
    readonly extra: {
      type?: string;
      headers?: Record<string, string>;
      members?: Record<string, unknown>;
      code?: string;
    } = {},
  ) {
    super(`${status} ${title}: ${detail}`);
  }

  toJSON(instance?: string): Record<string, unknown> {
    return {
      type: this.extra.type ?? 'about:blank',
      title: this.title,
      status: this.status,
      detail: this.detail,
      ...(instance ? { instance } : {}),
      ...(this.extra.members ?? {}),
    };
  }
}

export const problem = {
  badRequest: (detail: string, members?: Record<string, unknown>) =>
    new Problem(400, 'Bad Request', detail, { members }),
  /** RFC 6750 §3.1: a request that sent no credential gets the bare challenge; a rejected one, `invalid_token`. */
  unauthorized: (detail: string, credentialSent = true) =>
    new Problem(401, 'Unauthorized', detail, {
      headers: { 'WWW-Authenticate': credentialSent ? 'Bearer error="invalid_token"' : 'Bearer' },
    }),
  forbidden: (detail: string) => new Problem(403, 'Forbidden', detail),
  notFound: (detail: string) => new Problem(404, 'Not Found', detail),
  conflict: (detail: string, members?: Record<string, unknown>) => new Problem(409, 'Conflict', detail, { members }),
  /** RFC 9110 §13.1.1: an If-Match the resource no longer matches; `headers` carries its ETag now, when it has one. */
  preconditionFailed: (detail: string, members?: Record<string, unknown>, headers?: Record<string, string>) =>
    new Problem(412, 'Precondition Failed', detail, { members, headers }),
  tooLarge: (detail: string) => new Problem(413, 'Content Too Large', detail),
  unsupportedMedia: (detail: string) => new Problem(415, 'Unsupported Media Type', detail),
  unprocessable: (detail: string, members?: Record<string, unknown>) =>
    new Problem(422, 'Unprocessable Content', detail, { members }),
  tooMany: (detail: string, retryAfterSeconds: string) =>
    new Problem(429, 'Too Many Requests', detail, { headers: { 'Retry-After': retryAfterSeconds } }),
  unavailable: (detail: string) => new Problem(503, 'Service Unavailable', detail),
  badGateway: (detail: string) => new Problem(502, 'Bad Gateway', detail),
};

/** The problem+json body of an answer given before (or instead of) any route: Node's refusals, the connection bound, the supervisor's 503. */
export function earlyProblem(status: number, detail: string): { type: string; body: string } {
  return {
    type: 'application/problem+json',
    body: JSON.stringify({ type: 'about:blank', title: STATUS_CODES[status], status, detail }),
  };
}
