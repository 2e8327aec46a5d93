import type { Express, NextFunction, Request, Response } from 'express';
import { z } from 'zod';
import { Api } from '../kit/api.ts';
import { createApp, DEFAULT_MAX_BODY_DEPTH, nestingExceeds } from '../kit/app.ts';
import { errorSummary } from '../kit/logger.ts';
import type { ServiceMetrics } from '../kit/metrics.ts';
import { requireJson } from './json-body.ts';
import type { CliLocation } from './cli-binary.ts';
import { complete, type CompletionParts } from './completions.ts';
import { ProviderError, providerEnvelope, providerError } from './errors.ts';
import { DeltaStream, sendWhole } from './stream-events.ts';
import type { Lockdown } from './lockdown.ts';
import { isModelAlias, MODEL_ALIASES, modelEntry, modelList } from './models.ts';
import { ClientGone } from './run-slots.ts';
import {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  Healthy,
  Model,
  ModelList,
  Readiness,
} from './shapes.ts';
import { parseCompletionRequest } from './translate.ts';

/** What the provider's app is built from (the kit's word: `parts`). */
export interface ProviderAppParts extends CompletionParts {
  /** The app's counters (/metrics), shared with the completions' run counters. */
  metrics?: ServiceMetrics;
  version: string;
  bodyLimit: string;
  startedAt: number;
  lockdown: Lockdown;
  locate: () => CliLocation;
}

/** The readiness body: 200 only when a completion would work right now. */
export function readiness(parts: Pick<ProviderAppParts, 'lockdown' | 'locate' | 'slots' | 'stream'>): Readiness {
  const { lockdown } = parts;
  const where = parts.locate();
  // A binary that appeared since the last look (installed, or MODELPROV_CLI_BINARY's path created), or
  // another one than was probed, is probed now; until that probe answers, the state is pending and readiness 503.
  lockdown.noticeBinary(where);
  lockdown.recheckLogin();
  const cli = where.found
    ? { ok: true as const, path: where.path, source: where.source }
    : { ok: false as const, path: null, detail: where.detail };
  const lockdownCheck = {
    ok: lockdown.ok,
    state: lockdown.state,
    tools: lockdown.loaded.tools,
    mcp_servers: lockdown.loaded.mcp_servers,
    hooks: lockdown.loaded.hooks,
    api_key_source: lockdown.loaded.api_key_source ?? null,
    probed_at: lockdown.probedAt ?? null,
    detail: lockdown.detail,
  };
  const login = {
    ok: lockdown.login !== 'not_signed_in',
    state: lockdown.login,
    ...(lockdown.login === 'not_signed_in'
      ? { detail: 'The CLI is not signed in; run it once in a terminal and sign in (/login).' }
      : {}),
  };
  const ready = cli.ok && lockdownCheck.ok && login.ok;
  const runs = {
    running: parts.slots.running,
    queued: parts.slots.queued,
    cap: parts.slots.cap,
    max_queue: parts.slots.maxQueue,
  };
  return {
    status: ready ? 'ready' : 'not_ready',
    ready,
    checks: { cli, lockdown: lockdownCheck, login },
    runs,
    stream: parts.stream,
  };
}

/** Named in the document (the shapes themselves are plain, as the console imports them). */
const READINESS = Readiness.meta({ id: 'Readiness' });
const MODEL = Model.meta({ id: 'Model' });
const MODEL_LIST = ModelList.meta({ id: 'ModelList' });

const COMPLETION_ERRORS: Record<number, string> = {
  400: 'invalid_json, invalid_request (`param` names the member), tools_unsupported.',
  401: 'not_logged_in: the CLI on this machine is not signed in.',
  403: 'host_not_allowed, browser_request_refused.',
  404: 'model_not_found.',
  413: 'body_too_large (MODELPROV_BODY_LIMIT).',
  415: 'unsupported_media_type: send Content-Type: application/json.',
  429: 'queue_full (Retry-After), rate_limited.',
  500: 'internal_error.',
  502: 'cli_failed, empty_reply, tool_call_reply (x-should-retry: false).',
  503: 'not_locked_down, cli_not_found, shutting_down.',
  504: 'timeout (MODELPROV_TIMEOUT_SECONDS).',
};

