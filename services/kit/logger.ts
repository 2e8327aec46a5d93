import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * One structured logger per service, to stdout. Authorization headers, cookies and anything called
 * token, secret, password, value, content or body are redacted wherever they appear, so a careless
 * log call cannot leak a credential, a field value or a note body.
 */
export function createLogger(service: string, level = 'info', destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name: service,
    level,
    base: { service },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        '*.authorization',
        '*.token',
        '*.secret',
        '*.password',
        '*.value',
        '*.content',
        '*.body',
        'token',
        'secret',
        'password',
        'value',
        'content',
        'body',
      ],
      censor: '[redacted]',
    },
    serializers: { err: errorSummary },
  };
  // Written synchronously: pino's default (asynchronous) stdout is flushed on exit by a loop that, when
  // the reader is gone (the supervisor killed), retries the failing write forever and the service never exits.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: true }));
}

/** What a log line says of an error: never a stack (it can carry values), nor a credential its message held. */
export interface ErrorSummary {
  name: string;
  /** The error's class when its name does not say it (a subclass that keeps the name "Error"). */
  class?: string;
  code?: string;
  message: string;
  cause?: ErrorSummary;
}

/** Causes beyond this depth are left out: the first few say why; a long chain is noise (or a loop). */
const MAX_CAUSES = 4;
const MAX_MESSAGE = 300;

/** Credentials an error message may quote (a URL with user information, a header, a token): masked before logging. */
const CREDENTIAL_SHAPES: [RegExp, string][] = [
  [/\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*/g, '[redacted jwt]'],
  [/\b(hubs|whsec|gh[pousr]|github_pat)_[\w+/=-]{8,}/g, '[redacted $1_]'],
  [/\b(bearer|basic|token)\s+[\w.~+/=-]{8,}/gi, '$1 [redacted]'],
  [/\/\/[^/\s@]*@/g, '//[redacted]@'],
];

function masked(message: string): string {
  let text = message.slice(0, MAX_MESSAGE * 2);
  for (const [shape, replacement] of CREDENTIAL_SHAPES) text = text.replace(shape, replacement);
  return text.slice(0, MAX_MESSAGE);
}

/**
 * An error as a log line carries it: name (and class), code, message and cause, never a stack. Also
 * the logger's `err` serializer, so a call site may pass the error or its summary (summarising twice
 * gives the same summary).
 */
export function errorSummary(err: unknown, depth = 0): ErrorSummary {
  if (err === null || (typeof err !== 'object' && typeof err !== 'function'))
    return { name: 'NonError', message: masked(String(err)) };
  const e = err as {
    name?: unknown;
    class?: unknown;
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    constructor?: { name?: unknown };
  };
  const isError = err instanceof Error;
  const name = typeof e.name === 'string' && (isError || e.name !== '') ? e.name : 'NonError';
  const ctor =
    isError && typeof e.constructor?.name === 'string'
      ? e.constructor.name
      : typeof e.class === 'string'
        ? e.class
        : undefined;
  const summary: ErrorSummary = {
    name,
    ...(ctor && ctor !== name ? { class: ctor } : {}),
    ...(typeof e.code === 'string' || typeof e.code === 'number' ? { code: String(e.code).slice(0, 60) } : {}),
    message:
      typeof e.message === 'string' ? masked(e.message) : `a thrown ${isError ? 'error without a message' : 'object'}`,
  };
  if (e.cause !== undefined && depth < MAX_CAUSES) summary.cause = errorSummary(e.cause, depth + 1);
  return summary;
}
