/**
 * The first module of every service bundle (main/build/ puts it before the service's own main.ts): a
 * native module that cannot be loaded stops the service with one line saying how to fix it, and a
 * service started by the desktop app (which names itself in HUB_PARENT_PID) stops itself when the app
 * is gone.
 */
import { guardNativeModules } from './native-modules.ts';

export function startService(name: string): void {
  guardNativeModules(name);
  // Utility processes have no IPC channel whose closing would tell them the app died.
  if (process.env.HUB_PARENT_PID) void import('./parent-watch.mjs');
}
