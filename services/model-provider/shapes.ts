import { z } from 'zod';
import { MODEL_ALIASES } from './models.ts';

/**
 * What crosses HTTP, one zod schema per shape: the OpenAI chat-completions wire format this service
 * speaks (request, answer, streamed chunk, error envelope), its model list, and its probes. The request
 * schema is also what `translate.ts` validates with; the answers are what the OpenAPI document shows.
 */

const textPart = z.object({ type: z.literal('text'), text: z.string() }).loose();
const content = z.union([z.string(), z.array(z.object({ type: z.string() }).loose()), z.null()]);
const message = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function'], {
      message: 'must be one of system, developer, user, assistant',
    }),
    content: content.optional().meta({
      description: 'A string, or an array of `text` parts (joined by a newline); other part types are refused.',
    }),
    tool_calls: z.unknown().optional(),
    function_call: z.unknown().optional(),
  })
  .loose()
  .meta({
    description:
      'system and developer messages become the system prompt; tool and function messages, and tool_calls, are refused (400 tools_unsupported).',
  });

/** The `text` part of a message's content array (the only part type accepted). */
export const TextPart = textPart;

/** A member this service does not honour, accepted only at the value that asks for nothing (`allowed` says which). */
const refusedUnless = <T extends z.ZodType>(schema: T, allowed: string) =>
  schema.nullish().meta({ description: `Refused (400 unsupported_parameter) unless ${allowed}.` });
/** A member that does not change the answer: accepted, and nothing is done with it. */
const noEffect = <T extends z.ZodType>(schema: T, why: string) =>
  schema.nullish().meta({ description: `Accepted; it changes nothing here: ${why}` });

/**
 * Every member of a chat-completions request this service accepts, each with what it does here (the
 * README's "Request members" lists the same). A member not listed is refused (400 unsupported_parameter
 * naming it), as OpenAI refuses an unrecognized one: nothing that could change the answer is ignored.
 */
