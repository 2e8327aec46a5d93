import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';

/**
 * llama-index's OpenAI LLM (llama-index-llms-openai, which OpenAILike extends) at its defaults, reproduced
 * with the official openai client: the client is made with `max_retries=3` (four attempts) and the LLM's
 * `timeout`, and every chat call runs under its own retry decorator (`llm_retry_decorator`: tenacity,
 * `stop_after_attempt(3) | stop_after_delay(60)`, `wait_random_exponential(min=1, max=20)`, retrying
 * connection errors, timeouts, 429 and 5xx): up to twelve requests for one call.
 */
export const LLAMA_INDEX = { clientRetries: 3, attempts: 3, stopAfterMs: 60_000, minWaitS: 1, maxWaitS: 20 } as const;

/** The official client as llama-index makes it: its retries, and the LLM's `timeout` (60 s unless set). */
export function llamaIndexClient(baseURL: string, timeoutMs = 60_000): OpenAI {
  return new OpenAI({ baseURL, apiKey: 'llama-index-key', maxRetries: LLAMA_INDEX.clientRetries, timeout: timeoutMs });
}

/** tenacity's wait_random_exponential(min=1, max=20) before attempt `attempt + 1`, in ms. */
export function llamaIndexWaitMs(attempt: number): number {
  const high = Math.max(LLAMA_INDEX.minWaitS, Math.min(2 ** (attempt - 1), LLAMA_INDEX.maxWaitS));
  return (LLAMA_INDEX.minWaitS + Math.random() * (high - LLAMA_INDEX.minWaitS)) * 1000;
}

const retried = (err: unknown) =>
  err instanceof OpenAI.APIConnectionError ||
  err instanceof OpenAI.RateLimitError ||
  err instanceof OpenAI.InternalServerError;

/**
 * One `llm.chat(...)`: the completion through `client`, retried as llama-index retries it. `wait` sleeps
 * between its own attempts (a test passes one that does not).
 */
export async function llamaIndexChat(
  client: OpenAI,
  params: OpenAI.ChatCompletionCreateParamsNonStreaming,
  wait: (ms: number) => Promise<unknown> = sleep,
): Promise<OpenAI.ChatCompletion> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.chat.completions.create(params);
    } catch (err) {
      if (!retried(err) || attempt >= LLAMA_INDEX.attempts || Date.now() - started >= LLAMA_INDEX.stopAfterMs)
        throw err;
      await wait(llamaIndexWaitMs(attempt));
    }
  }
}