/**
 * The provider's routes, each declared once (its OpenAPI document at /openapi.json, browsable at /docs),
 * answering OpenAI's wire format and its error envelope. No token: the kit refuses browser pages instead.
 */
export function providerApi(parts: ProviderAppParts): Api {
  const api = new Api(
    {
      title: 'Chat-model provider',
      version: parts.version,
      description:
        'The CLI this machine is signed into, answering the OpenAI chat-completions wire format on loopback as a model, not an agent (no tools, one turn). No token; requests from web pages are refused. Errors are OpenAI error envelopes.',
    },
    undefined,
    { errors: providerEnvelope },
  );
  api.route({
    method: 'get',
    path: '/healthy',
    operationId: 'healthy',
    summary: 'Liveness: answers whenever the process is up, with the version; checks nothing',
    tags: ['probes'],
    auth: false,
    responses: { 200: { description: 'Up.', schema: Healthy } },
    handler: () => ({ body: { status: 'ok', version: parts.version } }),
  });
  api.route({
    method: 'get',
    path: '/ready',
    operationId: 'ready',
    summary: 'Readiness: the CLI found, its lockdown proven, signed in',
    description: '`?recheck=login` (the console\u2019s re-check after a person signed in) answers once that probe has.',
    tags: ['probes'],
    auth: false,
    // Any value is accepted (only `login` does anything), as one or several.
    query: z.object({
      recheck: z
        .union([z.string(), z.array(z.string())])
        .optional()
        .meta({ description: '`login`: probe the sign-in again first.' }),
    }),
    responses: {
      200: { description: 'A completion would work now.', schema: READINESS },
      503: { description: 'Not ready; the checks say why.', schema: READINESS },
    },
    handler: async ({ query }) => {
      if (query.recheck === 'login') await parts.lockdown.recheckLoginNow();
      const body = readiness(parts);
      return { status: body.ready ? 200 : 503, body };
    },
  });
  api.route({
    method: 'get',
    path: '/v1/models',
    operationId: 'listModels',
    summary: 'The four model aliases accepted',
    tags: ['models'],
    auth: false,
    responses: { 200: { description: 'OpenAI model list.', schema: MODEL_LIST } },
    handler: () => ({ body: modelList(parts.startedAt) }),
  });
  api.route({
    method: 'get',
    path: '/v1/models/{model}',
    operationId: 'retrieveModel',
    summary: 'One model alias',
    tags: ['models'],
    auth: false,
    params: z.object({ model: z.string() }),
    responses: { 200: { description: 'OpenAI model.', schema: MODEL } },
    problems: [404],
    problemText: { 404: 'model_not_found.' },
    handler: ({ params }) => {
      if (!isModelAlias(params.model)) throw providerError.modelNotFound(params.model, MODEL_ALIASES);
      return { body: modelEntry(params.model, parts.startedAt) };
    },
  });
  api.route({
    method: 'post',
    path: '/v1/chat/completions',
    operationId: 'createChatCompletion',
    summary: 'One completion, whole or as server-sent events',
    description:
      'OpenAI chat completions. Tools, function calling and n > 1 are refused; with `response_format` json_schema the answer is the structured output as a JSON string. The body is checked by the service itself: a member at fault is 400 invalid_request naming it in `param`, as OpenAI answers.',
    tags: ['chat'],
    auth: false,
    body: ChatCompletionRequest,
    checkBody: false,
    responses: {
      200: {
        description: 'A chat.completion, or with `stream: true` chat.completion.chunk events.',
        schema: ChatCompletion,
        events: ChatCompletionChunk,
      },
    },
    problems: Object.keys(COMPLETION_ERRORS).map(Number),
    problemText: COMPLETION_ERRORS,
    handler: async ({ req, res }) => {
      await answerCompletion(parts, req, res);
      return {};
    },
  });
  return api;
}

