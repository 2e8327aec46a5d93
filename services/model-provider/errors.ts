import { STATUS_CODES } from 'node:http';
import type { Request, Response } from 'express';
import type { ErrorEnvelope } from '../kit/api.ts';
import { Problem } from '../kit/problem.ts';
import { ProviderErrorBody } from './shapes.ts';

/**
 * The one error type of the provider, rendered in the chat-completions error envelope
 * `{"error": {"message", "type", "param", "code"}}`. `message` always says what the caller can do.
 * `retry` sets `x-should-retry`, which OpenAI clients obey instead of their status-based default
 * (they retry 408, 409, 429 and 5xx): false where another attempt cannot help or costs a full run.
 * A kit Problem, so that the kit's error handler renders it in the envelope as it is.
 */
export class ProviderError extends Problem {
  override name = 'ProviderError';
  constructor(
    status: number,
    readonly code: string,
    message: string,
    readonly options: { type?: string; param?: string | null; retry?: boolean; retryAfterSeconds?: number } = {},
  ) {
    super(status, STATUS_CODES[status] ?? 'Error', message, { code });
    // The caller's sentence, as the envelope carries it (a Problem's message also names the status).
    this.message = message;
  }

  get type(): string {
    return this.options.type ?? defaultType(this.status);
  }

  envelope(): ProviderErrorBody {
    return { error: { message: this.message, type: this.type, param: this.options.param ?? null, code: this.code } };
  }
}

function defaultType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status === 503) return 'service_unavailable_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

const ROUTES =
  'GET /healthy, GET /ready, GET /v1/models, GET /v1/models/{model} and POST /v1/chat/completions (described at /openapi.json and /docs)';

/**
 * The kit's refusals in this service's words: its Host check (421 there) is 403 `host_not_allowed`
 * here, as the provider always answered; an unknown route names the four; the others keep the kit's
 * sentence under the code the kit gives them, a malformed request of any other kind being `invalid_request`.
 */
export function fromProblem(p: Problem, req: Request): ProviderError {
  if (p instanceof ProviderError) return p;
  if (p.status === 421) return new ProviderError(403, 'host_not_allowed', p.detail);
  if (p.status === 404)
    return new ProviderError(
      404,
      'not_found',
      `There is no route ${req.method} ${req.path.slice(0, 100)}; this service serves ${ROUTES}.`,
    );
  if (p.status === 413)
    return new ProviderError(
      413,
      'body_too_large',
      p.detail.replace(/; send less\.$/, '; raise MODELPROV_BODY_LIMIT or send less.'),
    );
  const kept = p.extra.code !== undefined && KEPT_CODES.has(p.extra.code) ? p.extra.code : undefined;
  return new ProviderError(
    p.status,
    kept ?? (p.status >= 500 ? 'internal_error' : p.status === 403 ? 'forbidden' : 'invalid_request'),
    p.detail,
  );
}

/** The kit's codes this service answers under the same name. */
const KEPT_CODES: ReadonlySet<string> = new Set([
  'invalid_json',
  'unsupported_media_type',
  'internal_error',
  'browser_request_refused',
]);

/**
 * The provider's Api's error envelope: every refusal, the kit's own included, as OpenAI's `{"error": {...}}`;
 * what Node refuses before any route (not HTTP/1.1, headers over 16 KB, too slow) in it too.
 */
export const providerEnvelope: ErrorEnvelope = {
  mediaType: 'application/json',
  schema: ProviderErrorBody,
  render(res: Response, p: Problem): void {
    const err = fromProblem(p, res.req);
    res.locals.refusal = err.code;
    if (err.options.retry !== undefined) res.set('x-should-retry', String(err.options.retry));
    if (err.options.retryAfterSeconds !== undefined) res.set('retry-after', String(err.options.retryAfterSeconds));
    res.status(err.status).json(err.envelope());
  },
  early(status: number, detail: string) {
    const code =
      status === 408
        ? 'request_timeout'
        : status === 431
          ? 'headers_too_large'
          : status === 503
            ? 'service_unavailable'
            : 'invalid_request';
    return {
      type: 'application/json; charset=utf-8',
      body: JSON.stringify(new ProviderError(status, code, detail).envelope()),
    };
  },
};

