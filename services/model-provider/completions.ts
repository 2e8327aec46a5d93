import type { Logger } from '../kit/logger.ts';
import type { ServiceMetrics } from '../kit/metrics.ts';
import type { CliLocation } from './cli-binary.ts';
import {
  hookName,
  isHook,
  isInit,
  loadedBy,
  lockdownBreach,
  looksLikeToolCall,
  readAnswer,
  usageOf,
  type CliAnswer,
  type Loaded,
} from './cli-output.ts';
import type { CliProcesses, RunResult } from './cli-process.ts';
import { ProviderError, providerError } from './errors.ts';
import { requestKey, type FailureMemory, type SharedRuns } from './identical-requests.ts';
import { cliArgs, runVariables } from './invocation.ts';
import { runSettings } from './members.ts';
import { PartialReply, firstStop } from './partial-reply.ts';
import type { Lockdown } from './lockdown.ts';
import { isModelAlias, MODEL_ALIASES } from './models.ts';
import { ClientGone, type RunSlots } from './run-slots.ts';
import type { ChatCompletion, StreamMode, Usage } from './shapes.ts';
import { translate, type CompletionRequest } from './translate.ts';

export interface CompletionParts {
  processes: CliProcesses;
  slots: RunSlots;
  lockdown: Lockdown;
  locate: () => CliLocation;
  defaultModel: string;
  systemPrompt: string;
  timeoutSeconds: number;
  logger: Logger;
  /** Identical requests in flight share one run (and its partial reply). */
  sharedRuns: SharedRuns<ChatCompletion, PartialReply>;
  /** MODELPROV_STREAM: with `deltas`, plain runs ask the CLI for partial messages and their text is shown as it comes. */
  stream: StreamMode;
  /** Failures another run would repeat, answered again without a run for a short window. */
  failures: FailureMemory;
  /** CLI runs and tokens, counted at /metrics; absent, nothing is counted. */
  counters?: RunCounters;
}

