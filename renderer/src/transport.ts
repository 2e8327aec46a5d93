/**
 * The one way the page reaches the console API: over IPC when the Electron preload exposed
 * `window.consoleBridge`, else over HTTP to the headless console that served this page, with the
 * launch secret as the `X-Console-Secret` header. The secret arrives in the URL's fragment (never sent
 * to a server), is kept in sessionStorage (this origin's alone: no other server on 127.0.0.1 can read
 * it, as it could a cookie) and leaves the address bar at once. The page never holds a token.
 */
import type { ConsoleRequest, ConsoleResult } from '../../common/contract.ts';

declare global {
  interface Window {
    consoleBridge?: { call(request: ConsoleRequest): Promise<ConsoleResult> };
  }
}

export class CallError extends Error {
  override name = 'CallError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** Where this tab keeps the launch secret: sessionStorage, scoped to the console's origin (port included) and this tab. */
const SECRET_KEY = 'hub-console-secret';
export const SECRET_HEADER = 'x-console-secret';
let launchSecret: string | undefined;

/**
 * Run once at start-up, before anything reads the address: takes `#secret=…` out of the address bar
 * (and the history) into sessionStorage, so a reload keeps working and the secret is never shown again.
 */
export function takeLaunchSecret(): void {
  if (window.consoleBridge) return;
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get('secret');
  try {
    if (given) sessionStorage.setItem(SECRET_KEY, given);
    launchSecret = given ?? sessionStorage.getItem(SECRET_KEY) ?? undefined;
  } catch {
    // Storage refused (a locked-down browser): this page still works until it is reloaded.
    launchSecret = given ?? undefined;
  }
  if (given) history.replaceState(null, '', `${location.pathname}${location.search}`);
}

export function transportName(): 'ipc' | 'http' {
  return window.consoleBridge ? 'ipc' : 'http';
}

async function send(request: ConsoleRequest): Promise<ConsoleResult> {
  if (window.consoleBridge) return window.consoleBridge.call(request);
  let res: Response;
  try {
    res = await fetch('api/call', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(launchSecret ? { [SECRET_HEADER]: launchSecret } : {}) },
      credentials: 'omit',
      body: JSON.stringify(request),
    });
  } catch {
    return {
      ok: false,
      error: {
        message:
          'The console is not answering: `npm run serve` may have stopped. Start it again and open the new URL it prints.',
      },
    };
  }
  try {
    return (await res.json()) as ConsoleResult;
  } catch {
    return {
      ok: false,
      error: {
        message: `The console answered ${res.status} without a readable body; reload the page.`,
        status: res.status,
      },
    };
  }
}

/** Calls a console method and returns its data, or throws a CallError whose message tells the user what to do. */
export async function call<T = unknown>(method: string, params?: unknown): Promise<T> {
  const result = await send(params === undefined ? { method } : { method, params });
  if (!result.ok) throw new CallError(result.error.message, result.error.status);
  return result.data as T;
}
