import type { Express, NextFunction, Request, Response } from 'express';
import { createApp, DEFAULT_MAX_BODY_DEPTH, nestingExceeds } from '../kit/app.ts';
import { errorSummary } from '../kit/logger.ts';
import type { ServiceMetrics } from '../kit/metrics.ts';
import { mountHealthy, mountReadiness } from '../kit/probes.ts';
import { browserGuard, requireJson } from './browser-guard.ts';
import type { CliLocation } from './cli-binary.ts';
import { complete, type Completion, type CompletionDeps } from './completions.ts';
import { ProviderError, providerError, renderError } from './errors.ts';
import { DeltaStream, sendWhole } from './stream-events.ts';
import type { Lockdown } from './lockdown.ts';
import { isModelAlias, MODEL_ALIASES, modelEntry, modelList } from './models.ts';
import { ClientGone } from './run-slots.ts';
import type { ModelList, Readiness } from './shapes.ts';
import { parseCompletionRequest } from './translate.ts';

export interface ProviderAppDeps extends CompletionDeps {
  /** The app's counters (/metrics), shared with the completions' run counters. */
  metrics?: ServiceMetrics;
  version: string;
  bodyLimit: string;
  startedAt: number;
  lockdown: Lockdown;
  locate: () => CliLocation;
}

/** The readiness body (its shape: shapes.ts): 200 only when a completion would work right now. */
export function readiness(deps: Pick<ProviderAppDeps, 'lockdown' | 'locate' | 'slots' | 'stream'>): Readiness {
  const { lockdown } = deps;
  const where = deps.locate();
  // A binary that appeared since the last look (installed, or MODELPROV_CLI_BINARY's path created), or
  // another one than was probed, is probed now; until that probe answers, the state is pending and readiness 503.
  lockdown.noticeBinary(where);
  lockdown.recheckLogin();
  const cli: Readiness['checks']['cli'] = where.found ? { ok: true, path: where.path, source: where.source } : { ok: false, path: null, detail: where.detail };
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
  return { status: ready ? 'ready' : 'not_ready', ready, checks: { cli, lockdown: lockdownCheck, login }, runs, stream: deps.stream };
}

/**
 * The kit's app (request log, Host check, /metrics, JSON body with its limit, 404, one error handler)
 * with the provider's four routes, its browser guard, and every refusal in the chat-completions envelope.
 */
export function createProviderApp(deps: ProviderAppDeps): Express {
  const { logger } = deps;
  return createApp({
    logger,
    metrics: deps.metrics,
    bodyLimit: deps.bodyLimit,
    renderError,
    // Origin and Sec-Fetch-Site refusals for everything, before the body; then the four routes (anything
    // else, whatever its method, falls through to the kit's 404); the JSON media-type check only on the one POST route.
    guard: browserGuard,
    extraRoutes: (app) => {
      mountHealthy(app, { version: deps.version });
      // `?recheck=login`: the console's "re-check" after a person signed in; answers once that probe has.
      app.get('/ready', async (req, _res, next) => {
        if (req.query.recheck === 'login') await deps.lockdown.recheckLoginNow();
        next();
      });
      mountReadiness(app, () => {
        const body = readiness(deps);
        return { ready: body.ready, body };
      });
      app.get('/v1/models', (_req, res) => {
        res.json(modelList(deps.startedAt) satisfies ModelList);
      });
      app.get('/v1/models/:model', (req, res) => {
        const model = req.params.model;
        if (!isModelAlias(model)) throw providerError.modelNotFound(model, MODEL_ALIASES);
        res.json(modelEntry(model, deps.startedAt));
      });
      app.post('/v1/chat/completions', requireJson, refuseDeepBodies, async (req, res) => {
        const controller = new AbortController();
        res.on('close', () => {
          if (res.writableFinished) return;
          logger.warn({ req_id: res.locals.requestId as string, method: req.method, path: req.path }, 'client went away before the answer');
          controller.abort();
        });
        const request = parseCompletionRequest(req.body);
        const deltas = request.stream === true && deps.stream === 'deltas' ? new DeltaStream(res) : undefined;
        let unfollow: (() => void) | undefined;
        let completion: Completion;
        try {
          // The provider checks no key, but callers that present different ones never share a run or a failure.
          completion = await complete(deps, request, req.get('authorization') ?? '', controller.signal, (reply) => {
            if (deltas) unfollow = reply.follow((text) => deltas.text(reply, text));
          });
        } catch (err) {
          unfollow?.();
          if (err instanceof ClientGone) return;
          if (!deltas?.hasSent) throw err;
          // Part of the reply is out: the status is sent, so the stream ends with the error instead.
          const failure = err instanceof ProviderError ? err : toProviderError(err, logger);
          res.locals.refusal = failure.code;
          logger.warn({ req_id: res.locals.requestId as string, code: failure.code }, 'the run failed after part of its reply was sent; the stream ends with an error event');
          deltas.fail(failure);
          return;
        }
        unfollow?.();
        if (deltas?.hasSent) {
          if (!deltas.finish(completion)) logger.warn({ req_id: res.locals.requestId as string }, 'the CLI\u2019s final text does not continue the text it streamed; the streamed text stands');
        } else if (request.stream) sendWhole(res, completion);
        else res.json(completion);
      });
    },
  });
}

/**
 * The kit's nesting limit, which it applies after a service's own routes (the provider's all are): a body
 * nested deeper is refused before anything walks it (a 5,000-deep schema ran the validation out of stack).
 */
function refuseDeepBodies(req: Request, _res: Response, next: NextFunction): void {
  const body = req.body as unknown;
  if (nestingExceeds(body, DEFAULT_MAX_BODY_DEPTH)) {
    const member = typeof body === 'object' && body !== null && !Array.isArray(body) ? Object.entries(body).find(([, v]) => nestingExceeds(v, DEFAULT_MAX_BODY_DEPTH - 1))?.[0] : undefined;
    throw providerError.invalidRequest(
      `The JSON body nests arrays and objects more than ${DEFAULT_MAX_BODY_DEPTH} levels deep${member ? ` (in ${member})` : ''}; this service accepts at most ${DEFAULT_MAX_BODY_DEPTH}. Send flatter data.`,
      member ?? null,
    );
  }
  next();
}

/** An unexpected error after part of a reply was sent, logged as the kit logs one, and sent as the kit's 500 would be. */
function toProviderError(err: unknown, logger: ProviderAppDeps['logger']): ProviderError {
  logger.error({ err: errorSummary(err) }, 'unexpected error');
  return new ProviderError(500, 'internal_error', 'Something failed inside the service; try again, and if it keeps failing see its log.');
}
