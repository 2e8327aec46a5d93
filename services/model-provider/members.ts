import { providerError } from './errors.ts';
import { EFFORT_ALIASES, SAMPLING_ALIASES, type ModelAlias } from './models.ts';
import { REQUEST_MEMBERS, type ChatCompletionRequest } from './shapes.ts';

/**
 * What the request members that shape a run ask of it (shapes.ts lists every member and what it does):
 * the output limit, the stop sequences, sampling and effort. Each is honoured through the CLI's own
 * settings (invocation.ts), or the request is refused naming the member: a member that would change the
 * answer is never ignored.
 */
export interface RunSettings {
  /** max_tokens / max_completion_tokens: the reply is at most this many tokens. */
  maxTokens?: number;
  /** The reply ends before the first occurrence of any of these. */
  stop?: string[];
  /** Sampling, passed to the model (only an alias whose model takes it). */
  temperature?: number;
  topP?: number;
  /** The CLI's --effort. */
  effort?: (typeof EFFORTS)[number];
}

/** OpenAI's reasoning_effort values this service can pass on as the CLI's --effort (it has no lower level than low). */
export const EFFORTS = ['low', 'medium', 'high', 'xhigh'] as const;
/** OpenAI allows up to four stop sequences. */
export const MAX_STOP_SEQUENCES = 4;
/** Each stop sequence, in bytes: the end of the reply so far is compared with each on every piece of text. */
export const MAX_STOP_BYTES = 256;

const unsupported = (param: string, why: string) => providerError.unsupportedParameter(param, why);

/**
 * The members no run can honour, refused unless they ask for nothing (checked before the run is
 * prepared, with the body's own types already checked): an unknown member, token probabilities,
 * penalties, a logit bias, a seed, audio, verbosity, web search, moderation, more than one choice.
 */
export function refuseUnhonoured(body: Record<string, unknown>, request: ChatCompletionRequest): void {
  for (const member of Object.keys(body)) {
    if (!REQUEST_MEMBERS.has(member))
      throw unsupported(
        member,
        `Unrecognized request member ${JSON.stringify(member.slice(0, 60))}: this provider does not know it, so it cannot honour it. Remove it (GET /openapi.json lists every member accepted).`,
      );
  }
  const r = request;
  if (r.n !== undefined && r.n !== null && r.n !== 1)
    throw unsupported('n', 'n must be 1: this provider returns one choice per request.');
  if (r.logprobs === true)
    throw unsupported(
      'logprobs',
      'logprobs is not available: the CLI reports no token probabilities. Leave it out or set it to false.',
    );
  if (r.top_logprobs !== undefined && r.top_logprobs !== null && r.top_logprobs !== 0)
    throw unsupported(
      'top_logprobs',
      'top_logprobs is not available: the CLI reports no token probabilities. Leave it out or set it to 0.',
    );
  for (const member of ['frequency_penalty', 'presence_penalty'] as const) {
    const v = r[member];
    if (v !== undefined && v !== null && v !== 0)
      throw unsupported(
        member,
        `${member} cannot be applied: the model takes no penalties. Leave it out or set it to 0.`,
      );
  }
  if (r.logit_bias && Object.keys(r.logit_bias).length > 0)
    throw unsupported('logit_bias', 'logit_bias cannot be applied: the model takes no token biases. Leave it out.');
  if (r.seed !== undefined && r.seed !== null)
    throw unsupported(
      'seed',
      'seed cannot be honoured: the model cannot be asked to sample deterministically. Leave it out.',
    );
  if (r.modalities && r.modalities.some((m) => m !== 'text'))
    throw unsupported('modalities', 'Only text is answered here: send modalities ["text"] or leave it out.');
  for (const member of ['audio', 'verbosity', 'web_search_options', 'moderation'] as const) {
    if (r[member] !== undefined && r[member] !== null)
      throw unsupported(
        member,
        `${member} is not available from this provider (text answers from a model with no tools). Leave it out.`,
      );
  }
}

/** The smaller of max_tokens and max_completion_tokens; each must be at least 1. */
function maxTokensOf(r: ChatCompletionRequest): number | undefined {
  let limit: number | undefined;
  for (const member of ['max_completion_tokens', 'max_tokens'] as const) {
    const v = r[member];
    if (v === undefined || v === null) continue;
    if (v < 1)
      throw providerError.invalidRequest(
        `${member} must be at least 1 (it is the most tokens the reply may have).`,
        member,
      );
    limit = limit === undefined ? v : Math.min(limit, v);
  }
  return limit;
}

