import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import type { Principal, TokenVerifier } from './auth.ts';
import { noteVerifiedCaller } from './callers.ts';
import { Problem, earlyProblem, problem } from './problem.ts';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface Reply<T = unknown> {
  status?: number;
  body?: T;
  headers?: Record<string, string>;
}

export interface RouteContext<P, Q, B, H> {
  params: P;
  query: Q;
  body: B;
  headers: H;
  /** The verified caller; present on every route declared with `auth: true`. */
  principal: Principal;
  req: Request;
  res: Response;
}

/**
 * What a route's screen is given: the route's named path parameters as sent (decoded, not yet
 * validated), the verified caller, and the request (its raw body and headers).
 */
export interface ScreenContext {
  params: Record<string, string>;
  principal: Principal;
  req: Request;
}

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Response headers worth documenting (the ETag of a conditional write), by name. */
  headers?: Record<string, { description: string }>;
  /** With `stream: true` the route answers server-sent events instead; each event's `data` is one of these (documented as text/event-stream). */
  events?: z.ZodType;
}

/**
 * How a service's errors reach the caller, declared by its Api: the body's schema (every error
 * response in the document shows it), how a problem is written in it, and the body of an answer given
 * before any route (Node's refusals, the connection bound). problem+json unless a service's spec fixes
 * another envelope (the provider: OpenAI's `{"error": {...}}`).
 */
export interface ErrorEnvelope {
  mediaType: string;
  schema: z.ZodType;
  render(res: Response, problem: Problem): void;
  early(status: number, detail: string): { type: string; body: string };
}

export interface RouteSpec<P extends AnyObject, Q extends AnyObject, B extends z.ZodType, H extends AnyObject> {
  method: Method;
  /** OpenAPI-style path: `/v1/personas/{profile}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  /** Require a verified bearer token (default true). */
  auth?: boolean;
  params?: P;
  query?: Q;
  body?: B;
  headers?: H;
  /** The success responses; every answer's body is parsed through its schema, so no member outside it leaves. */
  responses: Record<number, ResponseSpec>;
  /** Error responses this route may answer, documented in the Api's envelope. */
  problems?: number[];
  /** What an error status means on this route, in the service's words (the kit's generic sentence otherwise). */
  problemText?: Record<number, string>;
  /**
   * false: `body` only documents the request, and the handler checks `req.body` itself, in its own words
   * (the provider answers 400 naming the member, as OpenAI does, where the kit says 422). Default true.
   */
  checkBody?: boolean;
  /**
   * For a route with `auth: false` that authenticates its caller otherwise (identity's routes for
   * registered services): the check of the caller's credential, which needs no body, run with the token
   * checks before the body is read; it throws the refusal.
   */
  checkCaller?: (req: Request) => Promise<void> | void;
  /**
   * Refusals that come before the route's own validation (the persona store's credential refusal): run
   * once the caller is verified, before the body's nesting check, the media type and the schemas, so
   * that what it refuses is refused in its words whatever else is wrong. Needs `auth`.
   */
  screen?: (ctx: ScreenContext) => Promise<void> | void;
  handler: (ctx: RouteContext<z.infer<P>, z.infer<Q>, z.infer<B>, z.infer<H>>) => Promise<Reply> | Reply;
}

/** The caller of a request as its route's screen found it: verified, or the refusal to answer in place of the route. */
type Screened = { operationId: string } & ({ principal: Principal } | { refusal: unknown });

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().meta({ description: 'What went wrong and what to do about it.' }),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details.' });

const PROBLEM_TEXT: Record<number, string> = {
  400: 'Malformed request (for example JSON that does not parse).',
  401: 'Missing or invalid bearer token.',
  403: 'Refused.',
  404: 'No such resource for this caller.',
  409: 'Conflicts with the current state.',
  412: 'If-Match no longer matches: the resource changed since it was read; the detail says what changed.',
  413: 'Body or value over a size limit.',
  415: 'Body is not JSON.',
  422: 'A member is missing or invalid; the detail names it.',
  429: 'Rate limited; see Retry-After.',
  502: 'An upstream answered with an error.',
  503: 'Not ready; the detail says what is missing.',
  504: 'An upstream did not answer in time; the detail names the setting that bounds the wait.',
};

/**
 * One service's HTTP contract: each route is declared once, with zod schemas that both validate the
 * request and produce `/openapi.json`. Handlers receive parsed input and return a reply; they never
 * write error bodies themselves.
 */
