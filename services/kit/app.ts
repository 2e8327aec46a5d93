import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { PROBLEM_ENVELOPE, type Api } from './api.ts';
import { hostCheck } from './host-check.ts';
import { errorSummary, type Logger } from './logger.ts';
import { METRICS_PATH, routeTemplate, ServiceMetrics, UNMATCHED_ROUTE } from './metrics.ts';
import { Problem, problem } from './problem.ts';
import { documentProbes, mountProbes, type Probes } from './probes.ts';
import { ERROR_ENVELOPE, LISTEN_URL } from './server.ts';

/** What an app is built from (the kit's word for it is `parts`, see the README). */
export interface AppParts {
  logger: Logger;
  /** The service's routes; its OpenAPI document is served at /openapi.json and browsable at /docs. */
  api?: Api;
  /** Largest JSON body accepted, e.g. "1mb". */
  bodyLimit?: string;
  /** `/healthy` and `/ready` with these checks, documented in the Api's OpenAPI document when there is one; mounted before `extraRoutes`. */
  probes?: Probes;
  /**
   * Middleware every request meets before anything can answer it (the Host check, the token check):
   * what the log line and a problem's `instance` must never show, such as the persona store's redaction
   * of path segments shaped like a credential.
   */
  before?: RequestHandler;
  /** Routes and middleware that sit outside the Api (a service's own probes, streams, its own refusals); mounted before the API router. */
  extraRoutes?: (app: Express) => void;
  /**
   * Host names answered besides loopback ("id.example.com" with any port, "id.example.com:8443" with that
   * one), for a service that callers reach under another name; every other Host is refused with 421.
   */
  allowedHosts?: readonly string[];
  /** The base URL callers use when it is not the listen address: its host is answered, and the OpenAPI document names it as the server. */
  publicUrl?: string;
  /** Deepest nesting of arrays and objects a JSON body may have when it reaches a route (default 128). */
  maxBodyDepth?: number;
  /** The service's counters, served at GET /metrics (this machine only); made here, named after the logger's service, when not given. */
  metrics?: ServiceMetrics;
}

/**
 * A safety net, not a rule of any service: deeper than any document a person writes (and than a service's
 * own limit, which it enforces first in its own words), shallow enough that no recursive walk of a body
 * (schema validation, a service's rules) can run out of stack.
 */
export const DEFAULT_MAX_BODY_DEPTH = 128;

/**
 * The Express app every service builds: one log line per request (method, path without query, status,
 * time; never headers or bodies), a Host check before anything else (DNS rebinding), JSON bodies with a
 * limit, the probes, the routes' screens, 404 for unknown routes, and one error handler that turns
 * everything into a problem whose detail says what to fix.
 */
