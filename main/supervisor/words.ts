/**
 * How a service and its state are named to a person, the same in the tray menu and the console.
 * Plain data: the renderer bundles this file too, so it imports nothing.
 */
import type { ServiceName, ServiceState } from './types.ts';

export const SERVICE_TITLES: Record<ServiceName, string> = {
  identity: 'Identity',
  'persona-store': 'Persona store',
  'repohost-gateway': 'Repository gateway',
  'model-provider': 'Chat-model provider',
};

export const STATE_WORDS: Record<ServiceState, string> = {
  stopped: 'stopped',
  starting: 'starting',
  live: 'up, not ready yet',
  ready: 'ready',
  degraded: 'degraded',
  'backing-off': 'crashed, restarting soon',
  crashed: 'crashed',
  'gave-up': 'gave up',
  stopping: 'stopping',
};