export const ChatCompletionRequest = z
  .object({
    model: z
      .string()
      .optional()
      .meta({ description: `One of ${MODEL_ALIASES.join(', ')}; absent means MODELPROV_DEFAULT_MODEL.` }),
    messages: z.array(message).min(1, 'must hold at least one message'),
    stream: z
      .boolean()
      .nullish()
      .meta({ description: 'true: server-sent events of chat.completion.chunk, as MODELPROV_STREAM says.' }),
    stream_options: z
      .object({ include_usage: z.boolean().nullish(), include_obfuscation: z.boolean().nullish() })
      .loose()
      .nullish()
      .meta({
        description:
          'Accepted; a stream always ends with its usage chunk (`choices: []`), as if include_usage were true.',
      }),
    n: z.number().int().nullish().meta({ description: 'Must be 1 (one choice per request).' }),
    response_format: z
      .object({
        type: z.enum(['text', 'json_object', 'json_schema'], { message: 'must be text, json_object or json_schema' }),
        json_schema: z
          .object({ name: z.string().optional(), schema: z.record(z.string(), z.unknown()).optional() })
          .loose()
          .optional(),
      })
      .loose()
      .nullish()
      .meta({
        description:
          'json_schema (with a schema) or json_object: the answer is the structured output, as a JSON string.',
      }),
    stop: z
      .union([z.string(), z.array(z.string())])
      .nullish()
      .meta({
        description:
          'A string or up to 4: the reply ends before the first occurrence of any (finish_reason stop) and the run is stopped there.',
      }),
    max_completion_tokens: z
      .number()
      .int()
      .nullish()
      .meta({ description: 'At least 1: the reply is at most that many tokens; cut there, finish_reason is length.' }),
    max_tokens: z
      .number()
      .int()
      .nullish()
      .meta({ description: 'As max_completion_tokens (the smaller of the two applies).' }),
    temperature: z.number().nullish().meta({
      description:
        'haiku: 0 to 1, passed to the model. sonnet, opus, fable take no sampling setting: only 1 (the default) is accepted.',
    }),
    top_p: z
      .number()
      .nullish()
      .meta({ description: 'As temperature (0 to 1 for haiku; not both with a temperature).' }),
    reasoning_effort: z.string().nullish().meta({
      description: 'low, medium, high or xhigh: the CLI\u2019s effort level (sonnet, opus, fable); refused for haiku.',
    }),
    logprobs: refusedUnless(z.boolean(), 'false: the CLI reports no token probabilities'),
    top_logprobs: refusedUnless(z.number().int(), '0'),
    frequency_penalty: refusedUnless(z.number(), '0 (the model takes no penalties)'),
    presence_penalty: refusedUnless(z.number(), '0 (the model takes no penalties)'),
    logit_bias: refusedUnless(z.record(z.string(), z.number()), 'empty'),
    seed: refusedUnless(z.number().int(), 'absent: the model cannot be asked to sample deterministically'),
    modalities: refusedUnless(z.array(z.string()), '["text"]'),
    audio: refusedUnless(z.unknown(), 'absent (text only)'),
    verbosity: refusedUnless(z.string(), 'absent'),
    web_search_options: refusedUnless(z.unknown(), 'absent (the model has no tools)'),
    moderation: refusedUnless(z.unknown(), 'absent'),
    tools: z.unknown().optional().meta({ description: 'Refused unless empty: the model runs with no tools.' }),
    tool_choice: z.unknown().optional().meta({ description: 'Refused unless "none".' }),
    functions: z.unknown().optional().meta({ description: 'Refused unless empty.' }),
    function_call: z.unknown().optional().meta({ description: 'Refused unless "none".' }),
    parallel_tool_calls: noEffect(z.boolean(), 'there are no tools to call.'),
    prediction: noEffect(z.unknown(), 'a latency hint; the answer is the same.'),
    service_tier: noEffect(z.string(), 'every run goes through the CLI\u2019s own login.'),
    store: noEffect(z.boolean(), 'nothing is stored.'),
    metadata: noEffect(z.record(z.string(), z.string()), 'nothing is stored.'),
    user: noEffect(z.string(), 'an end-user id for abuse monitoring; nothing here uses it.'),
    safety_identifier: noEffect(z.string(), 'as user.'),
    prompt_cache_key: noEffect(z.string(), 'the CLI caches its prompts by itself.'),
    prompt_cache_retention: noEffect(z.string(), 'the CLI caches its prompts by itself.'),
    prompt_cache_options: noEffect(z.unknown(), 'the CLI caches its prompts by itself.'),
  })
  .loose()
  .meta({
    id: 'ChatCompletionRequest',
    description:
      'OpenAI chat-completions request. Every member listed is honoured, accepted where it changes nothing, or refused in words; any other member is refused (400 unsupported_parameter).',
  });

/** The request members this service knows (any other is refused). */
export const REQUEST_MEMBERS: ReadonlySet<string> = new Set(Object.keys(ChatCompletionRequest.shape));

export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** What a reply cost, in OpenAI's words: the whole answer's `usage`, and the last chunk's of a stream. */
export const Usage = z
  .object({
    prompt_tokens: z.number().int().meta({ description: 'Input, cache reads and cache writes.' }),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    prompt_tokens_details: z.object({ cached_tokens: z.number().int() }),
  })
  .meta({ id: 'Usage' });
export type Usage = z.infer<typeof Usage>;

/** How a reply ends: `stop` (finished, or at a stop sequence), `length` (cut at max_tokens). */
export const FinishReason = z.enum(['stop', 'length']).meta({ description: 'length: cut at max_tokens.' });
export type FinishReason = z.infer<typeof FinishReason>;

/** What every chat-completions answer begins with, whole or streamed (OpenAI's): its id, its kind, when, the model. */
const completionOf = <Kind extends string>(object: Kind) =>
  z.object({ id: z.string(), object: z.literal(object), created: z.number().int(), model: z.string() });

/** A whole answer (`stream` absent or false): one choice. */
export const ChatCompletion = completionOf('chat.completion')
  .extend({
    choices: z.tuple([
      z.object({
        index: z.literal(0),
        message: z.object({ role: z.literal('assistant'), content: z.string(), refusal: z.null() }),
        logprobs: z.null(),
        finish_reason: FinishReason,
      }),
    ]),
    usage: Usage,
  })
  .meta({
    id: 'ChatCompletion',
    description: 'OpenAI chat.completion; with a JSON schema, content is the structured answer as a JSON string.',
  });
export type ChatCompletion = z.infer<typeof ChatCompletion>;

