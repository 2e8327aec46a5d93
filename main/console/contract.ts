/**
 * The one console API the renderer talks to: over IPC in Electron, over HTTP headless. Both transports
 * carry the same `{ method, params }` requests and the same results; tokens stay on the main side.
 * Plain Node: nothing here may import Electron.
 */
export interface ConsoleRequest {
  method: string;
  params?: unknown;
}

export type ConsoleResult = { ok: true; data: unknown } | { ok: false; error: { message: string; status?: number } };

export interface ConsoleApi {
  /** Validates the method name and params (zod) and answers; never throws, never returns a token. */
  call(request: ConsoleRequest): Promise<ConsoleResult>;
}
