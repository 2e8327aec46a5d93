/**
 * The property every answer to hostile input must have: never a 5xx (the upstreams are kept healthy,
 * so none is expected), a refusal in the service's own envelope with a sentence that says what to do,
 * no stack trace or file path, and none of the secrets the test holds.
 */
import type { RawAnswer } from './raw-request.ts';

export type Envelope = 'problem' | 'provider' | 'console';

const STACK =
  /\n\s+at [^\n]+:\d+:\d+|\bat [\w.<>]+ \([^)]*:\d+:\d+\)|\.(?:ts|mjs|cjs|js):\d+:\d+|node_modules\/|\/work\/|\/home\//;

/** Why `answer` breaks the property, or undefined when it holds. `secrets` must not appear in it. */
export function fault(
  answer: RawAnswer,
  envelope: Envelope,
  secrets: readonly string[],
  method: string,
): string | undefined {
  if (answer.status >= 500) return `answered ${answer.status}: ${answer.body.slice(0, 300)}`;
  if (STACK.test(answer.body)) return `the answer holds a stack trace or a file path: ${answer.body.slice(0, 300)}`;
  for (const secret of secrets) {
    if (secret && answer.body.includes(secret)) return `the answer echoes a secret (${secret.slice(0, 6)}…)`;
  }
  if (answer.status < 400 || method === 'HEAD') return undefined;
  const type = String(answer.headers['content-type'] ?? '');
  let body: unknown;
  try {
    body = JSON.parse(answer.body);
  } catch {
    if (envelope === 'console' && /^text\/html/.test(type) && /<p>[^<]{10,}<\/p>/.test(answer.body)) return undefined;
    return `a ${answer.status} whose body is not JSON (${type}): ${answer.body.slice(0, 200)}`;
  }
  const sentence = (s: unknown) => typeof s === 'string' && s.trim().length >= 10;
  if (
    envelope === 'problem' ||
    (envelope === 'provider' && /problem\+json/.test(type) && [400, 408, 431].includes(answer.status))
  ) {
    const p = body as { status?: unknown; title?: unknown; detail?: unknown };
    if (!/^application\/problem\+json/.test(type)) return `a ${answer.status} that is not problem+json (${type})`;
    if (p.status !== answer.status || typeof p.title !== 'string' || !sentence(p.detail))
      return `a ${answer.status} problem without status, title or detail: ${answer.body.slice(0, 200)}`;
    return undefined;
  }
  if (envelope === 'provider') {
    const e = (body as { error?: { message?: unknown; type?: unknown; code?: unknown } }).error;
    if (
      !/^application\/json/.test(type) ||
      !e ||
      !sentence(e.message) ||
      typeof e.type !== 'string' ||
      typeof e.code !== 'string'
    ) {
      return `a ${answer.status} outside the chat-completions error envelope: ${answer.body.slice(0, 200)}`;
    }
    return undefined;
  }
  const e = (body as { ok?: unknown; error?: { message?: unknown } }).error;
  if ((body as { ok?: unknown }).ok !== false || !e || !sentence(e.message))
    return `a ${answer.status} outside the console's envelope: ${answer.body.slice(0, 200)}`;
  return undefined;
}
