/**
 * The console API's contract: what the renderer sends and what it gets back, over IPC in Electron and
 * over HTTP headless. Both transports carry the same `{ method, params }` requests and the same results;
 * tokens stay on the main side. Imports nothing but this folder.
 */
import type { Need } from './needs.ts';
import type { ServiceName } from './services.ts';
import type { AggregateState, ServiceState } from './states.ts';

export type { FirstRunStepId, Need, NeedKind } from './needs.ts';

export interface ConsoleRequest {
  method: string;
  params?: unknown;
}

export type ConsoleResult = { ok: true; data: unknown } | { ok: false; error: { message: string; status?: number } };

export interface ConsoleApi {
  /** Validates the method name and params and answers; never throws, never returns a token. */
  call(request: ConsoleRequest): Promise<ConsoleResult>;
}

/** A service's state as the supervisor reports it (re-exported by main/supervisor/types.ts). */
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
  /** While up but not ready (live, waiting, degraded): the failing /ready checks, by the service's own names (`login`, `platform`, …). */
  waitingOn?: string[];
  /** Not started (gave up) because another program held a port: its own, or that of a service it depends on. */
  portTaken?: PortTaken;
}

/** A port another program held when a service was to start: whose it is and, where the system tells, who holds it. */
export interface PortTaken {
  /** The service whose port it is: the one not started, or a service it depends on (identity). */
  service: ServiceName;
  host: string;
  port: number;
  /** The holder's process id and program name, where the system tells (Linux, a process of the same user). */
  pid?: number;
  program?: string;
  /** The holder answers like this one of our services (another copy of the app, or `npm run serve`). */
  answersAs?: ServiceName;
}

/** One line of a service's output, as `services.logs` answers it. */
export interface LogLine {
  service: ServiceName;
  time: string;
  stream: 'stdout' | 'stderr';
  text: string;
  /** Its place in the service's log since the app started: one more than the line before. */
  seq: number;
  /** A request line of a route the app polls to watch the services (/healthy, /ready, /metrics). */
  probe?: true;
}

