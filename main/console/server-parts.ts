/**
 * What the headless console (main/console/server.ts) is started with and gives back: the renderer build and
 * the console API over loopback HTTP. Plain Node: nothing here may import Electron.
 */
import type { Supervisor } from '../supervisor/types.ts';

export interface ConsoleServerParts {
  supervisor: Supervisor;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
}

export interface ConsoleServer {
  /** The URL to open, secret included. */
  readonly url: string;
  close(): Promise<void>;
}
