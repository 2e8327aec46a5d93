/**
 * A service's states as the supervisor reports them, and the words the tray and the console use for
 * each: what it is, and what a person can do about it. Imports nothing.
 */

/** What is known of a state, in one place so that a new state is described whole. */
interface StateFacts {
  /** What the tray and the console call it. */
  words: string;
  /** What a person can do in it; empty when nothing is needed. */
  advice: string;
  /** The service's process runs (Stop applies, Start does not). */
  running: boolean;
  /** It needs a person's attention on the overview. */
  trouble: boolean;
}

/**
 * `live`: up and starting (its /ready fails for a reason of its own, e.g. a probe still running).
 * `waiting`: up, and its /ready says it waits for something outside it: a person (sign in to the CLI),
 * the network (the platform), or another service (identity); `waitingOn` names the checks.
 */
const STATES = {
  stopped: { words: 'stopped', advice: 'Start it (Services), or Start all.', running: false, trouble: false },
  starting: {
    words: 'starting',
    advice: 'Wait: it is starting; this takes a few seconds.',
    running: true,
    trouble: false,
  },
  live: {
    words: 'up, not ready yet',
    advice: 'Wait: it runs and is finishing its start (its last problem says what is still missing).',
    running: true,
    trouble: false,
  },
  waiting: {
    words: 'waiting',
    advice: 'It runs and waits for something only you can give it: its need says what, and where to do it.',
    running: true,
    trouble: false,
  },
  ready: { words: 'ready', advice: '', running: true, trouble: false },
  degraded: {
    words: 'degraded',
    advice: 'It was ready and a check now fails: read its last problem and log, then restart it if it stays so.',
    running: true,
    trouble: true,
  },
  'backing-off': {
    words: 'crashed, restarting soon',
    advice: 'It crashed and restarts by itself in a moment; its log says why it crashed.',
    running: true,
    trouble: true,
  },
  crashed: {
    words: 'crashed',
    advice: 'It crashed and restarts by itself in a moment; its log says why it crashed.',
    running: false,
    trouble: true,
  },
  'gave-up': {
    words: 'gave up',
    advice: 'It was left stopped, and its last problem says why: fix that, then start it.',
    running: false,
    trouble: true,
  },
  stopping: { words: 'stopping', advice: 'Wait: it is finishing what it was doing.', running: false, trouble: false },
} as const satisfies Record<string, StateFacts>;

export type ServiceState = keyof typeof STATES;
export const SERVICE_STATES = Object.keys(STATES) as readonly ServiceState[];

const statesWhere = (fact: 'running' | 'trouble'): ReadonlySet<ServiceState> =>
  new Set(SERVICE_STATES.filter((s) => STATES[s][fact]));
const eachState = (fact: 'words' | 'advice'): Readonly<Record<ServiceState, string>> =>
  Object.fromEntries(SERVICE_STATES.map((s) => [s, STATES[s][fact]])) as Record<ServiceState, string>;

export const STATE_WORDS = eachState('words');
export const STATE_ADVICE = eachState('advice');
/** States in which the service's process runs (Stop applies, Start does not). */
export const RUNNING_STATES = statesWhere('running');
/** States that need a person's attention on the overview. */
export const TROUBLE_STATES = statesWhere('trouble');

/** The one state the tray's icon shows for all services: the worst news first (the tray's own rule). */
export type AggregateState = 'ready' | 'starting' | 'waiting' | 'degraded' | 'error' | 'stopped';

export function aggregateState(states: readonly ServiceState[]): AggregateState {
  if (states.some((s) => s === 'gave-up' || s === 'crashed' || s === 'backing-off')) return 'error';
  if (states.every((s) => s === 'stopped')) return 'stopped';
  if (states.some((s) => s === 'degraded')) return 'degraded';
  // A service the person stopped is news before one that waits or starts: the headline and the tray must change.
  if (states.some((s) => s === 'stopped' || s === 'stopping')) return 'degraded';
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