export class Api {
  readonly registry = new OpenAPIRegistry();
  readonly router: Router = express.Router();
  /**
   * The routes' screens, mounted by `createApp` after the service's own middleware and before the
   * body's nesting check and `router`: every route is matched here in the same order as there (so a
   * request meets the screen of the route that will answer it, found by Express, not by path words),
   * and only a route with a screen does anything (verifies its caller once, runs the screen).
   */
  readonly screening: Router = express.Router();
  /**
   * The callers' checks, mounted by `createApp` before the JSON body parser: every route that takes a
   * token verifies it here (and a route's `checkCaller` runs), so that a caller without a valid token is
   * refused before the body is read, and a body that never finishes cannot hold a refused caller's
   * connection. Matched like `screening`; the route and its screen use the principal found here.
   */
  readonly callers: Router = express.Router();
  private readonly operationIds = new Set<string>();
  /** Each route's path as declared, with a pattern of its own: what the request log names instead of the path sent. */
  private readonly templates: { method: string; pattern: RegExp; path: string }[] = [];
  private readonly screened = new WeakMap<Request, Screened>();
  /** Requests whose route's screen has run (or found the caller refused). */
  private readonly screenRan = new WeakSet<Request>();
  /** Requests whose route's `checkCaller` has passed. */
  private readonly callerChecked = new WeakSet<Request>();
  private screens = 0;
  private checkedCallers = 0;
  /** How this service's errors are written (problem+json unless the service gives its own). */
  readonly errors: ErrorEnvelope;

  constructor(
    private readonly info: { title: string; version: string; description: string },
    private readonly verifier?: Pick<TokenVerifier, 'verify'>,
    options: { errors?: ErrorEnvelope } = {},
  ) {
    this.errors = options.errors ?? PROBLEM_ENVELOPE;
    this.registry.registerComponent('securitySchemes', 'bearer', {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    });
  }

  /** The request's caller, verified, and noted as the app's or a hub's for the HTTP counters (callers.ts). */
  private async verifyCaller(req: Request): Promise<Principal> {
    const principal = await this.verifier!.verify(req.get('authorization'));
    noteVerifiedCaller(req, principal);
    return principal;
  }

  route<P extends AnyObject, Q extends AnyObject, B extends z.ZodType, H extends AnyObject>(
    spec: RouteSpec<P, Q, B, H>,
  ): void {
    if (this.operationIds.has(spec.operationId)) throw new Error(`operation id ${spec.operationId} declared twice`);
    this.operationIds.add(spec.operationId);
    const auth = spec.auth ?? true;
    if (auth && !this.verifier) throw new Error(`route ${spec.operationId} needs a token verifier`);
    if (spec.screen && !auth)
      throw new Error(`route ${spec.operationId} has a screen, which runs with the verified caller: it needs auth`);

    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      const content = {
        ...(r.schema ? { 'application/json': { schema: r.schema } } : {}),
        ...(r.events ? { 'text/event-stream': { schema: r.events } } : {}),
      };
      const headers = r.headers
        ? {
            headers: Object.fromEntries(
              Object.entries(r.headers).map(([name, h]) => [
                name,
                { description: h.description, schema: { type: 'string' } },
              ]),
            ),
          }
        : {};
      responses[status] =
        Object.keys(content).length > 0
          ? { description: r.description, ...headers, content }
          : { description: r.description, ...headers };
    }
    const checkBody = spec.checkBody ?? true;
    const described = spec.problemText ?? {};
    const problemStatuses = new Set([
      ...(spec.problems ?? []),
      ...(auth ? [401] : []),
      ...(spec.body ? [400, 413, 415, ...(checkBody ? [422] : [])] : []),
    ]);
    if (spec.params || spec.query || spec.headers) problemStatuses.add(422);
    for (const status of [...problemStatuses].sort()) {
      responses[String(status)] = {
        description: described[status] ?? PROBLEM_TEXT[status] ?? 'Problem.',
        content: { [this.errors.mediaType]: { schema: this.errors.schema } },
      };
    }
    this.registry.registerPath({
      method: spec.method,
      path: spec.path,
      operationId: spec.operationId,
      summary: spec.summary,
      description: spec.description,
      tags: spec.tags,
      security: auth ? [{ bearer: [] }] : [],
      request: {
        params: spec.params,
        query: spec.query,
        headers: spec.headers,
        body: spec.body ? { content: { 'application/json': { schema: spec.body } }, required: true } : undefined,
      },
      responses,
    });

