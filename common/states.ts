/**
 * A service's states as the supervisor reports them, and the words the tray and the console use for
 * each: what it is, and what a person can do about it. Imports nothing.
 */

/**
 * `live`: up and starting (its /ready fails for a reason of its own, e.g. a probe still running).
 * `waiting`: up, and its /ready says it waits for something outside it: a person (sign in to the CLI),
 * the network (the platform), or another service (identity); `waitingOn` names the checks.
 */
export const SERVICE_STATES = [
  'stopped',
  'starting',
  'live',
  'waiting',
  'ready',
  'degraded',
  'backing-off',
  'crashed',
  'gave-up',
  'stopping',
] as const;
export type ServiceState = (typeof SERVICE_STATES)[number];

export const STATE_WORDS: Readonly<Record<ServiceState, string>> = {
  stopped: 'stopped',
  starting: 'starting',
  live: 'up, not ready yet',
  waiting: 'waiting',
  ready: 'ready',
  degraded: 'degraded',
  'backing-off': 'crashed, restarting soon',
  crashed: 'crashed',
  'gave-up': 'gave up',
  stopping: 'stopping',
};

/** What a person can do in each state; empty when nothing is needed. */
export const STATE_ADVICE: Readonly<Record<ServiceState, string>> = {
  stopped: 'Start it (Services), or Start all.',
  starting: 'Wait: it is starting; this takes a few seconds.',
  live: 'Wait: it runs and is finishing its start (its last problem says what is still missing).',
  waiting: 'It runs and waits for something only you can give it: its need says what, and where to do it.',
  ready: '',
  degraded: 'It was ready and a check now fails: read its last problem and log, then restart it if it stays so.',
  'backing-off': 'It crashed and restarts by itself in a moment; its log says why it crashed.',
  crashed: 'It crashed and restarts by itself in a moment; its log says why it crashed.',
  'gave-up': 'It crashed too often and was left stopped: read its last problem and log, fix that, then start it.',
  stopping: 'Wait: it is finishing what it was doing.',
};

/** States in which the service's process runs (Stop applies, Start does not). */
export const RUNNING_STATES: ReadonlySet<ServiceState> = new Set([
  'starting',
  'live',
  'waiting',
  'ready',
  'degraded',
  'backing-off',
]);

/** States that need a person's attention on the overview. */
export const TROUBLE_STATES: ReadonlySet<ServiceState> = new Set(['degraded', 'backing-off', 'crashed', 'gave-up']);

/** The one state the tray's icon shows for all services: the worst news first (the tray's own rule). */
export type AggregateState = 'ready' | 'starting' | 'waiting' | 'degraded' | 'error' | 'stopped';

export function aggregateState(states: readonly ServiceState[]): AggregateState {
  if (states.some((s) => s === 'gave-up' || s === 'crashed' || s === 'backing-off')) return 'error';
  if (states.every((s) => s === 'stopped')) return 'stopped';
  if (states.some((s) => s === 'degraded')) return 'degraded';
  // Before "starting": a service waiting for the person must not read as one that only needs time.
  if (states.some((s) => s === 'waiting')) return 'waiting';
  if (states.some((s) => s === 'starting' || s === 'live' || s === 'stopping')) return 'starting';
  if (states.every((s) => s === 'ready')) return 'ready';
  // Some ready, some stopped by the person.
  return 'degraded';
}

/** What the tray's icon means, in words (the page's alt text and the overview's headline). */
export const AGGREGATE_WORDS: Readonly<Record<AggregateState, string>> = {
  ready: 'All services are ready',
  starting: 'Services are starting',
  waiting: 'Waiting for you',
  degraded: 'Some services are not ready',
  error: 'A service crashed or gave up',
  stopped: 'All services are stopped',
};