/** Every code the service answers with, and its status; the README's table is the same list. */
export const providerError = {
  invalidRequest: (message: string, param: string | null) =>
    new ProviderError(400, 'invalid_request', message, { param }),
  /** A member this provider cannot honour, given a value that asks for something: `message` says what to send instead. */
  unsupportedParameter: (param: string, message: string) =>
    new ProviderError(400, 'unsupported_parameter', message, { param }),
  /** The CLI's own words: "Prompt is too long" (its result's terminal_reason prompt_too_long). */
  contextLengthExceeded: (detail: string) =>
    new ProviderError(
      400,
      'context_length_exceeded',
      `The conversation is longer than the model's context window (the CLI: "${detail.slice(0, 200)}"). Send fewer or shorter messages.`,
      { param: 'messages' },
    ),
  toolsUnsupported: (param: string) =>
    new ProviderError(
      400,
      'tools_unsupported',
      'This provider runs the model with no tools and does not do function calling; send the request without tools, tool_choice, functions or tool messages.',
      { param },
    ),
  modelNotFound: (model: string, known: readonly string[]) =>
    new ProviderError(
      404,
      'model_not_found',
      `The model "${model.slice(0, 60)}" is not offered here; use one of ${known.join(', ')} (see GET /v1/models).`,
      {
        param: 'model',
      },
    ),
  notLockedDown: (message: string, retry: boolean) =>
    new ProviderError(503, 'not_locked_down', message, { retry, ...(retry ? { retryAfterSeconds: 2 } : {}) }),
  emptyReply: () =>
    new ProviderError(
      502,
      'empty_reply',
      'The CLI finished without any reply text; send the request again (an empty reply is never returned as an answer).',
    ),
  // Already asked twice: a client's own retries would spend two more full runs per attempt, so none.
  /** `when` says it happened after part of the reply was sent (it is then not asked for again). */
  toolCallReply: (when?: string) =>
    new ProviderError(
      502,
      'tool_call_reply',
      when
        ? `The model went on in tool-call syntax ${when}, although it has no tools; the reply is not complete. Rephrase the request so that it asks for a plain answer.`
        : 'The model answered with tool-call syntax twice although it has no tools; rephrase the request so that it asks for a plain answer.',
      { retry: false },
    ),
  notLoggedIn: () =>
    new ProviderError(
      401,
      'not_logged_in',
      'The CLI on this machine is not signed in; open a terminal, run the CLI once and sign in (/login), then send the request again.',
    ),
  /** `why` is the lookup's own detail, which already says what to install or set. */
  cliNotFound: (why: string) => new ProviderError(503, 'cli_not_found', why, { retry: false }),
  cliFailed: (why: string) =>
    new ProviderError(
      502,
      'cli_failed',
      `The CLI run failed: ${why} Send the request again; if it keeps failing, see the service's log.`,
    ),
  rateLimited: (why: string) =>
    new ProviderError(
      429,
      'rate_limited',
      `The CLI's account is rate- or usage-limited: ${why} Wait before sending more requests.`,
    ),
  timeout: (seconds: number) =>
    new ProviderError(
      504,
      'timeout',
      `The CLI did not answer within ${seconds} s and was stopped; send a shorter request or raise MODELPROV_TIMEOUT_SECONDS.`,
      {
        type: 'timeout_error',
        retry: false,
      },
    ),
  queueFull: (running: number, waiting: number) =>
    new ProviderError(
      429,
      'queue_full',
      `All ${running} CLI slots are busy and ${waiting} requests are already waiting; try again shortly.`,
      {
        retryAfterSeconds: 1,
      },
    ),
  shuttingDown: () =>
    new ProviderError(503, 'shutting_down', 'The service is stopping; send the request again once it has restarted.'),
};
