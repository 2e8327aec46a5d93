/**
 * What a running service waits for that it cannot get by itself, in words, with the one action that
 * fixes it: the supervisor's `waiting` state (from the failing /ready checks, by the services' own
 * names) and the overview's cards, headline and tray tooltip. Imports nothing outside this folder.
 */
import type { PortTaken } from './contract.ts';
import { SERVICE_CATALOGUE, type ServiceName } from './services.ts';
import { AGGREGATE_WORDS, aggregateState, type AggregateState, type ServiceState } from './states.ts';

export const FIRST_RUN_STEPS = ['cli-sign-in', 'github-connection', 'hub-credential'] as const;
export type FirstRunStepId = (typeof FIRST_RUN_STEPS)[number];

export type NeedKind =
  | 'cli-sign-in'
  | 'cli-missing'
  | 'provider-lockdown'
  | 'platform-unreachable'
  | 'github-connection'
  | 'identity-service'
  | 'configuration'
  | 'port-taken';

/** Something a service waits for, and the one thing that gives it. */
export interface Need {
  kind: NeedKind;
  service: ServiceName;
  /** What is wrong, one sentence. */
  text: string;
  /** The one action that fixes it, short and imperative ("Sign in to the CLI"). */
  action: string;
  /** The console page where that action is: `first-run`, `services`, `provider`, `platform`. */
  place: string;
  /** When the action is a step of the first run. */
  step?: FirstRunStepId;
}

/** A failing /ready check: its name, and its state when the service reports one (the provider's lockdown, login). */
export interface FailingCheck {
  name: string;
  state?: string;
}

/** The provider's lockdown while its probe runs (or before a CLI is there) is its own start, not a wait. */
const STARTING_CHECK_STATES = new Set(['pending', 'unknown']);

/**
 * Whether a service that is up but not ready waits on the outside: every failing check is an outside
 * one. A wait on identity (its keys, or its answer on its socket) is the service's own start while
 * identity runs (they are on their way), and a wait for the person only once identity is not running.
 */
export function waitsOutside(
  service: ServiceName,
  failing: readonly FailingCheck[],
  identityRunning: boolean,
): boolean {
  if (failing.length === 0) return false;
  return failing.every((c) => {
    if (!SERVICE_CATALOGUE[service].waitsOn.includes(c.name)) return false;
    if (c.name === 'identity_keys' || c.name === 'identity') return !identityRunning;
    if (c.name === 'lockdown' && c.state !== undefined && STARTING_CHECK_STATES.has(c.state)) return false;
    return true;
  });
}

const NEEDS: Readonly<Record<string, Omit<Need, 'service'>>> = {
  login: {
    kind: 'cli-sign-in',
    text: 'The CLI is not signed in, so the chat-model provider cannot answer.',
    action: 'Sign in to the CLI',
    place: 'first-run',
    step: 'cli-sign-in',
  },
  cli: {
    kind: 'cli-missing',
    text: 'The chat-model provider finds no CLI to run (install it, or name it with MODELPROV_CLI_BINARY).',
    action: 'Install the CLI, then restart the provider',
    place: 'provider',
  },
  lockdown: {
    kind: 'provider-lockdown',
    text: 'The CLI loads tools, MCP servers or hooks, so the provider runs nothing.',
    action: 'Remove them from the CLI\u2019s configuration, then restart the provider',
    place: 'provider',
  },
  platform: {
    kind: 'platform-unreachable',
    // The supervisor asks its /ready every few seconds: there is no re-check for the person to press.
    text: 'The repository gateway cannot reach the platform (GitHub, or the address in REPOHOST_PLATFORM_URL); it tries again every few seconds.',
    action: 'Check the network',
    place: 'services',
  },
  identity_keys: {
    kind: 'identity-service',
    text: 'It cannot get the identity service\u2019s signing keys, so it accepts no token.',
    action: 'Start the identity service',
    place: 'services',
  },
  identity: {
    kind: 'identity-service',
    text: 'The identity service does not answer on its socket, so no session can be confirmed and every call is refused.',
    action: 'Start the identity service',
    place: 'services',
  },
  service_token: {
    kind: 'configuration',
    text: 'The gateway has no service token for the identity service (REPOHOST_IDENTITY_SERVICE_TOKEN).',
    action: 'Give the gateway its service token, then restart it',
    place: 'services',
  },
};