    const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
    this.templates.push({
      method: spec.method.toUpperCase(),
      pattern: new RegExp(`^${spec.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}/?$`),
      path: spec.path,
    });
    const screen = async (req: Request): Promise<void> => {
      this.screenRan.add(req);
      let principal: Principal;
      const verified = this.screened.get(req);
      if (verified?.operationId === spec.operationId && 'principal' in verified) principal = verified.principal;
      else {
        try {
          principal = await this.verifyCaller(req);
        } catch (refusal) {
          // Answered by the route, after the checks that come before it (a caller without a token gets 401, never a screen's refusal).
          this.screened.set(req, { operationId: spec.operationId, refusal });
          return;
        }
        this.screened.set(req, { operationId: spec.operationId, principal });
      }
      // Named `{name}` parameters only (no wildcards), so each is one string.
      await spec.screen!({ params: { ...req.params } as Record<string, string>, principal, req });
    };
    const callerOf = async (req: Request): Promise<Principal> => {
      if (spec.checkCaller && !this.callerChecked.has(req)) await spec.checkCaller(req);
      if (!auth) return undefined as unknown as Principal;
      // An app that does not mount `screening` (an Api used on its own) still screens, just before validation.
      if (spec.screen && !this.screenRan.has(req)) await screen(req);
      const screened = this.screened.get(req);
      if (screened?.operationId !== spec.operationId) return this.verifyCaller(req);
      if ('refusal' in screened) throw screened.refusal;
      return screened.principal;
    };
    const handler = async (req: Request, res: Response) => {
      const principal = await callerOf(req);
      if (spec.body && !req.is('application/json')) {
        throw problem.unsupportedMedia('Send the body as JSON with "Content-Type: application/json".');
      }
      const params = parseInput(spec.params, req.params, 'path');
      const query = parseInput(spec.query, req.query, 'query');
      const headers = parseInput(spec.headers, req.headers, 'header');
      const body = spec.body && checkBody ? parseInput(spec.body, req.body, 'body') : undefined;
      const reply = await spec.handler({ params, query, headers, body, principal, req, res } as RouteContext<
        z.infer<P>,
        z.infer<Q>,
        z.infer<B>,
        z.infer<H>
      >);
      // Answered already (a stream), or the caller is gone: nothing more to write.
      if (res.headersSent || res.destroyed) return;
      const status = reply.status ?? 200;
      if (reply.headers) res.set(reply.headers);
      if (reply.body === undefined) {
        res.status(status).end();
        return;
      }
      const schema = spec.responses[status]?.schema;
      res.status(status).json(schema ? schema.parse(reply.body) : reply.body);
    };
    this.router[spec.method](expressPath, (req: Request, res: Response, next: NextFunction) => {
      handler(req, res).catch(next);
    });
    // Every route takes its place in both, so the first match is the route that will answer.
    if (auth || spec.checkCaller) this.checkedCallers += 1;
    this.callers[spec.method](expressPath, (req: Request, _res: Response, next: NextFunction) => {
      if (!auth && !spec.checkCaller) return next('router');
      const check = async () => {
        if (spec.checkCaller) await spec.checkCaller(req);
        this.callerChecked.add(req);
        // A refusal is thrown here, before the body: the route would answer the same after reading it.
        if (auth)
          this.screened.set(req, {
            operationId: spec.operationId,
            principal: await this.verifyCaller(req),
          });
      };
      check().then(() => next('router'), next);
    });
    if (spec.screen) this.screens += 1;
    this.screening[spec.method](expressPath, (req: Request, _res: Response, next: NextFunction) => {
      if (!spec.screen) return next('router');
      screen(req).then(() => next('router'), next);
    });
  }

  /**
   * The declared path of the route that answers `method path` (`/v1/personas/{profile}/fields/{key}`), first
   * match as the router matches; undefined when none does. The request log names this, never the path sent,
   * whose segments are a caller's data (a field's key, a profile, a note's id).
   */
  templateOf(method: string, path: string): string | undefined {
    return this.templates.find((t) => t.method === method && t.pattern.test(path))?.path;
  }

  /** Whether its routes need a token (an Api without a verifier has none that does). */
  get takesTokens(): boolean {
    return this.verifier !== undefined;
  }

  /** Whether any route checks its caller (a token, or its own `checkCaller`); an app whose routes do not skips `callers`. */
  get checksCallers(): boolean {
    return this.checkedCallers > 0;
  }

  /** Whether any route declared a screen (an app whose routes have none skips `screening` altogether). */
  get screensRoutes(): boolean {
    return this.screens > 0;
  }

  /** The OpenAPI 3.1 document of every declared route. */
  document(servers: { url: string }[] = []): object {
    return new OpenApiGeneratorV31(this.registry.definitions).generateDocument({
      openapi: '3.1.0',
      info: this.info,
      servers,
    });
  }
}

/** RFC 9457 problem details, the envelope of every service whose spec fixes no other. */
export const PROBLEM_ENVELOPE: ErrorEnvelope = {
  mediaType: 'application/problem+json',
  schema: ProblemSchema,
  render(res, p) {
    if (p.extra.headers) res.set(p.extra.headers);
    res
      .status(p.status)
      .type('application/problem+json')
      .send(JSON.stringify(p.toJSON(res.req.originalUrl.split('?')[0])));
  },
  early: earlyProblem,
};

function parseInput<S extends z.ZodType | undefined>(schema: S, input: unknown, where: string): unknown {
  if (!schema) return {};
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  throw problem.unprocessable(describeIssues(parsed.error, where), {
    errors: parsed.error.issues.map((i) => ({ location: where, member: memberPath(i.path), message: i.message })),
  });
}

function memberPath(path: readonly PropertyKey[]): string {
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.') || '(whole)';
}

/** "body.value_type: expected ..." – names the member and never echoes the value sent. */
export function describeIssues(error: z.ZodError, where: string): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${where} member ${memberPath(i.path)}: ${i.message}`)
    .join('; ')
    .concat('. Correct it and send the request again.');
}

export { Problem };
