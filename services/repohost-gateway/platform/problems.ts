import { Problem, problem } from '../../kit/problem.ts';
import { isTimeout, PlatformTimeout } from './timed-fetch.ts';

/** Platform failures as the problems the caller reads: hidden = 404, limits = 429, no answer in time = 504; the platform's payload never passes through. */

/** What a platform call is about, for the problem detail the caller reads. */
export interface CallContext {
  profile: string;
  /** owner/name when the call is about one repository. */
  repo?: string;
  /** Reads normalise "not accessible" 403s to 404; writes keep them as 403. */
  write?: boolean;
  /** What was not found, when it is not the repository itself (a pull request, a job...). */
  thing?: string;
}

function header(err: unknown, name: string): string | undefined {
  const v = (err as { response?: { headers?: Record<string, unknown> } }).response?.headers?.[name];
  return v === undefined ? undefined : String(v);
}

function platformMessage(err: unknown): string {
  const data = (err as { response?: { data?: unknown } }).response?.data;
  const m = data && typeof data === 'object' ? (data as { message?: unknown }).message : undefined;
  return typeof m === 'string' ? m.slice(0, 200) : '';
}

/** GitHub's validation error codes (docs: "Client errors"), in words; `custom` carries its own message. */
const ERROR_CODES: Record<string, string> = {
  missing: 'does not exist',
  missing_field: 'is required',
  invalid: 'is not valid',
  already_exists: 'already exists',
  unprocessable: 'cannot be processed',
};

/**
 * The platform's message with what its `errors` say is wrong (their message, or the field and code), so
 * the caller learns what to correct; never an error's `value`, which echoes what was sent.
 */
function platformReason(err: unknown): string {
  const message = platformMessage(err).replace(/\.+$/, '');
  const data = (err as { response?: { data?: unknown } }).response?.data;
  const errors = data && typeof data === 'object' ? (data as { errors?: unknown }).errors : undefined;
  const reasons = (Array.isArray(errors) ? errors : []).slice(0, 5).flatMap((e: unknown) => {
    if (typeof e === 'string') return [e.slice(0, 200)];
    if (!e || typeof e !== 'object') return [];
    const { message: m, field, code } = e as { message?: unknown; field?: unknown; code?: unknown };
    if (typeof m === 'string' && m) return [m.slice(0, 200)];
    if (typeof field !== 'string' || !field) return [];
    const said = typeof code === 'string' ? (ERROR_CODES[code] ?? code) : 'is not valid';
    return [`${field.slice(0, 100)} ${said.slice(0, 100)}`];
  });
  if (reasons.length === 0) return message;
  return message ? `${message} (${reasons.join('; ')})` : reasons.join('; ');
}

function isRateLimit(err: unknown, status: number): boolean {
  if (status === 429) return true;
  if (status !== 403) return false;
  return (
    header(err, 'retry-after') !== undefined ||
    header(err, 'x-ratelimit-remaining') === '0' ||
    /rate limit/i.test(platformMessage(err))
  );
}

/** Seconds to wait, as GitHub documents: Retry-After, else until the reset, else a minute. */
function retryAfter(err: unknown): string {
  const after = header(err, 'retry-after');
  if (after && /^\d+$/.test(after)) return after;
  const reset = Number(header(err, 'x-ratelimit-reset'));
  if (header(err, 'x-ratelimit-remaining') === '0' && Number.isFinite(reset))
    return String(Math.max(0, Math.ceil(reset - Date.now() / 1000)) + 1);
  return '60';
}

export function notFoundProblem(ctx: CallContext): Problem {
  if (ctx.thing) {
    return problem.notFound(`${ctx.thing} was not found in ${ctx.repo ?? 'the repository'}; check the number or name.`);
  }
  return problem.notFound(
    `Repository ${ctx.repo ?? ''} was not found, or the connection of profile "${ctx.profile}" cannot see it; check the name, or grant the repository to that connection (GET /v1/me shows its reach).`,
  );
}

function timeoutProblem(err: unknown, ctx: CallContext): Problem {
  const ms = err instanceof PlatformTimeout ? err.ms : ((err as { cause?: PlatformTimeout }).cause?.ms ?? 0);
  const write = ctx.write
    ? ' The change may or may not have been made: read the current state before sending it again.'
    : '';
  return new Problem(
    504,
    'Gateway Timeout',
    `The platform did not answer within ${ms} ms (REPOHOST_PLATFORM_TIMEOUT_MS).${write} Try again shortly; if the platform is merely slow, raise REPOHOST_PLATFORM_TIMEOUT_MS.`,
  );
}

/** A 403 GitHub also answers for a repository the connection cannot see ("Resource not accessible ..."), not a rate limit. */
export function notAccessible(err: unknown): boolean {
  const status = (err as { status?: number }).status;
  return (
    status === 403 && !isRateLimit(err, status) && /not accessible|must have|permission/i.test(platformMessage(err))
  );
}

/** Turns a platform failure into the problem the caller reads; the platform's payload never passes through. */
export function platformProblem(err: unknown, ctx: CallContext): Problem {
  if (err instanceof Problem) return err;
  if (isTimeout(err)) return timeoutProblem(err, ctx);
  const status = (err as { status?: number }).status;
  if (typeof status !== 'number' || status === 500) {
    return problem.badGateway('The platform could not be reached or failed; try again shortly.');
  }
  if (isRateLimit(err, status)) {
    return problem.tooMany(
      `The platform\u2019s rate limit for the connection of profile "${ctx.profile}" is reached; wait the seconds in Retry-After and send the request again.`,
      retryAfter(err),
    );
  }
  if (status === 404 || (!ctx.write && notAccessible(err))) {
    return notFoundProblem(ctx);
  }
  if (status === 403) {
    return problem.forbidden(
      `The connection of profile "${ctx.profile}" may not do this${ctx.repo ? ` in ${ctx.repo}` : ''} (${platformMessage(err) || 'forbidden'}); grant it the needed permission on the platform.`,
    );
  }
  if (status === 401) {
    return problem.badGateway(
      `The platform refused the credential of profile "${ctx.profile}" even after a refresh; renew that connection at the identity service (PUT /v1/connections/${ctx.profile}).`,
    );
  }
  if (status === 409 || status === 405) {
    return problem.conflict(
      `The platform refused: ${platformReason(err) || 'conflict'}. Read the current state and try again.`,
    );
  }
  if (status === 422 || status === 400) {
    return problem.unprocessable(
      `The platform refused the request: ${platformReason(err) || 'validation failed'}. Correct it and try again.`,
    );
  }
  if (status === 410) {
    // GitHub's "Issues are disabled for this repo": a setting of the repository, which no retry changes.
    return new Problem(
      410,
      'Gone',
      `The platform says: ${platformReason(err) || 'gone'}. It is turned off or removed on the platform (for issues: turn on Issues in the repository\u2019s settings); sending the request again will not help.`,
    );
  }
  return problem.badGateway(`The platform answered ${status}; try again shortly.`);
}
