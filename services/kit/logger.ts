import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

export interface LoggerOptions {
  /**
   * The prefixes of every secret the app issues (`hubs_`, `hubsvc_`, …): an error message holding one is
   * logged with the rest masked. Each service passes `SECRET_PREFIXES` of common/secret-formats.ts, the
   * one list of them (the kit does not import common/).
   */
  secretPrefixes?: readonly string[];
}

/**
 * One structured logger per service, to stdout. Authorization headers, cookies and anything called
 * token, secret, password, value, content or body are redacted wherever they appear, so a careless
 * log call cannot leak a credential, a field value or a note body; an error is logged as its summary
 * (errorSummary), its messages masked of credentials, the app's own secrets among them.
 */
export function createLogger(
  service: string,
  level = 'info',
  destination?: DestinationStream,
  options: LoggerOptions = {},
): Logger {
  const shapes = credentialShapes(options.secretPrefixes ?? []);
  const ownSecret = secretsAfterPrefixes(options.secretPrefixes ?? []);
  const pinoOptions: pino.LoggerOptions = {
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
    // A call site may pass the error or its summary: summarised again here, with this service's own secrets masked.
    serializers: { err: (err: unknown) => summarise(err, 0, shapes) },
    // A line's own text members (a request's path, say) hold no secret of the app's either.
    ...(ownSecret ? { formatters: { log: (line: Record<string, unknown>) => withoutSecrets(line, ownSecret) } } : {}),
  };
  // Written synchronously: pino's default (asynchronous) stdout is flushed on exit by a loop that, when
  // the reader is gone (the supervisor killed), retries the failing write forever and the service never exits.
  return pino(pinoOptions, destination ?? pino.destination({ dest: 1, sync: true }));
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

type Shapes = readonly [RegExp, string][];

/** Credentials an error message may quote (a URL with user information, a header, a token): masked before logging. */
const CREDENTIAL_SHAPES: Shapes = [
  [/\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*/g, '[redacted jwt]'],
  // The platform's tokens, which the gateway carries.
  [/\b(gh[pousr]_|github_pat_)[\w+/=-]{8,}/g, '[redacted $1]'],
  [/\b(bearer|basic|token)\s+[\w.~+/=-]{8,}/gi, '$1 [redacted]'],
  [/\/\/[^/\s@]*@/g, '//[redacted]@'],
];

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** One of the app's secrets: a prefix and whatever token characters follow it, of any length; undefined without prefixes. */
function secretsAfterPrefixes(secretPrefixes: readonly string[]): RegExp | undefined {
  if (secretPrefixes.length === 0) return undefined;
  // Longest first, so that a prefix that begins another never masks only part of it.
  const prefixes = [...secretPrefixes].sort((a, b) => b.length - a.length).map(escaped);
  return new RegExp(`(${prefixes.join('|')})[\\w+/=%-]+`, 'g');
}

/** The shapes above and the app's own secrets. */
function credentialShapes(secretPrefixes: readonly string[]): Shapes {
  const own = secretsAfterPrefixes(secretPrefixes);
  return own ? [[own, '[redacted $1]'], ...CREDENTIAL_SHAPES] : CREDENTIAL_SHAPES;
}

/** A line whose text members hold one of the app's secrets, with each masked (the line itself is left as it is). */
function withoutSecrets(line: Record<string, unknown>, secret: RegExp): Record<string, unknown> {
  let masked: Record<string, unknown> | undefined;
  for (const [member, value] of Object.entries(line)) {
    if (typeof value !== 'string') continue;
    const text = value.replace(secret, '[redacted $1]');
    if (text !== value) (masked ??= { ...line })[member] = text;
  }
  return masked ?? line;
}

function masked(message: string, shapes: Shapes): string {
  let text = message.slice(0, MAX_MESSAGE * 2);
  for (const [shape, replacement] of shapes) text = text.replace(shape, replacement);
  return text.slice(0, MAX_MESSAGE);
}

/**
 * An error as a log line carries it: name (and class), code, message and cause, never a stack. The
 * logger's `err` serializer summarises again with the service's own secrets masked too, so a call site
 * may pass the error or this summary (summarising twice gives the same summary).
 */
export function errorSummary(err: unknown): ErrorSummary {
  return summarise(err, 0, CREDENTIAL_SHAPES);
}

function summarise(err: unknown, depth: number, shapes: Shapes): ErrorSummary {
  if (err === null || (typeof err !== 'object' && typeof err !== 'function'))
    return { name: 'NonError', message: masked(String(err), shapes) };
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
      typeof e.message === 'string'
        ? masked(e.message, shapes)
        : `a thrown ${isError ? 'error without a message' : 'object'}`,
  };
  if (e.cause !== undefined && depth < MAX_CAUSES) summary.cause = summarise(e.cause, depth + 1, shapes);
  return summary;
}