/** How a CLI run ended, as /metrics counts it (modelprov_cli_runs_total{outcome}). */
export const RUN_OUTCOMES = ['ok', 'failed', 'timeout', 'not_logged_in', 'not_locked_down', 'aborted'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

export interface RunCounters {
  run(outcome: RunOutcome, usage?: Usage): void;
}

/** The provider's own counters: CLI runs by outcome, tokens by kind; never a model's prompt or reply, never a caller. */
export function runCounters(metrics: ServiceMetrics): RunCounters {
  const runs = metrics.counter({
    name: 'modelprov_cli_runs_total',
    help: 'CLI runs, by how they ended.',
    labels: { outcome: RUN_OUTCOMES },
  });
  const tokens = metrics.counter({
    name: 'modelprov_tokens_total',
    help: 'Tokens of answered runs: prompt (input, cache reads and writes) and completion.',
    labels: { kind: ['prompt', 'completion'] },
  });
  return {
    run(outcome, usage) {
      runs.inc({ outcome });
      if (usage) {
        tokens.inc({ kind: 'prompt' }, usage.prompt_tokens);
        tokens.inc({ kind: 'completion' }, usage.completion_tokens);
      }
    },
  };
}

/** The gate every completion passes before a CLI runs: lockdown proven, binary present. */
function gate(parts: CompletionParts): string {
  const { lockdown } = parts;
  if (lockdown.state === 'pending') {
    void lockdown.ensureProbed();
    throw providerError.notLockedDown(
      'The startup lockdown probe has not finished yet; send the request again in a few seconds.',
      true,
    );
  }
  const where = parts.locate();
  if (!where.found) throw providerError.cliNotFound(where.detail);
  if (lockdown.noticeBinary(where)) {
    // A binary found only now, or another one than was probed: prove lockdown before it runs.
    throw providerError.notLockedDown(
      'The CLI was found only now or has changed; its lockdown probe is running. Send the request again in a few seconds.',
      true,
    );
  }
  if (lockdown.state !== 'ok')
    throw providerError.notLockedDown(`Lockdown is not proven, so the CLI is not run: ${lockdown.detail}`, false);
  return where.path;
}

/**
 * One completion: translate, gate, then answer an identical request's remembered failure, join an
 * identical request's run in flight, or start the run. `caller` is what tells callers apart (the
 * `Authorization` they present). `follow` is given the run's partial reply as soon as the request waits
 * for a run (its text comes only in `deltas` mode, and never for a schema). Throws ProviderError for every
 * refusal, ClientGone when the caller went away (its run's process group is then already being killed
 * unless another request waits for it).
 */
export async function complete(
  parts: CompletionParts,
  request: CompletionRequest,
  caller: string,
  signal: AbortSignal,
  follow?: (reply: PartialReply) => void,
): Promise<ChatCompletion> {
  const model = request.model === undefined || request.model === '' ? parts.defaultModel : request.model;
  if (!isModelAlias(model)) throw providerError.modelNotFound(model, MODEL_ALIASES);
  const { systemPrompt, prompt, jsonSchema } = translate(request, parts.systemPrompt);
  const settings = runSettings(request, model, jsonSchema !== undefined);
  const binary = gate(parts);
  // Where deltas cannot apply (a schema's answer comes whole, at the end) the run is asked for none, unless
  // a stop sequence or an output limit must be watched for as the text comes.
  const watched = settings.stop !== undefined || settings.maxTokens !== undefined;
  const partialMessages = watched || (parts.stream === 'deltas' && jsonSchema === undefined);
  const args = cliArgs({
    model,
    systemPrompt,
    partialMessages,
    ...(jsonSchema ? { jsonSchema } : {}),
    ...(settings.effort ? { effort: settings.effort } : {}),
  });
  const variables = runVariables(settings);
  const run: PreparedRun = {
    model,
    binary,
    args,
    prompt,
    structured: jsonSchema !== undefined,
    variables,
    stop: settings.stop ?? [],
  };

  const key = requestKey(caller, binary, args, prompt, variables);
  const remembered = parts.failures.recall(key);
  // A sign-in since then changes what a run would answer.
  if (remembered?.code === 'not_logged_in' && parts.lockdown.login === 'signed_in') parts.failures.forget(key);
  else if (remembered) {
    parts.logger.info(
      { code: remembered.code },
      'identical request failed moments ago; answered from that failure without a run',
    );
    throw remembered;
  }
  return parts.sharedRuns.run(
    key,
    signal,
    async (stop, reply) => {
      try {
        return await runCompletion(parts, run, stop, reply);
      } catch (err) {
        // Kept before the run's requests hear of it, so that a retry arriving at once finds it.
        if (err instanceof ProviderError) parts.failures.remember(key, err);
        throw err;
      }
    },
    {
      progress: () => new PartialReply(model, run.stop),
      onJoin: (kept) =>
        parts.logger.info(
          { model },
          kept
            ? 'identical request; answered from the run its earlier attempt left behind'
            : 'identical request in flight; sharing its run',
        ),
      ...(follow ? { follow } : {}),
    },
  );
}

interface PreparedRun {
  model: string;
  binary: string;
  args: string[];
  prompt: string;
  structured: boolean;
  /** The run's own variables (output limit, stop sequences, sampling), beside the environment of every run. */
  variables: Record<string, string>;
  /** Stop sequences: the reply ends before the first one written. */
  stop: readonly string[];
}

/**
 * Waits for a run slot, runs the CLI (once more if the reply is tool-call syntax) and shapes the answer.
 * The answer is read as soon as the CLI prints its result, and the slot is given back then: the process
 * exits on its own in the background (see CliProcesses).
 */
async function runCompletion(
  parts: CompletionParts,
  run: PreparedRun,
  signal: AbortSignal,
  reply: PartialReply,
): Promise<ChatCompletion> {
  const { model, structured } = run;
  const release = await parts.slots.acquire(signal);
  let answer: CliAnswer;
  try {
    answer = await runOnce(parts, run, signal, reply);
    if (answer.toolCall) {
      // Words already seen cannot be taken back by another run's different reply.
      if (reply.seen) throw providerError.toolCallReply('after its first words were sent');
      parts.logger.warn({ model }, 'reply was tool-call syntax; asking once more');
      reply.restart();
      answer = await runOnce(parts, run, signal, reply);
      if (answer.toolCall) throw providerError.toolCallReply();
    }
  } finally {
    release();
  }
  parts.lockdown.login = 'signed_in';

  let content: string;
  if (structured && answer.finish === 'length') {
    // Cut at the output limit before the structured answer was complete: there is none to give.
    content = '';
  } else if (structured) {
    if (answer.structured === undefined || answer.structured === null) {
      throw providerError.cliFailed('it finished without a structured answer for the JSON schema.');
    }
    content = JSON.stringify(answer.structured);
  } else {
    // Empty because the caller's own stop sequence or limit came first is an answer; empty of itself is not.
    const cut = answer.finish === 'length' || answer.stopped === true;
    if (answer.text.trim() === '' && !cut) throw providerError.emptyReply();
    content = answer.text;
  }
  return {
    id: reply.id,
    object: 'chat.completion',
    created: reply.created,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null },
        logprobs: null,
        finish_reason: answer.finish,
      },
    ],
    usage: answer.usage,
  };
}

