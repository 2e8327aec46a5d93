import type { Express, Response } from 'express';
import { createApp } from '../kit/app.ts';
import type { ServiceMetrics } from '../kit/metrics.ts';
import { mountHealthy, mountReadiness } from '../kit/probes.ts';
import { browserGuard, requireJson } from './browser-guard.ts';
import type { CliLocation } from './cli-binary.ts';
import { complete, type Completion, type CompletionDeps } from './completions.ts';
import { renderError } from './errors.ts';
import type { Lockdown } from './lockdown.ts';
import { modelList } from './models.ts';
import { ClientGone } from './run-slots.ts';
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
        res.json(modelList(deps.startedAt));
      });
      app.post('/v1/chat/completions', requireJson, async (req, res) => {
        const controller = new AbortController();
        res.on('close', () => {
          if (res.writableFinished) return;
          logger.warn({ req_id: res.locals.requestId as string, method: req.method, path: req.path }, 'client went away before the answer');
          controller.abort();
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
    },
  });
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
