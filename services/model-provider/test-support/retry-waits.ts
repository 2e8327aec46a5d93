/** Where each client library sets the timer it waits on between two attempts (each library sets no other timer there). */
export const RETRY_WAIT_CODE = {
  aiSdk: /[\\/]@ai-sdk[\\/]provider-utils[\\/]/,
  openai: /[\\/]openai[\\/]internal[\\/]utils[\\/]sleep/,
  langChain: /[\\/]@langchain[\\/]core[\\/]dist[\\/]utils[\\/]p-retry[\\/]/,
} as const;

/**
 * Client libraries wait between retries on the real clock (LangChain about 1 s doubling six times, the
 * AI SDK 2 s then 4 s). A test keeps a library's default retry count but not its waits: while `call`
 * runs, a timer set directly by code in `library` fires at once, and the delay it asked
 * for is recorded (one per retry). Every other timer, the service's and the HTTP client's, is untouched.
 */
export async function withoutRetryWaits<T>(
  library: RegExp,
  call: () => Promise<T>,
): Promise<{ outcome: PromiseSettledResult<T>; waits: number[] }> {
  const original = globalThis.setTimeout;
  const waits: number[] = [];
  const skipping = ((handler: (...args: unknown[]) => void, delay?: number, ...args: unknown[]) => {
    // Only the frame that set the timer: a timer set further down an attempt (the HTTP client's request timeout) keeps its delay.
    const setBy = (new Error().stack ?? '').split('\n')[2] ?? '';
    if (library.test(setBy)) {
      waits.push(delay ?? 0);
      return original(handler, 0, ...args);
    }
    return original(handler, delay, ...args);
  }) as typeof setTimeout;
  globalThis.setTimeout = Object.assign(skipping, original);
  try {
    const [outcome] = await Promise.allSettled([call()]);
    return { outcome: outcome!, waits };
  } finally {
    globalThis.setTimeout = original;
  }
}