/** One stream event of a partial message, as far as a run reads it. */
type StreamEvent = {
  type?: unknown;
  delta?: { type?: unknown; text?: unknown; stop_reason?: unknown };
  content_block?: { type?: unknown };
  message?: { usage?: unknown };
  usage?: unknown;
} | null;

/** A partial message's text delta goes to the reply; a tool block that starts ends what is shown. */
function showPartial(e: StreamEvent, reply: PartialReply): void {
  if (e?.type === 'content_block_delta' && e.delta?.type === 'text_delta' && typeof e.delta.text === 'string')
    reply.write(e.delta.text);
  else if (
    e?.type === 'content_block_start' &&
    e.content_block?.type !== 'text' &&
    e.content_block?.type !== 'thinking' &&
    e.content_block?.type !== 'redacted_thinking'
  )
    reply.close();
}

/**
 * The usage of the message being written, from its partial-message events: `message_start` carries the
 * prompt's (input, cache reads and writes), `message_delta` the output's at the end. What a run cut short
 * answers with (it prints no result event).
 */
class MessageUsage {
  private start: Record<string, unknown> = {};
  private end: Record<string, unknown> = {};

  see(e: StreamEvent): void {
    if (e?.type === 'message_start' && typeof e.message?.usage === 'object' && e.message.usage !== null) {
      this.start = e.message.usage as Record<string, unknown>;
      this.end = {};
    } else if (e?.type === 'message_delta' && typeof e.usage === 'object' && e.usage !== null)
      this.end = e.usage as Record<string, unknown>;
  }

  get usage(): Usage {
    return usageOf({ ...this.start, ...this.end });
  }
}

/**
 * One CLI run; its text deltas (partial messages) go to `reply` once its init event has passed the
 * lockdown check. A run is cut short (its process stopped, its answer read at once) when its text reaches
 * a stop sequence, or its message ends at the output limit: the CLI would otherwise ask the model to go on
 * (up to three times), past the limit.
 */