/** The need of a service in the `waiting` state (its first failing outside check), or of one a taken port kept from starting, in words. */
export function serviceNeed(status: {
  name: ServiceName;
  state: ServiceState;
  waitingOn?: readonly string[];
  portTaken?: PortTaken;
}): Need | undefined {
  if (status.state === 'gave-up' && status.portTaken) return portTakenNeed(status.name, status.portTaken);
  if (status.state !== 'waiting') return undefined;
  const check = (status.waitingOn ?? []).find((c) => SERVICE_CATALOGUE[status.name].waitsOn.includes(c) && NEEDS[c]);
  return check ? { service: status.name, ...NEEDS[check]! } : undefined;
}

/** Who holds a port, as a sentence names it: "python3 (process 4242)", "another copy of the identity service". */
export function portHolderWords(taken: PortTaken): string {
  const proc = taken.pid !== undefined ? `process ${taken.pid}` : undefined;
  const program = taken.program && proc ? `${taken.program} (${proc})` : (taken.program ?? proc);
  if (taken.answersAs) {
    const copy = `another copy of the ${SERVICE_CATALOGUE[taken.answersAs].label}`;
    return program ? `${copy}, ${program}` : copy;
  }
  return program ?? 'another program';
}

/**
 * A service left unstarted because another program held a port: its own, or that of a service it depends
 * on (whose tokens it would otherwise have trusted from whatever answers there). The one action: free the
 * port (or move the service), then start the service whose port it is; its dependants start with it.
 */
export function portTakenNeed(name: ServiceName, taken: PortTaken): Need {
  const owner = SERVICE_CATALOGUE[taken.service];
  const holder = portHolderWords(taken);
  const text =
    taken.service === name
      ? `Port ${taken.port} of the ${owner.label} is held by ${holder}, not by this app, so the ${owner.label} was not started.`
      : `The ${SERVICE_CATALOGUE[name].label} was not started: it trusts the ${owner.label}, whose port ${taken.port} is held by ${holder}, not by this app.`;
  const stop = holder === 'another program' ? `the program that holds port ${taken.port}` : holder;
  return {
    kind: 'port-taken',
    service: name,
    // The button names no variable; the sentence beside it says how to move the service instead.
    text: `${text} To move the ${owner.label} instead, set ${owner.prefix}PORT to a free port.`,
    action: `Stop ${stop}, then start the ${owner.label}`,
    place: 'services',
  };
}

/** The gateway is ready but acts for nobody: no platform connection has been added. */
export const CONNECTION_NEED: Need = {
  kind: 'github-connection',
  service: 'repohost-gateway',
  text: 'The repository gateway has no GitHub connection, so it can act on no repository.',
  action: 'Connect GitHub',
  place: 'first-run',
  step: 'github-connection',
};

/**
 * The page's headline (and the tray's tooltip): the aggregate state and a sentence; when something
 * waits for the person, the sentence lists the actions; when the person stopped some services while
 * others run, it names them. `needs` may include what the states cannot show (a gateway without a
 * connection), which turns an all-ready headline into "waiting" too.
 */
export function headline(
  services: readonly { name: ServiceName; state: ServiceState }[],
  needs: readonly Need[],
): { state: AggregateState; text: string } {
  const aggregate = aggregateState(services.map((s) => s.state));
  const taken = [...new Set(needs.filter((n) => n.kind === 'port-taken').map((n) => n.action))];
  if (taken.length > 0)
    return { state: 'error', text: `A port of this app is held by another program: ${taken.join('; ')}.` };
  const stopped = services.filter((s) => s.state === 'stopped' || s.state === 'stopping');
  if (aggregate === 'degraded' && stopped.length > 0 && stopped.length < services.length) {
    const names = stopped.map((s) => SERVICE_CATALOGUE[s.name].label).join(', ');
    return {
      state: aggregate,
      text: `Stopped: ${names}. Start ${stopped.length === 1 ? 'it' : 'them'} on the Services page.`,
    };
  }
  const waiting = needs.length > 0 && (aggregate === 'ready' || aggregate === 'waiting' || aggregate === 'starting');
  if (!waiting) return { state: aggregate, text: `${AGGREGATE_WORDS[aggregate]}.` };
  const actions = [...new Set(needs.map((n) => n.action))];
  const list = actions.map((a, i) => (i === 0 ? a : a.charAt(0).toLowerCase() + a.slice(1))).join('; ');
  return { state: 'waiting', text: `${AGGREGATE_WORDS.waiting}: ${list}.` };
}