/** One server-sent event of a streamed answer: a text chunk, the finish chunk, the usage chunk (`choices: []`); then `data: [DONE]`. */
export const ChatCompletionChunk = completionOf('chat.completion.chunk')
  .extend({
    choices: z.array(
      z.object({
        index: z.literal(0),
        delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }),
        logprobs: z.null(),
        finish_reason: FinishReason.nullable(),
      }),
    ),
    usage: Usage.optional(),
  })
  .meta({
    id: 'ChatCompletionChunk',
    description:
      'OpenAI chat.completion.chunk, one per `data:` line, then `data: [DONE]`. A failure after text was sent ends the stream with one `data:` line holding the error envelope instead, and no [DONE].',
  });
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

/**
 * How a streamed completion (`stream: true`) is sent, MODELPROV_STREAM: `whole` when the run has ended,
 * `deltas` as the CLI writes its text. The app's setting, the console's choice and `/ready` take it from here.
 */
export const STREAM_MODES = ['whole', 'deltas'] as const;
export const StreamMode = z.enum(STREAM_MODES);
export type StreamMode = z.infer<typeof StreamMode>;

/** Every refusal, in OpenAI's error envelope; `code` names it (the README's table lists each with its status). */
export const ProviderErrorBody = z
  .object({
    error: z.object({
      message: z.string().meta({ description: 'What went wrong and what to do about it.' }),
      type: z.string().meta({
        description:
          'invalid_request_error, authentication_error, permission_error, not_found_error, rate_limit_error, timeout_error, server_error, service_unavailable_error.',
      }),
      param: z.string().nullable().meta({ description: 'The request member at fault, when there is one.' }),
      code: z.string().meta({
        description:
          'A stable name of the refusal: invalid_request, tools_unsupported, model_not_found, queue_full, not_locked_down, ...',
      }),
    }),
  })
  .meta({ id: 'Error', description: 'OpenAI error envelope.' });
export type ProviderErrorBody = z.infer<typeof ProviderErrorBody>;

export const Healthy = z.object({ status: z.literal('ok'), version: z.string() }).meta({ id: 'Healthy' });

const Names = z.array(z.string());

export const CliCheck = z.union([
  z.object({ ok: z.literal(true), path: z.string(), source: z.enum(['setting', 'PATH', 'install location']) }),
  z.object({ ok: z.literal(false), path: z.null(), detail: z.string() }),
]);

export const LockdownCheck = z.object({
  ok: z.boolean(),
  state: z.enum(['pending', 'ok', 'not_ok', 'probe_failed', 'no_cli']),
  /** What the CLI loaded at the probe: each list empty when locked down. */
  tools: Names,
  mcp_servers: Names,
  hooks: Names,
  /** Where the CLI's API key comes from, as its init reported it: `none` for a subscription login; anything else is not ok. */
  api_key_source: z.string().nullable().optional(),
  probed_at: z.string().nullable(),
  detail: z.string(),
});

export const LoginCheck = z.object({
  ok: z.boolean(),
  state: z.enum(['signed_in', 'not_signed_in', 'unknown']),
  detail: z.string().optional(),
});

/** `GET /ready`: 200 with `ready: true` only when a completion would work right now, else 503 with the same body. */
export const Readiness = z.object({
  status: z.enum(['ready', 'not_ready']),
  ready: z.boolean(),
  checks: z.object({ cli: CliCheck, lockdown: LockdownCheck, login: LoginCheck }),
  runs: z.object({
    running: z.number().int(),
    queued: z.number().int(),
    cap: z.number().int(),
    max_queue: z.number().int(),
  }),
  stream: StreamMode,
});
export type Readiness = z.infer<typeof Readiness>;
export type LockdownCheck = z.infer<typeof LockdownCheck>;
export type LoginCheck = z.infer<typeof LoginCheck>;

/** One model as OpenAI's models.retrieve answers it (and as each item of the list is). */
export const Model = z.object({
  id: z.enum(MODEL_ALIASES),
  object: z.literal('model'),
  created: z.number().int(),
  owned_by: z.string(),
});
/** `GET /v1/models`: the list in the chat-completions list shape. */
export const ModelList = z.object({ object: z.literal('list'), data: z.array(Model) });
export type Model = z.infer<typeof Model>;
export type ModelList = z.infer<typeof ModelList>;