async function runOnce(
  parts: CompletionParts,
  prepared: PreparedRun,
  signal: AbortSignal,
  reply: PartialReply,
): Promise<CliAnswer> {
  const { binary, args, prompt, structured, variables } = prepared;
  const hooks: string[] = [];
  let breach: { loaded: Loaded; what: string } | undefined;
  let lockedDown = false;
  let cut: CliAnswer['finish'] | undefined;
  const usage = new MessageUsage();
  const run: RunResult = await parts.processes.run(binary, args, prompt, {
    timeoutMs: parts.timeoutSeconds * 1000,
    signal,
    ...(Object.keys(variables).length > 0 ? { variables } : {}),
    onEvent: (event) => {
      if (event.type === 'stream_event') {
        if (!lockedDown || breach) return;
        const e = event.event as StreamEvent;
        usage.see(e);
        // A schema's answer is its structured output: text written on the way is not the reply.
        if (!structured) {
          showPartial(e, reply);
          if (reply.stopped) {
            cut = 'stop';
            return 'enough';
          }
        }
        if (e?.type === 'message_delta' && e.delta?.stop_reason === 'max_tokens') {
          cut = 'length';
          return 'enough';
        }
        return;
      }
      if (isHook(event)) {
        hooks.push(hookName(event));
        // A hook reported after init (UserPromptSubmit, Stop) breaks lockdown as one before it does.
        if (lockedDown && !breach) {
          breach = {
            loaded: { tools: [], mcp_servers: [], hooks: [...new Set(hooks)] },
            what: `hooks ${hookName(event)}`,
          };
          return 'stop';
        }
      }
      if (isInit(event) && !breach) {
        const loaded = { ...loadedBy(event), hooks: [...new Set(hooks)] };
        const what = lockdownBreach(loaded, structured);
        if (what) {
          breach = { loaded, what };
          return 'stop';
        }
        lockedDown = true;
      }
      // The result is the last event of a print-mode run: the answer is complete, whenever the process exits.
      if (event.type === 'result') return 'answered';
    },
  });
  if (run.end === 'answered') {
    void run.exited.then((exit) => {
      if (exit.end === 'timeout')
        parts.logger.warn(
          { code: 'timeout' },
          'the CLI printed its answer but did not exit; its process group was stopped',
        );
    });
  }
  if (breach) {
    parts.counters?.run('not_locked_down');
    parts.lockdown.breached(breach.loaded, breach.what);
    throw providerError.notLockedDown(
      `This run loaded ${breach.what}; it was stopped before answering. ${parts.lockdown.detail}`,
      false,
    );
  }
  if (run.end === 'aborted') {
    parts.counters?.run('aborted');
    throw new ClientGone('client went away during the run');
  }
  if (cut !== undefined) {
    // Stopped by the service at a stop sequence or the output limit: the text so far is the answer.
    const answer: CliAnswer = {
      text: reply.text,
      structured: undefined,
      usage: usage.usage,
      toolCall: !structured && looksLikeToolCall(reply.text),
      finish: cut,
      stopped: cut === 'stop',
    };
    parts.counters?.run('ok', answer.usage);
    return answer;
  }
  if (!lockedDown && run.events.some((e) => e.type === 'result')) {
    // Its lockdown was never checked: whatever it answered is not used.
    parts.counters?.run('failed');
    parts.logger.warn(
      { code: 'cli_failed', end: run.end },
      'the CLI run did not report what it loaded (no init event)',
    );
    throw providerError.cliFailed('it did not report what it loaded (no init event), so its answer is not used.');
  }
  try {
    const answer = readAnswer(run, structured, parts.timeoutSeconds);
    // A stop sequence the model itself stopped at is not in the text; one that was (blanks only) ends it.
    if (prepared.stop.length > 0 && !structured) {
      const at = firstStop(answer.text, prepared.stop);
      if (at !== undefined) answer.text = answer.text.slice(0, at);
      const result = run.events.findLast((e) => e.type === 'result');
      answer.stopped = at !== undefined || result?.stop_reason === 'stop_sequence';
    }
    parts.counters?.run('ok', answer.usage);
    return answer;
  } catch (err) {
    const e = err as ProviderError;
    parts.counters?.run(e.code === 'timeout' || e.code === 'not_logged_in' ? e.code : 'failed');
    if (e.code === 'not_logged_in') parts.lockdown.login = 'not_signed_in';
    if (e.code === 'cli_failed' || e.code === 'timeout') {
      parts.logger.warn(
        { code: e.code, end: run.end, exitCode: run.exitCode, signal: run.signal, stderr: run.stderr.slice(0, 500) },
        'CLI run failed',
      );
    }
    throw err;
  }
}
