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

/** The members of a chat-completions request this service reads; others (temperature, seed, ...) are accepted and ignored. */
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
    n: z.number().int().nullish().meta({ description: 'Must be 1.' }),
    response_format: z
      .object({
        type: z.enum(['text', 'json_object', 'json_schema'], { message: 'must be text, json_object or json_schema' }),
        json_schema: z
          .object({ name: z.string().optional(), schema: z.record(z.string(), z.unknown()).optional() })
          .loose()
          .optional(),
      })
      .loose()
      .nullish(),
    tools: z.unknown().optional().meta({ description: 'Refused unless empty: the model runs with no tools.' }),
    tool_choice: z.unknown().optional().meta({ description: 'Refused unless "none".' }),
    functions: z.unknown().optional().meta({ description: 'Refused unless empty.' }),
    function_call: z.unknown().optional().meta({ description: 'Refused unless "none".' }),
  })
  .loose()
  .meta({
    id: 'ChatCompletionRequest',
    description: 'OpenAI chat-completions request; members not listed are accepted and ignored.',
  });

export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

const Usage = z
  .object({
    prompt_tokens: z.number().int().meta({ description: 'Input, cache reads and cache writes.' }),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    prompt_tokens_details: z.object({ cached_tokens: z.number().int() }),
  })
  .meta({ id: 'Usage' });

/** What every chat-completions answer begins with, whole or streamed (OpenAI's): its id, its kind, when, the model. */
const completionOf = <Kind extends string>(object: Kind) =>
  z.object({ id: z.string(), object: z.literal(object), created: z.number().int(), model: z.string() });

/** A whole answer (`stream` absent or false). */
export const ChatCompletion = completionOf('chat.completion')
  .extend({
    choices: z
      .array(
        z.object({
          index: z.literal(0),
          message: z.object({ role: z.literal('assistant'), content: z.string(), refusal: z.null() }),
          logprobs: z.null(),
          finish_reason: z.literal('stop'),
        }),
      )
      .length(1),
    usage: Usage,
  })
  .meta({
    id: 'ChatCompletion',
    description: 'OpenAI chat.completion; with a JSON schema, content is the structured answer as a JSON string.',
  });

/** One server-sent event of a streamed answer: a text chunk, the finish chunk, the usage chunk (`choices: []`); then `data: [DONE]`. */
export const ChatCompletionChunk = completionOf('chat.completion.chunk')
  .extend({
    choices: z.array(
      z.object({
        index: z.literal(0),
        delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }),
        logprobs: z.null(),
        finish_reason: z.literal('stop').nullable(),
      }),
    ),
    usage: Usage.optional(),
  })
  .meta({
    id: 'ChatCompletionChunk',
    description:
      'OpenAI chat.completion.chunk, one per `data:` line, then `data: [DONE]`. A failure after text was sent ends the stream with one `data:` line holding the error envelope instead, and no [DONE].',
  });

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
  stream: z.enum(['whole', 'deltas']),
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