function stopOf(r: ChatCompletionRequest): string[] | undefined {
  if (r.stop === undefined || r.stop === null) return undefined;
  const list = typeof r.stop === 'string' ? [r.stop] : r.stop;
  if (list.length > MAX_STOP_SEQUENCES)
    throw providerError.invalidRequest(
      `stop holds ${list.length} sequences; send at most ${MAX_STOP_SEQUENCES}.`,
      'stop',
    );
  list.forEach((s, i) => {
    const param = typeof r.stop === 'string' ? 'stop' : `stop.${i}`;
    if (s === '')
      throw providerError.invalidRequest(`${param} is empty; a stop sequence needs at least one character.`, param);
    if (!s.isWellFormed())
      throw providerError.invalidRequest(
        `${param} holds an unpaired UTF-16 surrogate, which is not text; send well-formed Unicode.`,
        param,
      );
    if (Buffer.byteLength(s) > MAX_STOP_BYTES)
      throw providerError.invalidRequest(
        `${param} is longer than ${MAX_STOP_BYTES} bytes; send a shorter stop sequence.`,
        param,
      );
  });
  return list.length > 0 ? [...new Set(list)] : undefined;
}

/** temperature or top_p, where the alias's model takes sampling settings; the default (1) asks for nothing. */
function samplingOf(r: ChatCompletionRequest, model: ModelAlias): Pick<RunSettings, 'temperature' | 'topP'> {
  const out: Pick<RunSettings, 'temperature' | 'topP'> = {};
  for (const [member, max, key] of [
    ['temperature', 2, 'temperature'],
    ['top_p', 1, 'topP'],
  ] as const) {
    const v = r[member];
    if (v === undefined || v === null) continue;
    if (v < 0 || v > max) throw providerError.invalidRequest(`${member} must be from 0 to ${max}.`, member);
    if (v === 1) continue;
    if (!SAMPLING_ALIASES.includes(model))
      throw unsupported(
        member,
        `${member} ${v} cannot be applied: the model behind "${model}" takes no sampling settings (the CLI sends none for it). Leave ${member} out (or 1), or use ${SAMPLING_ALIASES.join(' or ')}.`,
      );
    if (v > 1) throw unsupported(member, `${member} ${v} cannot be applied: the model takes ${member} from 0 to 1.`);
    out[key] = v;
  }
  if (out.temperature !== undefined && out.topP !== undefined)
    throw unsupported('top_p', 'Give temperature or top_p, not both: the model takes one of them.');
  return out;
}

function effortOf(r: ChatCompletionRequest, model: ModelAlias): RunSettings['effort'] {
  const v = r.reasoning_effort;
  if (v === undefined || v === null) return undefined;
  if (!(EFFORTS as readonly string[]).includes(v))
    throw unsupported(
      'reasoning_effort',
      `reasoning_effort "${v.slice(0, 20)}" cannot be applied: the CLI's effort levels are ${EFFORTS.join(', ')}.`,
    );
  if (!EFFORT_ALIASES.includes(model))
    throw unsupported(
      'reasoning_effort',
      `reasoning_effort cannot be applied: the model behind "${model}" takes no effort level. Leave it out, or use ${EFFORT_ALIASES.join(', ')}.`,
    );
  return v as RunSettings['effort'];
}

/**
 * The run settings a request asks for, for `model`; `structured` when the answer is a JSON schema's
 * (written through a tool call, where a stop sequence would cut the call rather than the reply).
 */
export function runSettings(r: ChatCompletionRequest, model: ModelAlias, structured: boolean): RunSettings {
  const settings: RunSettings = { ...samplingOf(r, model) };
  const maxTokens = maxTokensOf(r);
  if (maxTokens !== undefined) settings.maxTokens = maxTokens;
  const stop = stopOf(r);
  if (stop && structured)
    throw unsupported(
      'stop',
      'stop cannot be applied to a structured answer (response_format): the CLI writes it through a tool call, which a stop sequence would cut. Leave one of them out.',
    );
  if (stop) settings.stop = stop;
  const effort = effortOf(r, model);
  if (effort) settings.effort = effort;
  return settings;
}
