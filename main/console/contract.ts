/**
 * The one console API the renderer talks to: over IPC in Electron, over HTTP headless. Both transports
 * carry the same `{ method, params }` requests and the same results; tokens stay on the main side.
 * Plain Node: nothing here may import Electron.
 */
export interface ConsoleRequest {
  method: string;
  params?: unknown;
}

/** A service's last crash as the console remembers it (the supervisor's own status forgets it once the service is back). */
export interface LastCrash {
  /** ISO time the console saw the crash. */
  at: string;
  /** The supervisor's sentence: which service, how it ended, its last stderr line. */
  reason: string;
  /** ISO time of the restart the supervisor scheduled, when it scheduled one. */
  restartAt?: string;
}

/** What `services.list` answers per service: the supervisor's status and the last crash seen. */
export type ServiceView = import('../supervisor/types.ts').ServiceStatus & { lastCrash?: LastCrash };

export type ConsoleResult = { ok: true; data: unknown } | { ok: false; error: { message: string; status?: number } };

export interface ConsoleApi {
  /** Validates the method name and params (zod) and answers; never throws, never returns a token. */
  call(request: ConsoleRequest): Promise<ConsoleResult>;
}

/**
 * The headless console: serves the renderer build and the console API over HTTP on loopback, behind a
 * per-launch secret that is part of the printed URL (as Jupyter does).
 * Implemented in main/console/server.ts as `startConsoleServer(options): Promise<ConsoleServer>`;
 * the API itself in main/console/api.ts as `createConsoleApi({ supervisor }): ConsoleApi`.
 */
export interface ConsoleServerOptions {
  supervisor: import('../supervisor/types.ts').Supervisor;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
}

export interface ConsoleServer {
  /** The URL to open, secret included. */
  readonly url: string;
  close(): Promise<void>;
}
