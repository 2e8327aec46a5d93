/**
 * The supervisor's public shape, shared by the headless entry, the console API and the Electron shell.
 * Plain Node: nothing here may import Electron.
 */
import type { EventEmitter } from 'node:events';

export const SERVICE_NAMES = ['identity', 'persona-store', 'repohost-gateway', 'model-provider'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export type ServiceState =
  | 'stopped'
  | 'starting'
  | 'live' // process up and /healthy answers, /ready not yet
  | 'ready'
  | 'degraded' // was ready, /ready now fails (never a reason to restart)
  | 'backing-off' // crashed, waiting before the next restart
  | 'crashed'
  | 'gave-up' // crashed too often; needs a person
  | 'stopping';

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

export interface LogLine {
  service: ServiceName;
  time: string;
  stream: 'stdout' | 'stderr';
  text: string;
}

export interface Supervisor extends EventEmitter {
  /** Emits 'status' (ServiceStatus) on every state change and 'log' (LogLine) per line. */
  readonly dataDir: string;
  status(): ServiceStatus[];
  start(name: ServiceName): Promise<void>;
  stop(name: ServiceName): Promise<void>;
  restart(name: ServiceName): Promise<void>;
  startAll(): Promise<void>;
  stopAll(): Promise<void>;
  /** The newest lines of a service's ring buffer, optionally only those containing `filter`. */
  logs(name: ServiceName, options?: { filter?: string; limit?: number }): LogLine[];
  /** Base URL of each service, for the console API. */
  url(name: ServiceName): string;
  /** The local account's session credential (from identity's data folder), once identity has started. */
  localCredential(): Promise<string>;
}