export function createApp(parts: AppParts): Express {
  const { logger } = parts;
  const envelope = parts.api?.errors ?? PROBLEM_ENVELOPE;
  const app = express();
  // `listen` answers what Node refuses before any route in the same envelope.
  app.locals[ERROR_ENVELOPE] = envelope;
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  const metrics = parts.metrics ?? new ServiceMetrics(String(logger.bindings().service ?? 'service'));
  app.locals.metrics = metrics;

  // First, so refusals of every kind (Host, body, 404) are counted too.
  app.use(metrics.countRequests);
  // The request line has fixed members (id, method, path, status, time, refusal title) and none the
  // logger's redaction looks for, so it skips that walk, which cost more than the rest of the line.
  const requestLog = logger.child({}, { redact: { paths: [] } });
  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    const id = randomUUID();
    res.locals.requestId = id;
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const line = {
        req_id: id,
        method: req.method,
        path: routeOf(req, parts.api),
        status: res.statusCode,
        ms: Math.round(ms * 100) / 100,
      };
      if (res.statusCode >= 500) requestLog.error({ ...line, refusal: res.locals.refusal }, 'request');
      else if (res.statusCode >= 400) requestLog.warn({ ...line, refusal: res.locals.refusal }, 'request refused');
      else requestLog.info(line, 'request');
    });
    next();
  });

  if (parts.before) app.use(parts.before);
  const publicHost = parts.publicUrl ? [new URL(parts.publicUrl).host] : [];
  app.use(hostCheck([...publicHost, ...(parts.allowedHosts ?? [])]));
  // Routes that take no token are open to whatever runs on this machine, a browser's pages included: those are refused.
  if (parts.api && !parts.api.takesTokens) app.use(refuseBrowserPages);

  app.get(METRICS_PATH, metrics.handler());
  // The callers' tokens before the body: a refused caller is answered without waiting for a byte of it.
  if (parts.api?.checksCallers) {
    const api = parts.api;
    app.use((req, res, next) =>
      api.callers(req, res, (err?: unknown) => next(err instanceof URIError ? undefined : err)),
    );
  }
  app.use(
    express.json({ limit: parts.bodyLimit ?? '1mb', type: ['application/json', 'application/*+json'], strict: false }),
  );

  if (parts.probes) {
    mountProbes(app, parts.probes.checks, parts.probes.explain);
    if (parts.api) documentProbes(parts.api.registry, parts.probes.readiness);
  }
  parts.extraRoutes?.(app);

  if (parts.api) {
    const api = parts.api;
    // The routes' screens (verified caller, then the route's own refusals) come before the nesting check and the
    // schemas; a path segment Express cannot decode is left to the route, which refuses it after the nesting check.
    app.use((req, res, next) => {
      if (!api.screensRoutes) return next();
      api.screening(req, res, (err?: unknown) => next(err instanceof URIError ? undefined : err));
    });
  }

  // After the service's own middleware (which may refuse deep bodies in its own words), before any route reads the body.
  const maxDepth = parts.maxBodyDepth ?? DEFAULT_MAX_BODY_DEPTH;
  app.use((req, _res, next) => {
    if (nestingExceeds(req.body, maxDepth)) {
      throw problem.badRequest(
        `The JSON body nests arrays and objects more than ${maxDepth} levels deep; this service accepts at most ${maxDepth}. Send flatter data.`,
      );
    }
    next();
  });

  if (parts.api) {
    const api = parts.api;
    let doc: object | undefined;
    app.get('/openapi.json', (_req, res) => {
      // Never from the request (its Host is the caller's word): the configured URL, else where `listen` listens.
      const url = parts.publicUrl ?? (app.locals[LISTEN_URL] as string | undefined);
      doc ??= api.document([{ url: url ?? '/' }]);
      res.json(doc);
    });
    mountDocs(app);
    // No route answers OPTIONS (no CORS anywhere): it gets the 404 below, not Express's automatic `Allow` answer.
    app.use((req, res, next) => (req.method === 'OPTIONS' ? next() : api.router(req, res, next)));
  }

  app.use((req) => {
    throw problem.notFound(
      `There is no route ${req.method} ${req.path}; see /openapi.json for the routes this service offers.`,
    );
  });

  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const p = toProblem(err);
    if (p.status >= 500 && !(err instanceof Problem))
      logger.error({ err: errorSummary(err), path: routeOf(req, parts.api) }, 'unexpected error');
    res.locals.refusal = p.title;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // Refused before its body arrived (a token, the Host): the connection closes rather than wait for the rest.
    if (bodyStillArriving(req)) res.set('Connection', 'close');
    envelope.render(res, p);
  });
  return app;
}

/** A request announced a body (a length or chunks) that has not all arrived. */
function bodyStillArriving(req: Request): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * What a log line names for a request: the declared path of the route that answers it
 * (`/v1/personas/{profile}/fields/{key}`), or the app's own fixed route (`/healthy`); else only the first
 * segment (`/v1/…`). Never the path as sent: its segments are a caller's data (a field's key names what
 * it holds, and a destroyed field must leave no trace, in the log files included).
 */
