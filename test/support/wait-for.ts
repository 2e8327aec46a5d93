/**
 * The one way a test waits for what no event announces: the process table, a file another process
 * writes, a log line, another process's HTTP answer, a record a service keeps. Where an event exists (a
 * child's `exit`, a stream's `data`, a hold of the platform double), a test waits for that instead.
 */

/** What `probe` gives while the condition does not hold yet (anything falsy: an empty file is not written yet). */
type NotYet = undefined | null | false | 0 | '';

/** How often the condition is looked at. */
const EVERY_MS = 25;

/**
 * Looks at `probe` (it may be async) until it gives something truthy, and answers that. The timeout is only a backstop for a test that would hang: it then fails naming `what`.
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | NotYet | Promise<T | NotYet>,
  timeoutMs = 150_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, EVERY_MS));
  }
}
