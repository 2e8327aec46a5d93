/**
 * The supervisor's public shape, shared by the headless entry, the console API and the Electron shell.
 * Plain Node: nothing here may import Electron. The names, states, status and log line are the
 * catalogue's (common/), re-exported because many files name them from here.
 */
import type { EventEmitter } from 'node:events';
import type { LogLine, LogPage, ServiceStatus } from '../../common/contract.ts';
import type { ServiceName } from '../../common/services.ts';
import type { CliLocation } from '../../services/model-provider/cli-binary.ts';
import type { ServiceSettingsStore } from './wiring.ts';

export { SERVICE_NAMES, type ServiceName } from '../../common/services.ts';
export type { ServiceState } from '../../common/states.ts';
export type { LogLine, LogPage, ServiceStatus } from '../../common/contract.ts';
export type { CliLocation } from '../../services/model-provider/cli-binary.ts';

export interface Supervisor extends EventEmitter {
  /**
   * Emits 'status' (ServiceStatus) on every state change, 'log' (LogLine) per line, and 'checked'
   * (supervisor.ts's LivenessCheck) after each liveness check of a running process.
   */
  readonly dataDir: string;
  status(): ServiceStatus[];
  start(name: ServiceName): Promise<void>;
  stop(name: ServiceName): Promise<void>;
  restart(name: ServiceName): Promise<void>;
  startAll(): Promise<void>;
  stopAll(): Promise<void>;
  /** The newest lines of a service's ring buffer, optionally only those containing `filter`. */
  logs(name: ServiceName, options?: { filter?: string; limit?: number }): LogLine[];
  /** A page of a service's lines, newest first: older than `before`, or newer than `after` (follow); probe requests only when asked. */
  logPage(
    name: ServiceName,
    options?: { filter?: string; limit?: number; before?: number; after?: number; probes?: boolean },
  ): LogPage;
  /** Base URL of each service, for the console API. */
  url(name: ServiceName): string;
  /** The local account's session credential (from identity's data folder), once identity has started. */
  localCredential(): Promise<string>;
  /** Identity's socket in its data folder: the one way the console calls identity (services/kit/identity-channel.ts). */
  identitySocket(): string;
  /** The provider's socket in its data folder: where the console calls it, so its calls count as the app's own. */
  providerSocket(): string;
  /** The app's settings that reach the services' environments (read at each start of a service). */
  readonly settings: ServiceSettingsStore;
  /** Probes a running service now (a person's "re-check"); its status once that probe answered. */
  recheck(name: ServiceName): Promise<ServiceStatus>;
  /**
   * The CLI the provider runs, found as the provider finds it (MODELPROV_CLI_BINARY, else PATH, else the
   * usual install locations) in the environment this supervisor gives it: the app's own answer, which
   * never comes from whatever answers on the provider's port.
   */
  providerCli(): CliLocation;
}
