/**
 * The console's server-side types. What the renderer sees (requests, results, service views) lives in
 * common/contract.ts, which imports nothing; it is re-exported here for the main side.
 * Plain Node: nothing here may import Electron.
 */
export type { ConsoleApi, ConsoleRequest, ConsoleResult, LastCrash, ServiceView } from '../../common/contract.ts';

/** The headless console (main/console/server.ts): the renderer build and the console API over loopback HTTP. */
export interface ConsoleServerParts {
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