/** `services.logPage`: lines newest first. */
export interface LogPage {
  lines: LogLine[];
  /** Pass as `before` for the older page; null when there is none (within what is kept in memory). */
  next_before: number | null;
  /** The `seq` of the newest line kept (whatever the filter): pass as `after` to follow new lines. */
  newest: number;
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

/** The forget policy the persona store will apply, as far as the console can tell before it does. */
export interface ForgetPolicy {
  mode: 'keep' | 'destroy_after_grace' | 'destroy_now';
  gracePeriodSeconds?: number;
  /**
   * Who decides: the store said so itself (`persona-store`), this installation's configuration
   * (`installation`), or a settings service per person (`settings-service`: the mode shown is the
   * installation's default, and the store applies the person's own at the moment of forgetting).
   */
  decidedBy: 'persona-store' | 'installation' | 'settings-service';
}

/** One service as a hub must be configured to reach it. */
export interface HubService {
  name: string;
  title: string;
  baseUrl: string;
  /** The audience of the tokens it checks; null when it checks none. */
  audience: string | null;
  /** `NAME=value` lines for the hub's environment. */
  env: [string, string][];
  /** A sentence on what else the hub needs for it. */
  note: string;
}

/** A count on the overview: a number, or why it is not known. */
export type Count = { value: number; more?: boolean } | { error: string };

/** Something on the overview that needs a person, and where to act on it. */
export interface Attention {
  severity: 'error' | 'warning';
  text: string;
  /** The console page that shows it (`services`, `platform`, `provider`). */
  place: string;
}

/** `overview.get`. */
export interface OverviewView {
  /** The page's headline: the aggregate state (with `waiting` also when only a need says so) and its sentence. */
  headline: { state: AggregateState; text: string };
  /** Each service with what a person can do in its state, and the one thing it waits for, if any. */
  services: (ServiceView & { advice: string; need?: Need })[];
  /** Every need, in service order: what the services wait for and the action that gives it. */
  needs: Need[];
  counts: {
    personas: Count;
    fields: Count;
    notes: Count;
    openSubscriptions: Count;
    connections: Count;
    hubCredentials: Count;
  };
  attention: Attention[];
}

/** A step of the first run, as the service that confirms it answers now. */
export interface FirstRunStepBase {
  /** Confirmed by the service just now. */
  done: boolean;
  /** Where it stands, one sentence. */
  text: string;
  /** The service could not be asked: its sentence (the step is then not done). */
  error?: string;
}

/** Sign in to the CLI: run `command` in a terminal, then type `then` inside it. */
export interface CliSignInStep extends FirstRunStepBase {
  id: 'cli-sign-in';
  /** The CLI the provider runs (its path when found, else its name). */
  command: string;
  /** What to type inside the CLI to sign in. */
  then: string;
  /** Whether this console can open a terminal with the command (the desktop app can; the browser console cannot). */
  canOpenTerminal: boolean;
}

/** A permission of a fine-grained token the gateway needs, as GitHub's token page names it. */
export interface TokenPermission {
  name: string;
  access: 'read' | 'read and write';
  /** What the gateway does with it. */
  why: string;
}

/** Connect GitHub: a fine-grained token with these permissions, added as a connection and tested through the gateway. */
export interface GithubConnectionStep extends FirstRunStepBase {
  id: 'github-connection';
  /** GitHub's page that makes a fine-grained token. */
  tokenUrl: string;
  permissions: TokenPermission[];
  /** The connections' profiles. */
  connections: string[];
  /** The account the first connection acts as, when the gateway confirmed it. */
  login?: string;
  /** The last test of the first connection, with its time: the guide opens with it rather than testing again. */
  lastTest?: ConnectionTest;
  /** No test of it yet in this run of the app: the page tests it, showing that it does. */
  untested?: boolean;
}

/** Make a hub credential (the Hub page's form). */
export interface HubCredentialStep extends FirstRunStepBase {
  id: 'hub-credential';
  /** Hub credentials that are valid now (the app's own not counted). */
  credentials: number;
}

export type FirstRunStep = CliSignInStep | GithubConnectionStep | HubCredentialStep;

/** `firstRun.get`: whether the person finished (or dismissed) the guide, and each step as the services confirm it. */
export interface FirstRunView {
  done: boolean;
  steps: [CliSignInStep, GithubConnectionStep, HubCredentialStep];
}

/** `firstRun.testConnection`: the gateway acting under a connection (`GET /v1/me`). */
export type ConnectionTest = (
  | { ok: true; profile: string; login: string; kind: string; repositories: number | null }
  | { ok: false; profile: string; message: string }
) & {
  /** ISO time of the test. */
  at: string;
};

/** `firstRun.saveConnection`: the test of the token, and whether it was kept (a failed test keeps it only if asked). */
export type ConnectionSaved = ConnectionTest & { kept: boolean };

/** `firstRun.openTerminal`. */
export interface TerminalOpened {
  opened: boolean;
  /** What happened or what to do instead, one sentence (with the command when no terminal was opened). */
  message: string;
}

/** `settings.get` and `settings.setForgetting`: what forgetting does for this person, and who chose it. */
export interface ForgettingView {
  /** Whether the person's choice reaches the persona store from here (identity is its settings service). */
  available: boolean;
  /** Why it does not, in a sentence. */
  why?: string;
  /** What the person chose; a member absent is not chosen (the installation's applies). */
  chosen: {
    mode?: 'keep' | 'destroy_after_grace' | 'destroy_now';
    gracePeriodSeconds?: number;
    keepReplacedValues?: boolean;
  };
  /** The installation's own (PERSONA_FORGET_MODE, PERSONA_GRACE_PERIOD_SECONDS, PERSONA_KEEP_REPLACED_VALUES). */
  defaults: {
    mode: 'keep' | 'destroy_after_grace' | 'destroy_now';
    gracePeriodSeconds: number;
    keepReplacedValues: boolean;
  };
}

/** The desktop app's own settings as the Settings page shows them (the tray keeps its shortcuts to them). */
export interface DesktopSettingsView {
  launchAtLogin: boolean;
  /** Why launch at login cannot be set on this system, when it cannot. */
  launchAtLoginRefused?: string;
  notifications: { serviceGaveUp: boolean; signalFailed: boolean; cliSignedOut: boolean; credentialExpiring: boolean };
  /** Where the services' log files are. */
  logFolder: string;
}

/** `settings.get`. */
export interface SettingsView {
  forgetting: ForgettingView;
  /** Days a new hub credential lives unless the person picks another; null: never. */
  hubCredentialDays: number | null;
  /** null where the console runs without the desktop app (a browser, headless). */
  desktop: DesktopSettingsView | null;
}

/** The lifetimes the hub page and Settings offer for a hub credential, in days (and never). */
export const HUB_CREDENTIAL_DAYS = [30, 90, 365] as const;
