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

/** Errors are logged by name, code and message only: never a stack (it can carry values) nor a cause chain. */
export function errorSummary(err: unknown): { name: string; code?: string; message: string } {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { name: err.name, ...(typeof code === 'string' ? { code } : {}), message: err.message.slice(0, 300) };
  }
  return { name: 'NonError', message: String(err).slice(0, 300) };
}