/** A completion, written by itself: a whole answer as JSON, a stream as server-sent events (whole or as the text comes). */
async function answerCompletion(parts: ProviderAppParts, req: Request, res: Response): Promise<void> {
  const { logger } = parts;
  const controller = new AbortController();
  res.on('close', () => {
    if (res.writableFinished) return;
    logger.warn(
      { req_id: res.locals.requestId as string, method: req.method, path: req.path },
      'client went away before the answer',
    );
    controller.abort();
  });
  const request = parseCompletionRequest(req.body);
  const deltas = request.stream === true && parts.stream === 'deltas' ? new DeltaStream(res) : undefined;
  let unfollow: (() => void) | undefined;
  let completion: ChatCompletion;
  try {
    // The provider checks no key, but callers that present different ones never share a run or a failure.
    completion = await complete(parts, request, req.get('authorization') ?? '', controller.signal, (reply) => {
      if (deltas) unfollow = reply.follow((text) => deltas.text(reply, text));
    });
  } catch (err) {
    unfollow?.();
    if (err instanceof ClientGone) return;
    if (!deltas?.hasSent) throw err;
    // Part of the reply is out: the status is sent, so the stream ends with the error instead.
    const failure = err instanceof ProviderError ? err : toProviderError(err, logger);
    res.locals.refusal = failure.code;
    logger.warn(
      { req_id: res.locals.requestId as string, code: failure.code },
      'the run failed after part of its reply was sent; the stream ends with an error event',
    );
    deltas.fail(failure);
    return;
  }
  unfollow?.();
  if (deltas?.hasSent) {
    if (!deltas.finish(completion))
      logger.warn(
        { req_id: res.locals.requestId as string },
        'the CLI\u2019s final text does not continue the text it streamed; the streamed text stands',
      );
  } else if (request.stream) sendWhole(res, completion);
  else res.json(completion);
}

/**
 * The kit's app (request log, Host check, browser refusals, /metrics, JSON body with its limit, 404, one
 * error handler) with the provider's routes, every refusal in the chat-completions envelope.
 */
export function createProviderApp(parts: ProviderAppParts): Express {
  return createApp({
    logger: parts.logger,
    metrics: parts.metrics,
    bodyLimit: parts.bodyLimit,
    api: providerApi(parts),
    // Only on the one POST route, before the kit's own checks: the JSON media type, then the nesting limit in this envelope.
    extraRoutes: (app) => {
      app.post('/v1/chat/completions', requireJson, refuseDeepBodies);
    },
  });
}

/**
 * The kit's nesting limit in this service's words, before the kit's own check: a body nested deeper is
 * refused before anything walks it (a 5,000-deep schema ran the validation out of stack), naming the member.
 */
function refuseDeepBodies(req: Request, _res: Response, next: NextFunction): void {
  const body = req.body as unknown;
  if (nestingExceeds(body, DEFAULT_MAX_BODY_DEPTH)) {
    const member =
      typeof body === 'object' && body !== null && !Array.isArray(body)
        ? Object.entries(body).find(([, v]) => nestingExceeds(v, DEFAULT_MAX_BODY_DEPTH - 1))?.[0]
        : undefined;
    throw providerError.invalidRequest(
      `The JSON body nests arrays and objects more than ${DEFAULT_MAX_BODY_DEPTH} levels deep${member ? ` (in ${member})` : ''}; this service accepts at most ${DEFAULT_MAX_BODY_DEPTH}. Send flatter data.`,
      member ?? null,
    );
  }
  next();
}

/** An unexpected error after part of a reply was sent, logged as the kit logs one, and sent as the kit's 500 would be. */
function toProviderError(err: unknown, logger: ProviderAppParts['logger']): ProviderError {
  logger.error({ err: errorSummary(err) }, 'unexpected error');
  return new ProviderError(
    500,
    'internal_error',
    'Something failed inside the service; try again, and if it keeps failing see its log.',
  );
}
