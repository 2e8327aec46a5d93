/**
 * The console API's contract: what the renderer sends and what it gets back, over IPC in Electron and
 * over HTTP headless. Both transports carry the same `{ method, params }` requests and the same results;
 * tokens stay on the main side. Imports nothing but this folder.
 */
import type { ServiceName } from './services.ts';
import type { ServiceState } from './states.ts';

export interface ConsoleRequest {
  method: string;
  params?: unknown;
}

export type ConsoleResult = { ok: true; data: unknown } | { ok: false; error: { message: string; status?: number } };

export interface ConsoleApi {
  /** Validates the method name and params and answers; never throws, never returns a token. */
  call(request: ConsoleRequest): Promise<ConsoleResult>;
}

/** A service's state as the supervisor reports it (main/supervisor/types.ts has the same shape). */
export interface ServiceStatus {
  name: ServiceName;
  state: ServiceState;
  port: number;
  url: string;
  pid?: number;
  /** ISO time the current process started. */
  startedAt?: string;
  uptimeMs?: number;
  /** Resident memory of the process in bytes, when known. */
  memoryBytes?: number;
  restarts: number;
  /** A sentence for a person: why it is not ready, why it crashed, why it gave up. */
  lastError?: string;
  /** While backing off after a crash: ISO time of the next restart. */
  restartAt?: string;
}

/** One line of a service's output, as `services.logs` answers it. */
export interface LogLine {
  service: ServiceName;
  time: string;
  stream: 'stdout' | 'stderr';
  text: string;
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
export type ServiceView = ServiceStatus & { lastCrash?: LastCrash };
