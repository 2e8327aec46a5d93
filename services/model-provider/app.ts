import { randomUUID } from 'node:crypto';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { errorSummary } from '../kit/logger.ts';
import { browserGuard, requireJson } from './browser-guard.ts';
import type { CliLocation } from './cli-binary.ts';
import { complete, type Completion, type CompletionDeps } from './completions.ts';
import { ProviderError, renderError } from './errors.ts';
import type { Lockdown } from './lockdown.ts';
import { modelList } from './models.ts';
import { ClientGone } from './run-slots.ts';
import { parseCompletionRequest } from './translate.ts';

export interface ProviderAppDeps extends CompletionDeps {
  version: string;
  bodyLimit: string;
  startedAt: number;
  lockdown: Lockdown;
  locate: () => CliLocation;
}

const ROUTES = 'GET /healthy, GET /ready, GET /v1/models and POST /v1/chat/completions';

/** The readiness body: 200 only when a completion would work right now. */
export function readiness(deps: Pick<ProviderAppDeps, 'lockdown' | 'locate' | 'slots'>) {
  const { lockdown } = deps;
  const where = deps.locate();
  // A binary that appeared since the last look (installed, or MODELPROV_CLI_BINARY's path created), or
  // another one than was probed, is probed now; until that probe answers, the state is pending and readiness 503.
  lockdown.noticeBinary(where);
  lockdown.recheckLogin();
  const cli = where.found ? { ok: true, path: where.path, source: where.source } : { ok: false, path: null, detail: where.detail };
  const lockdownCheck = {
    ok: lockdown.ok,
    state: lockdown.state,
    tools: lockdown.loaded.tools,
    mcp_servers: lockdown.loaded.mcp_servers,
    hooks: lockdown.loaded.hooks,
    probed_at: lockdown.probedAt ?? null,
    detail: lockdown.detail,
  };
  const login = {
    ok: lockdown.login !== 'not_signed_in',
    state: lockdown.login,
    ...(lockdown.login === 'not_signed_in' ? { detail: 'The CLI is not signed in; run it once in a terminal and sign in (/login).' } : {}),
  };
  const ready = cli.ok && lockdownCheck.ok && login.ok;
  const runs = { running: deps.slots.running, queued: deps.slots.queued, cap: deps.slots.cap, max_queue: deps.slots.maxQueue };
  return { status: ready ? 'ready' : 'not_ready', ready, checks: { cli, lockdown: lockdownCheck, login }, runs };
}

/** Four routes and nothing else; errors in the chat-completions envelope; refusals logged. */
export function createProviderApp(deps: ProviderAppDeps): Express {
  const { logger } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use((req, res, next) => {
    const started = process.hrtime.bigint();
    const id = randomUUID();
    res.on('finish', () => {
      const ms = Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100;
      const line = { req_id: id, method: req.method, path: req.originalUrl.split('?')[0], status: res.statusCode, ms };
      if (res.locals.refusal) logger.warn({ ...line, refusal: res.locals.refusal }, 'request refused');
      else if (res.statusCode >= 500) logger.error(line, 'request');
      else logger.info(line, 'request');
    });
    res.on('close', () => {
      if (!res.writableFinished) logger.warn({ req_id: id, method: req.method, path: req.originalUrl.split('?')[0] }, 'client went away before the answer');
    });
    next();
  });
  // Order: Host and Origin refusals for everything; then the four routes (anything else, whatever its
  // method, falls through to 404 not_found); the JSON media-type check only on the one POST route.
  app.use(browserGuard);

  app.get('/healthy', (_req, res) => {
    res.json({ status: 'ok', version: deps.version });
  });
  app.get('/ready', (_req, res) => {
    const body = readiness(deps);
    res.status(body.ready ? 200 : 503).json(body);
  });
  app.get('/v1/models', (_req, res) => {
    res.json(modelList(deps.startedAt));
  });
  app.post('/v1/chat/completions', requireJson, express.json({ limit: deps.bodyLimit, type: 'application/json', strict: false }), async (req, res) => {
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const request = parseCompletionRequest(req.body);
    let completion: Completion;
    try {
      // The provider checks no key, but callers that present different ones never share a run or a failure.
      completion = await complete(deps, request, req.get('authorization') ?? '', controller.signal);
    } catch (err) {
      if (err instanceof ClientGone) return;
      throw err;
    }
    if (request.stream) sendStream(res, completion);
    else res.json(completion);
  });

  app.use((req) => {
    throw new ProviderError(404, 'not_found', `There is no route ${req.method} ${req.path.slice(0, 100)}; this service serves ${ROUTES}.`);
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = toProviderError(err);
    if (!(err instanceof ProviderError) && e.status >= 500) logger.error({ err: errorSummary(err), path: req.path }, 'unexpected error');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    renderError(res, e);
  });
  return app;
}

/** The whole reply as server-sent events: text chunk, finish-reason chunk, usage chunk, [DONE]. */
function sendStream(res: Response, c: Completion): void {
  const base = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model };
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: c.choices[0].message.content }, logprobs: null, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }] },
    { ...base, choices: [], usage: c.usage },
  ];
  res.status(200).set({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.end(`${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`);
}

function toProviderError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  const e = err as { type?: string; limit?: number; status?: number };
  if (e?.type === 'entity.parse.failed') return new ProviderError(400, 'invalid_json', 'The body is not valid JSON; check its syntax.');
  if (e?.type === 'entity.too.large') {
    return new ProviderError(413, 'body_too_large', `The body is larger than the ${e.limit ?? ''} bytes this service accepts; raise MODELPROV_BODY_LIMIT or send less.`);
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new ProviderError(415, 'unsupported_media_type', 'Send the body as UTF-8 JSON.');
  }
  if (e?.status === 400 || e?.type === 'request.aborted') return new ProviderError(400, 'invalid_request', 'The request could not be read; send it again.');
  return new ProviderError(500, 'internal_error', 'Something failed inside the service; try again, and if it keeps failing see its log.');
}