export function routeOf(req: Request, api: Api | undefined): string {
  // The route that answered, as the metrics name it; else the Api's route the path would reach (a refusal before routing).
  const matched = routeTemplate(req);
  if (matched !== UNMATCHED_ROUTE) return matched;
  const path = req.originalUrl.split('?')[0]!;
  const declared = api?.templateOf(req.method, path);
  if (declared) return declared;
  const first = /^\/[^/]*/.exec(path)?.[0] ?? '/';
  return first === path ? first : `${first}/\u2026`;
}

export function renderProblem(res: Response, p: Problem): void {
  PROBLEM_ENVELOPE.render(res, p);
}

/**
 * For an app whose routes take no token (the provider): no token stands between a web page and them,
 * so what a browser marks as sent by a page is refused, before the body is read. An Origin header (a
 * page's script or form posting, or a CORS preflight; no CORS headers are ever sent), or a
 * Sec-Fetch-Site other than `none` (typed or bookmarked) and `same-origin` (this service's own /docs
 * page loading its files and document; a same-origin script that posts still sends an Origin).
 */
function refuseBrowserPages(req: Request, _res: Response, next: NextFunction): void {
  if (req.headers.origin !== undefined) {
    throw coded(
      problem.forbidden(
        'Requests from web pages (with an Origin header) are refused; call this service from a local program, not a browser.',
      ),
      'browser_request_refused',
    );
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'none' && site !== 'same-origin') {
    throw coded(
      problem.forbidden(
        'Cross-site browser requests are refused; call this service from a local program, not a browser.',
      ),
      'browser_request_refused',
    );
  }
  next();
}

/** Maps body-parser and unexpected errors to problems; never exposes a stack or an internal message. */
export function toProblem(err: unknown): Problem {
  if (err instanceof Problem) return err;
  const e = err as { type?: string; status?: number; limit?: number };
  if (e?.type === 'entity.parse.failed')
    return coded(problem.badRequest('The body is not valid JSON; check its syntax.'), 'invalid_json');
  if (e?.type === 'entity.too.large') {
    return coded(
      problem.tooLarge(
        `The body is larger than the ${e.limit ?? ''} bytes this service accepts; send less.`.replace('  ', ' '),
      ),
      'body_too_large',
    );
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return coded(problem.unsupportedMedia('Send the body as UTF-8 JSON.'), 'unsupported_media_type');
  }
  // The router could not decode a path segment (%zz, or bytes that are not UTF-8, such as %ff or an encoded lone surrogate).
  if (err instanceof URIError) {
    return coded(
      problem.badRequest(
        'A path segment is not valid percent-encoded UTF-8; encode each segment with encodeURIComponent and send it again.',
      ),
      'invalid_path',
    );
  }
  if (e?.status === 400 || e?.type === 'request.aborted')
    return coded(problem.badRequest('The request could not be read; send it again.'), 'unreadable_request');
  return new Problem(
    500,
    'Internal Server Error',
    'Something failed inside the service; try again, and if it keeps failing see its log.',
    { code: 'internal_error' },
  );
}

/** The same problem with its `code` (what a service with a coded envelope answers). */
function coded(p: Problem, code: string): Problem {
  return new Problem(p.status, p.title, p.detail, { ...p.extra, code });
}

/** Whether a parsed JSON value nests deeper than `max`, found without recursion (the point is not to run out of stack). */
export function nestingExceeds(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > max) return true;
    for (const child of Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

const require = createRequire(import.meta.url);

/** Interactive docs from swagger-ui-dist's files on disk, so they work offline and under a strict CSP. */
function mountDocs(app: Express): void {
  // Only the folder: requiring the package itself executes its 1.7 MB browser bundle (about 40 MB and 0.3 s per service).
  const assets = dirname(require.resolve('swagger-ui-dist/package.json'));
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>API docs</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head><body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script><script src="/docs/init.js"></script></body></html>`;
  const csp =
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'";
  app.get(['/docs', '/docs/'], (_req, res) => {
    res.set('Content-Security-Policy', csp).type('html').send(page);
  });
  app.get('/docs/init.js', (_req, res) => {
    res
      .type('application/javascript')
      .send("window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui' });");
  });
  app.use('/docs/assets', express.static(assets, { index: false, maxAge: '1h' }));
}
