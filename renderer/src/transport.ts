/**
 * The one way the page reaches the console API: over IPC when the Electron preload exposed
 * `window.consoleBridge`, else over HTTP to the headless console that served this page (its cookie
 * carries the launch secret). The page never holds a token.
 */
import type { ConsoleRequest, ConsoleResult } from '../../main/common/contract.ts';

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

export function transportName(): 'ipc' | 'http' {
  return window.consoleBridge ? 'ipc' : 'http';
}

async function send(request: ConsoleRequest): Promise<ConsoleResult> {
  if (window.consoleBridge) return window.consoleBridge.call(request);
  let res: Response;
  try {
    res = await fetch('api/call', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      credentials: 'same-origin',
      body: JSON.stringify(request),
    });
  } catch {
    return { ok: false, error: { message: 'The console is not answering: `npm run serve` may have stopped. Start it again and open the new URL it prints.' } };
  }
  try {
    return (await res.json()) as ConsoleResult;
  } catch {
    return { ok: false, error: { message: `The console answered ${res.status} without a readable body; reload the page.`, status: res.status } };
  }
}

/** Calls a console method and returns its data, or throws a CallError whose message tells the user what to do. */
export async function call<T = unknown>(method: string, params?: unknown): Promise<T> {
  const result = await send(params === undefined ? { method } : { method, params });
  if (!result.ok) throw new CallError(result.error.message, result.error.status);
  return result.data as T;
}
