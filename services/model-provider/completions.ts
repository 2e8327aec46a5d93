import { randomBytes } from 'node:crypto';
import type { Logger } from '../kit/logger.ts';
import type { ServiceMetrics } from '../kit/metrics.ts';
import type { CliLocation } from './cli-binary.ts';
import { isHook, isInit, loadedBy, lockdownBreach, readAnswer, type CliAnswer, type Loaded, type Usage } from './cli-output.ts';
import type { CliProcesses, RunResult } from './cli-process.ts';
import { ProviderError, providerError } from './errors.ts';
import { requestKey, type FailureMemory, type SharedRuns } from './identical-requests.ts';
import { cliArgs } from './invocation.ts';
import type { Lockdown } from './lockdown.ts';
import { isModelAlias, MODEL_ALIASES } from './models.ts';
import { ClientGone, type RunSlots } from './run-slots.ts';
import { translate, type CompletionRequest } from './translate.ts';

export interface Completion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: [{ index: 0; message: { role: 'assistant'; content: string; refusal: null }; logprobs: null; finish_reason: 'stop' }];
  usage: Usage;
}

export interface CompletionDeps {
  processes: CliProcesses;
  slots: RunSlots;
  lockdown: Lockdown;
  locate: () => CliLocation;
  defaultModel: string;
  systemPrompt: string;
  timeoutSeconds: number;
  logger: Logger;
  /** Identical requests in flight share one run. */
  sharedRuns: SharedRuns<Completion>;
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
  const runs = metrics.counter({ name: 'modelprov_cli_runs_total', help: 'CLI runs, by how they ended.', labels: { outcome: RUN_OUTCOMES } });
  const tokens = metrics.counter({ name: 'modelprov_tokens_total', help: 'Tokens of answered runs: prompt (input, cache reads and writes) and completion.', labels: { kind: ['prompt', 'completion'] } });
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
function gate(deps: CompletionDeps): string {
  const { lockdown } = deps;
  if (lockdown.state === 'pending') {
    void lockdown.ensureProbed();
    throw providerError.notLockedDown('The startup lockdown probe has not finished yet; send the request again in a few seconds.', true);
  }
  const where = deps.locate();
  if (!where.found) throw providerError.cliNotFound(where.detail);
  if (lockdown.noticeBinary(where)) {
    // A binary found only now, or another one than was probed: prove lockdown before it runs.
    throw providerError.notLockedDown('The CLI was found only now or has changed; its lockdown probe is running. Send the request again in a few seconds.', true);
  }
  if (lockdown.state !== 'ok') throw providerError.notLockedDown(`Lockdown is not proven, so the CLI is not run: ${lockdown.detail}`, false);
  return where.path;
}

/**
 * One completion: translate, gate, then answer an identical request's remembered failure, join an
 * identical request's run in flight, or start the run. `caller` is what tells callers apart (the
 * `Authorization` they present). Throws ProviderError for every refusal, ClientGone when the caller
 * went away (its run's process group is then already being killed unless another request waits for it).
 */
export async function complete(deps: CompletionDeps, request: CompletionRequest, caller: string, signal: AbortSignal): Promise<Completion> {
  const model = request.model === undefined || request.model === '' ? deps.defaultModel : request.model;
  if (!isModelAlias(model)) throw providerError.modelNotFound(model, MODEL_ALIASES);
  const { systemPrompt, prompt, jsonSchema } = translate(request, deps.systemPrompt);
  const binary = gate(deps);
  const args = cliArgs({ model, systemPrompt, ...(jsonSchema ? { jsonSchema } : {}) });
  const run: PreparedRun = { model, binary, args, prompt, structured: jsonSchema !== undefined };

  const key = requestKey(caller, binary, args, prompt);
  const remembered = deps.failures.recall(key);
  // A sign-in since then changes what a run would answer.
  if (remembered?.code === 'not_logged_in' && deps.lockdown.login === 'signed_in') deps.failures.forget(key);
  else if (remembered) {
    deps.logger.info({ code: remembered.code }, 'identical request failed moments ago; answered from that failure without a run');
    throw remembered;
  }
  return deps.sharedRuns.run(
    key,
    signal,
    async (stop) => {
      try {
        return await runCompletion(deps, run, stop);
      } catch (err) {
        // Kept before the run's requests hear of it, so that a retry arriving at once finds it.
        if (err instanceof ProviderError) deps.failures.remember(key, err);
        throw err;
      }
    },
    () => deps.logger.info({ model }, 'identical request in flight; sharing its run'),
  );
}

interface PreparedRun {
  model: string;
  binary: string;
  args: string[];
  prompt: string;
  structured: boolean;
}

/**
 * Waits for a run slot, runs the CLI (once more if the reply is tool-call syntax) and shapes the answer.
 * The answer is read as soon as the CLI prints its result, and the slot is given back then: the process
 * exits on its own in the background (see CliProcesses).
 */
async function runCompletion(deps: CompletionDeps, run: PreparedRun, signal: AbortSignal): Promise<Completion> {
  const { model, binary, args, prompt, structured } = run;
  const release = await deps.slots.acquire(signal);
  let answer: CliAnswer;
  try {
    answer = await runOnce(deps, binary, args, prompt, structured, signal);
    if (answer.toolCall) {
      deps.logger.warn({ model }, 'reply was tool-call syntax; asking once more');
      answer = await runOnce(deps, binary, args, prompt, structured, signal);
      if (answer.toolCall) throw providerError.toolCallReply();
    }
  } finally {
    release();
  }
  deps.lockdown.login = 'signed_in';

  let content: string;
  if (structured) {
    if (answer.structured === undefined || answer.structured === null) {
      throw providerError.cliFailed('it finished without a structured answer for the JSON schema.');
    }
    content = JSON.stringify(answer.structured);
  } else {
    if (answer.text.trim() === '') throw providerError.emptyReply();
    content = answer.text;
  }
  return {
    id: `chatcmpl-${randomBytes(12).toString('base64url')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: answer.usage,
  };
}

async function runOnce(deps: CompletionDeps, binary: string, args: string[], prompt: string, structured: boolean, signal: AbortSignal): Promise<CliAnswer> {
  const hooks: string[] = [];
  let breach: { loaded: Loaded; what: string } | undefined;
  const run: RunResult = await deps.processes.run(binary, args, prompt, {
    timeoutMs: deps.timeoutSeconds * 1000,
    signal,
    onEvent: (event) => {
      if (isHook(event)) hooks.push(String(event.hook_name ?? event.hook_event ?? 'hook'));
      if (isInit(event) && !breach) {
        const loaded = { ...loadedBy(event), hooks: [...new Set(hooks)] };
        const what = lockdownBreach(loaded, structured);
        if (what) {
          breach = { loaded, what };
          return 'stop';
        }
      }
      // The result is the last event of a print-mode run: the answer is complete, whenever the process exits.
      if (event.type === 'result') return 'answered';
    },
  });
  if (run.end === 'answered') {
    void run.exited.then((exit) => {
      if (exit.end === 'timeout') deps.logger.warn({ code: 'timeout' }, 'the CLI printed its answer but did not exit; its process group was stopped');
    });
  }
  if (breach) {
    deps.counters?.run('not_locked_down');
    deps.lockdown.breached(breach.loaded, breach.what);
    throw providerError.notLockedDown(`This run loaded ${breach.what}; it was stopped before answering. ${deps.lockdown.detail}`, false);
  }
  if (run.end === 'aborted') {
    deps.counters?.run('aborted');
    throw new ClientGone('client went away during the run');
  }
  try {
    const answer = readAnswer(run, structured, deps.timeoutSeconds);
    deps.counters?.run('ok', answer.usage);
    return answer;
  } catch (err) {
    const e = err as ProviderError;
    deps.counters?.run(e.code === 'timeout' || e.code === 'not_logged_in' ? e.code : 'failed');
    if (e.code === 'not_logged_in') deps.lockdown.login = 'not_signed_in';
    if (e.code === 'cli_failed' || e.code === 'timeout') {
      deps.logger.warn({ code: e.code, end: run.end, exitCode: run.exitCode, signal: run.signal, stderr: run.stderr.slice(0, 500) }, 'CLI run failed');
    }
    throw err;
  }
}
