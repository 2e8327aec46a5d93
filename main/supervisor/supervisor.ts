import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogLine, LogPage, PortTaken, ServiceStatus } from '../../common/contract.ts';
import { waitsOutside, type FailingCheck } from '../../common/needs.ts';
import {
  dependsOn,
  LOCAL_SESSION_FILE,
  SERVICE_CATALOGUE,
  SERVICE_NAMES,
  type ServiceName,
} from '../../common/services.ts';
import { LISTEN_VARIABLE } from '../../services/kit/supervised.ts';
import { RUNNING_STATES, type ServiceState } from '../../common/states.ts';
import { CrashHistory, DEFAULT_RESTART_POLICY, backoffDelay, type RestartPolicy } from './backoff.ts';
import { nodeChildLauncher, type ManagedProcess, type ProcessLauncher } from './launcher.ts';
import { LogFiles, LogRing, lineSplitter, type LogPageOptions } from './log-buffer.ts';
import { NEEDS_A_PERSON_EXIT } from './native-modules.ts';
import { HeldPort, PortTakenError } from './held-port.ts';
import { capitalised, describeBusyPort, heldBackMessage, serviceLabel } from './ports.ts';
import { STAND_IN_ENVELOPES, standInAnswer } from './stand-in.ts';
import { descendants, residentBytes } from './process-tree.ts';
import { locateCli, type CliLocation } from '../../services/model-provider/cli-binary.ts';
import type { Supervisor } from './types.ts';
import {
  baseUrl,
  gatewayServiceToken,
  identityPlaces,
  personaSettingsToken,
  placement,
  providerSocket,
  serviceEnv,
  settingsFile,
  type Placement,
  type ServiceSettingsStore,
} from './wiring.ts';

/** Emitted as 'checked' after each liveness check of a running process: whether its event loop answered. */
export interface LivenessCheck {
  name: ServiceName;
  pid: number | undefined;
  alive: boolean;
}

export interface SupervisorParts {
  /** The app's data folder: one sub-folder per service, the gateway token, and logs/. */
  dataDir: string;
  /** The environment the services' variables come from (default process.env). */
  env?: NodeJS.ProcessEnv;
  launcher?: ProcessLauncher;
  /** The services this supervisor manages (default all four). */
  services?: readonly ServiceName[];
  restartPolicy?: Partial<RestartPolicy>;
  /** SIGTERM, then SIGKILL after this long. */
  stopTimeoutMs?: number;
  /** How long a new process may take to answer /healthy before it counts as a failed start. */
  startTimeoutMs?: number;
  /** Probe interval once a service is ready. */
  pollMs?: number;
  /** Consecutive failed /healthy probes of a running service that mean it is hung and must be restarted. */
  livenessFailures?: number;
  /** How long one /healthy or /ready probe may take before it counts as failed (default 5 s: a busy machine answers late, not never). */
  probeTimeoutMs?: number;
  /** Lines kept per service for the console. */
  logLines?: number;
  /** The app's settings that reach the services (the desktop's own store; default `<dataDir>/settings.json`). */
  settings?: ServiceSettingsStore;
}

interface Slot {
  name: ServiceName;
  state: ServiceState;
  placement: Placement;
  desired: 'running' | 'stopped';
  proc?: ManagedProcess;
  startedAt?: number;
  restarts: number;
  lastError?: string;
  generation: number;
  crashes: CrashHistory;
  timer?: NodeJS.Timeout;
  healthFailures: number;
  /** Why we are killing it, when it is we who end it (failed liveness). */
  killReason?: string;
  stderrTail: string[];
  /** When the next restart is due, while backing off. */
  restartAt?: number;
  /** The failing /ready checks of the last probe, while not ready. */
  waitingOn?: string[];
  /** The current process has been ready at least once (a later failure is degraded or waiting, not live). */
  wasReady?: boolean;
  exited?: Promise<void>;
  starting?: Promise<void>;
  /** The port, held for the app's life once bound (held-port.ts). */
  held?: HeldPort;
  binding?: Promise<void>;
  /** Why the last try to bind its port failed (another program holds it, or the address cannot be bound). */
  busyPort?: { message: string; taken?: PortTaken };
  /** While given up for a port held by another program (its own, or that of a service it trusts): which. */
  notStartedFor?: PortTaken;
  /** The current process said it listens (over its channel): its liveness is asked from then on. */
  listening: boolean;
  listenTimer?: NodeJS.Timeout;
  /** A process of it was started since the app began (a stopped service that never was says so). */
  everStarted: boolean;
}

export class ServiceSupervisor extends EventEmitter implements Supervisor {
  readonly dataDir: string;
  readonly settings: ServiceSettingsStore;
  private readonly env: NodeJS.ProcessEnv;
  private readonly launcher: ProcessLauncher;
  private readonly policy: RestartPolicy;
  private readonly slots = new Map<ServiceName, Slot>();
  private readonly rings = new Map<ServiceName, LogRing>();
  private readonly files: LogFiles;
  private readonly stopTimeoutMs: number;
  private readonly startTimeoutMs: number;
  private readonly pollMs: number;
  private readonly livenessFailures: number;
  private readonly probeTimeoutMs: number;
  private gatewayToken?: string;
  private settingsToken?: string;
  private prepared?: Promise<void>;
  /** Ports this app listens on besides the services' (the headless console's): no signal goes there. */
  private readonly appPorts = new Set<number>();
  /** The first start binds every service's port at once (held-port.ts). */
  private allHeld?: Promise<void>;
  private closing = false;
  /** Liveness questions in flight, by id: each resolves when its process answers. */
  private readonly pings = new Map<number, () => void>();
  private lastPing = 0;
  /** Relay mode: the folder (0700) of the socket files the services listen on, and whether it is a temporary one. */
  private relayFolder?: { path: string; temporary: boolean };
  private readonly pipeName = randomBytes(12).toString('hex');

  constructor(options: SupervisorParts) {
    super();
    this.dataDir = options.dataDir;
    this.env = options.env ?? process.env;
    this.settings = options.settings ?? settingsFile(this.dataDir);
    this.launcher = options.launcher ?? nodeChildLauncher();
    this.policy = { ...DEFAULT_RESTART_POLICY, ...options.restartPolicy };
    this.stopTimeoutMs = options.stopTimeoutMs ?? 5_000;
    this.startTimeoutMs = options.startTimeoutMs ?? 30_000;
    this.pollMs = options.pollMs ?? 5_000;
    this.livenessFailures = options.livenessFailures ?? 3;
    this.probeTimeoutMs = options.probeTimeoutMs ?? 5_000;
    this.files = new LogFiles(join(this.dataDir, 'logs'));
    for (const name of options.services ?? SERVICE_NAMES) {
      this.slots.set(name, {
        name,
        state: 'stopped',
        placement: placement(name, this.dataDir, this.env),
        desired: 'stopped',
        restarts: 0,
        generation: 0,
        crashes: new CrashHistory(this.policy),
        healthFailures: 0,
        stderrTail: [],
        listening: false,
        everStarted: false,
      });
      this.rings.set(name, new LogRing(options.logLines ?? 2_000));
    }
  }

  /** The services this supervisor manages, in start order. */
  /**
   * A port this app listens on besides the services (the headless console's): the gateway refuses
   * signals to it (REPOHOST_SIGNAL_REFUSED_PORTS) from its next start on, so call it before startAll.
   */
  refuseSignalsTo(port: number): void {
    this.appPorts.add(port);
  }

  services(): ServiceName[] {
    return [...this.slots.keys()];
  }

  status(): ServiceStatus[] {
    return [...this.slots.values()].map((s) => this.describe(s));
  }

  url(name: ServiceName): string {
    return baseUrl(this.slot(name).placement);
  }

  logs(name: ServiceName, options?: { filter?: string; limit?: number }): LogLine[] {
    this.slot(name);
    return this.rings.get(name)!.tail(options);
  }

  logPage(name: ServiceName, options?: LogPageOptions): LogPage {
    this.slot(name);
    return this.rings.get(name)!.page(options);
  }

  async localCredential(): Promise<string> {
    const file = join(
      this.slots.get('identity')?.placement.dataDir ?? join(this.dataDir, 'identity'),
      LOCAL_SESSION_FILE,
    );
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (existsSync(file)) {
        const credential = readFileSync(file, 'utf8').trim();
        if (credential) return credential;
      }
      const identity = this.slots.get('identity');
      const running = identity && RUNNING_STATES.has(identity.state);
      if (!running || Date.now() > deadline) {
        throw new Error(
          'The local session is not there yet: start the identity service; it writes the session when it first starts.',
        );
      }
      await sleep(100);
    }
  }

  identitySocket(): string {
    return identityPlaces(this.dataDir, this.env).socket;
  }

  providerSocket(): string {
    return providerSocket(this.dataDir, this.env);
  }

  async start(name: ServiceName): Promise<void> {
    const slot = this.slot(name);
    if (slot.state === 'stopping') await slot.exited;
    if (slot.proc || slot.starting) {
      slot.desired = 'running';
      return slot.starting;
    }
    slot.desired = 'running';
    this.clearTimer(slot);
    if (slot.state !== 'backing-off') {
      slot.crashes.clear();
      slot.lastError = undefined;
    }
    slot.starting = this.launch(slot).finally(() => (slot.starting = undefined));
    return slot.starting;
  }

  async stop(name: ServiceName): Promise<void> {
    const slot = this.slot(name);
    slot.desired = 'stopped';
    // The log says so, or a person reading "restarting in N ms" would wait for a restart that never comes.
    if (slot.state === 'backing-off' && slot.timer) this.note(slot.name, 'restart called off: stopped in this app');
    this.clearTimer(slot);
    if (slot.starting) await slot.starting;
    if (!slot.proc) {
      if (slot.state !== 'stopped') this.setState(slot, 'stopped');
      return;
    }
    this.setState(slot, 'stopping');
    await this.terminate(slot);
  }

  async restart(name: ServiceName): Promise<void> {
    await this.stop(name);
    await this.start(name);
  }

  async startAll(): Promise<void> {
    await Promise.all(this.services().map((n) => this.start(n)));
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.services().map((n) => this.stop(n)));
  }

  /** Stops every service, releases their ports and closes the log files; the supervisor is not used afterwards. */
  async close(): Promise<void> {
    this.closing = true;
    await this.stopAll();
    const slots = [...this.slots.values()];
    await Promise.all(slots.map((s) => s.binding));
    await Promise.all(slots.map((s) => s.held?.close()));
    if (this.relayFolder) {
      for (const name of this.services()) rmSync(this.relayPath(name), { force: true });
      if (this.relayFolder.temporary) rmSync(this.relayFolder.path, { recursive: true, force: true });
    }
    await this.files.close();
  }

  /**
   * Resolves when every named service has settled: ready, or in a state that needs a person (waiting,
   * gave up, stopped). Rejects after `timeoutMs` naming the ones still on their way.
   */
  waitUntilSettled(names: readonly ServiceName[] = this.services(), timeoutMs = 60_000): Promise<ServiceStatus[]> {
    const settled = (s: ServiceStatus) =>
      s.state === 'ready' || s.state === 'waiting' || s.state === 'gave-up' || s.state === 'stopped';
    const pick = () => this.status().filter((s) => names.includes(s.name));
    return new Promise((resolve, reject) => {
      const check = () => {
        const now = pick();
        if (now.every(settled)) {
          cleanup();
          resolve(now);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        const waiting = pick().filter((s) => !settled(s));
        reject(
          new Error(
            `Still waiting after ${Math.round(timeoutMs / 1000)} s for ${waiting.map((s) => `${s.name} (${s.state})`).join(', ')}.`,
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.off('status', check);
      };
      this.on('status', check);
      check();
    });
  }

  private slot(name: ServiceName): Slot {
    const slot = this.slots.get(name);
    if (!slot) throw new Error(`Unknown service ${String(name)}; the services are ${this.services().join(', ')}.`);
    return slot;
  }

  private describe(s: Slot): ServiceStatus {
    const pid = s.proc?.pid;
    return {
      name: s.name,
      state: s.state,
      port: s.placement.port,
      url: baseUrl(s.placement),
      ...(pid !== undefined ? { pid } : {}),
      ...(s.startedAt !== undefined && s.proc
        ? { startedAt: new Date(s.startedAt).toISOString(), uptimeMs: Date.now() - s.startedAt }
        : {}),
      ...(pid !== undefined ? optional('memoryBytes', s.proc?.memoryBytes?.() ?? residentBytes(pid)) : {}),
      restarts: s.restarts,
      ...(s.lastError ? { lastError: s.lastError } : {}),
      ...(s.state === 'backing-off' && s.restartAt !== undefined
        ? { restartAt: new Date(s.restartAt).toISOString() }
        : {}),
      ...(s.waitingOn?.length && (s.state === 'live' || s.state === 'waiting' || s.state === 'degraded')
        ? { waitingOn: [...s.waitingOn] }
        : {}),
      ...(s.state === 'gave-up' && s.notStartedFor ? { portTaken: { ...s.notStartedFor } } : {}),
    };
  }

  /** Changes state (and the sentence why); emits 'status' only when either actually changed. */
  private setState(slot: Slot, state: ServiceState, lastError?: string): void {
    const errorChanged = lastError !== undefined && lastError !== slot.lastError;
    if (lastError !== undefined) slot.lastError = lastError;
    if (slot.state === state && !errorChanged) return;
    slot.state = state;
    this.emit('status', this.describe(slot));
    // The services a taken port of this one kept from starting start with it.
    if (state === 'ready') {
      for (const other of this.slots.values()) {
        if (other.state === 'gave-up' && other.notStartedFor?.service === slot.name && other !== slot) {
          this.note(other.name, `starting: ${serviceLabel(slot.name)} runs on its own port now`);
          void this.start(other.name);
        }
      }
    }
  }

  private note(name: ServiceName, text: string, at = Date.now()): void {
    this.record({ service: name, time: new Date(at).toISOString(), stream: 'stderr', text: `[supervisor] ${text}` });
  }

  private record(line: Omit<LogLine, 'seq' | 'probe'>): void {
    const kept = this.rings.get(line.service)!.push(line);
    this.files.write(line);
    this.emit('log', kept);
  }

  /** The environment a service starts with: the user's variables and the wiring (wiring.ts). */
  private environmentOf(name: ServiceName): Record<string, string> {
    this.gatewayToken ??= gatewayServiceToken(this.dataDir);
    this.settingsToken ??= personaSettingsToken(this.dataDir);
    const places = identityPlaces(this.dataDir, this.env);
    return serviceEnv(name, this.env, {
      dataDir: this.dataDir,
      identityUrl: this.identityUrl(),
      identityKeysFile: places.keysFile,
      identitySocket: places.socket,
      gatewayToken: this.gatewayToken,
      settingsToken: this.settingsToken,
      appPorts: this.appPorts,
      providerStream: this.settings.get().providerStream,
    });
  }

  providerCli(): CliLocation {
    const env = this.environmentOf('model-provider');
    return locateCli(env.MODELPROV_CLI_BINARY, env);
  }

  private identityUrl(): string {
    return this.env.IDENTITY_PUBLIC_URL || baseUrl(placement('identity', this.dataDir, this.env));
  }

  private async launch(slot: Slot): Promise<void> {
    const generation = ++slot.generation;
    this.setState(slot, 'starting');
    // The ports first: held (and answered for) while the bundles are checked or rebuilt.
    if (!(await this.holdPort(slot))) return;
    if (slot.generation !== generation || slot.desired !== 'running') return;
    this.prepared ??= (this.launcher.prepare?.(this.services()) ?? Promise.resolve(undefined)).then((fallback) => {
      if (fallback) for (const name of this.services()) this.note(name, fallback);
    });
    await this.prepared;
    if (slot.generation !== generation || slot.desired !== 'running') return;
    const listenAt = this.launcher.takesHandles ? 'handle' : `socket:${this.relayPath(slot.name)}`;
    if (!this.launcher.takesHandles) rmSync(this.relayPath(slot.name), { force: true });
    const env = { ...this.environmentOf(slot.name), [LISTEN_VARIABLE]: listenAt };
    const proc = this.launcher.launch(slot.name, env);
    slot.proc = proc;
    slot.everStarted = true;
    slot.startedAt = Date.now();
    slot.healthFailures = 0;
    slot.killReason = undefined;
    slot.stderrTail = [];
    slot.waitingOn = undefined;
    slot.wasReady = false;
    slot.listening = false;
    proc.onMessage((message, handle) => this.heard(slot, generation, proc, message, handle));
    const time = () => new Date().toISOString();
    const out = lineSplitter((text) => this.record({ service: slot.name, time: time(), stream: 'stdout', text }));
    const err = lineSplitter((text) => {
      slot.stderrTail = [...slot.stderrTail.slice(-9), text];
      this.record({ service: slot.name, time: time(), stream: 'stderr', text });
    });
    proc.stdout?.on('data', (d: Buffer) => out.push(d));
    proc.stderr?.on('data', (d: Buffer) => err.push(d));
    slot.exited = new Promise<void>((resolve) =>
      proc.onExit((code, signal) => {
        // Let the last output arrive before the exit is judged on it.
        setImmediate(() => {
          out.flush();
          err.flush();
          this.handleExit(slot, generation, code, signal);
          resolve();
        });
      }),
    );
    // A process that never listens (stuck in its start) is ended and started again, as a hung one is.
    clearTimeout(slot.listenTimer);
    slot.listenTimer = setTimeout(() => {
      if (slot.generation === generation && slot.proc === proc && !slot.listening && slot.state !== 'stopping') {
        this.livenessFailed(
          slot,
          `did not start listening within ${Math.round(this.startTimeoutMs / 1000)} s of starting`,
        );
      }
    }, this.startTimeoutMs);
    this.note(slot.name, `started (pid ${proc.pid ?? 'unknown'}) on ${baseUrl(slot.placement)}`);
    this.emit('status', this.describe(slot));
  }

  /**
   * Holds the service's port (the first start binds every service's port at once), and that of each
   * service it trusts; false, with the service given up and the reason, when another program holds one.
   */
  private async holdPort(slot: Slot): Promise<boolean> {
    this.allHeld ??= Promise.all(this.services().map((n) => this.hold(this.slot(n)))).then(() => undefined);
    await this.allHeld;
    // A port taken before is tried again: the person may have freed it since.
    await this.hold(slot);
    let message: string | undefined;
    let taken: PortTaken | undefined;
    if (!slot.held) {
      message = slot.busyPort?.message ?? `${serviceLabel(slot.name)} could not have its port.`;
      taken = slot.busyPort?.taken;
    } else {
      for (const trusted of dependsOn(slot.name)) {
        const other = this.slots.get(trusted);
        if (!other || other.held) continue;
        await this.hold(other);
        if (other.held || !other.busyPort?.taken) continue;
        taken = other.busyPort.taken;
        message = heldBackMessage(slot.name, taken);
        break;
      }
    }
    if (message === undefined) {
      slot.notStartedFor = undefined;
      return true;
    }
    slot.notStartedFor = taken;
    slot.desired = 'stopped';
    this.note(slot.name, message);
    this.setState(slot, 'gave-up', message);
    return false;
  }

  /** Binds the service's port unless it is held already; a failure is kept in `busyPort`. */
  private hold(slot: Slot): Promise<void> {
    if (slot.held || this.closing) return Promise.resolve();
    slot.binding ??= (async () => {
      const { host, port } = slot.placement;
      try {
        slot.held = await HeldPort.bind({
          host,
          port,
          mode: this.launcher.takesHandles ? 'handle' : 'relay',
          early: STAND_IN_ENVELOPES[slot.name],
          speaker: capitalised(serviceLabel(slot.name)),
          answer: () => standInAnswer(slot.name, slot),
        });
        slot.busyPort = undefined;
      } catch (err) {
        // Two of this app's own services set to one port: no other program to name.
        const twin = [...this.slots.values()].find((other) => other !== slot && other.placement.port === port);
        slot.busyPort =
          err instanceof PortTakenError && twin
            ? {
                message:
                  `Port ${port} is set for both ${serviceLabel(twin.name)} and ${serviceLabel(slot.name)}, so ${serviceLabel(slot.name)} was not started. ` +
                  `Give each its own port (${SERVICE_CATALOGUE[slot.name].prefix}PORT), then start it.`,
              }
            : err instanceof PortTakenError
              ? await describeBusyPort(
                  slot.name,
                  host,
                  port,
                  this.services().filter((n) => dependsOn(n).includes(slot.name)),
                )
              : {
                  message:
                    `${capitalised(serviceLabel(slot.name))} was not started: ${(err as Error).message} ` +
                    `Check ${SERVICE_CATALOGUE[slot.name].prefix}HOST and ${SERVICE_CATALOGUE[slot.name].prefix}PORT.`,
                };
      }
    })().finally(() => (slot.binding = undefined));
    return slot.binding;
  }

  /** Where a service listens in relay mode: a socket file in a 0700 folder of the data folder (a named pipe on Windows). */
  private relayPath(name: ServiceName): string {
    if (process.platform === 'win32') return `\\\\.\\pipe\\hub-services-${this.pipeName}-${name}`;
    if (!this.relayFolder) {
      const inData = join(this.dataDir, 'run');
      // A socket file's path has at most 104 bytes (macOS; 108 on Linux): a deep data folder uses a private temporary one.
      const fits = Buffer.byteLength(join(inData, 'repohost-gateway.sock')) <= 100;
      const path = fits ? inData : mkdtempSync(join(tmpdir(), 'hub-services-'));
      mkdirSync(path, { recursive: true, mode: 0o700 });
      chmodSync(path, 0o700);
      this.relayFolder = { path, temporary: !fits };
    }
    return join(this.relayFolder.path, `${name}.sock`);
  }

  /** A message from a service's process: it asks for its port's socket, says it listens, answers a liveness check. */
  private heard(slot: Slot, generation: number, proc: ManagedProcess, message: unknown, handle: unknown): void {
    if (typeof message !== 'object' || message === null) return;
    const { hub, id } = message as { hub?: unknown; id?: unknown };
    const current = slot.generation === generation && slot.proc === proc;
    if (hub === 'pong' && typeof id === 'number') this.pings.get(id)?.();
    else if (hub === 'listen') {
      if (!current || !slot.held || !this.launcher.takesHandles)
        proc.send({
          hub: 'listen',
          refused: !current
            ? 'This process is not the one the supervisor is starting.'
            : 'The supervisor holds no socket to hand over for this service.',
        });
      else proc.send({ hub: 'listen' }, slot.held.socketForChild());
    } else if (hub === 'listening') {
      if (!current) {
        (handle as { close?: () => void } | undefined)?.close?.();
        return;
      }
      if (this.launcher.takesHandles) {
        if (handle) slot.held?.served({ handle });
      } else slot.held?.served({ path: this.relayPath(slot.name) });
      slot.listening = true;
      clearTimeout(slot.listenTimer);
      this.schedule(slot, generation, 0);
    }
  }

  /** Asks the process over its channel whether its event loop answers (never through the public port). */
  private ping(proc: ManagedProcess): Promise<boolean> {
    const id = ++this.lastPing;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pings.delete(id);
        resolve(false);
      }, this.probeTimeoutMs);
      this.pings.set(id, () => {
        clearTimeout(timer);
        this.pings.delete(id);
        resolve(true);
      });
      if (!proc.send({ hub: 'ping', id })) {
        clearTimeout(timer);
        this.pings.delete(id);
        resolve(false);
      }
    });
  }

  private schedule(slot: Slot, generation: number, delayMs: number): void {
    this.clearTimer(slot);
    slot.timer = setTimeout(() => void this.probe(slot, generation), delayMs);
  }

  private clearTimer(slot: Slot): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = undefined;
  }

  /**
   * One round: liveness over the process's channel (a failure counts towards a restart), then /ready over
   * HTTP (which never restarts anything); decides the state and when to look again.
   */
  private async probe(slot: Slot, generation: number): Promise<void> {
    if (this.superseded(slot, generation) || !slot.listening) return;
    const url = baseUrl(slot.placement);
    const alive = await this.ping(slot.proc!);
    if (this.superseded(slot, generation)) return;
    this.emit('checked', { name: slot.name, pid: slot.proc?.pid, alive } satisfies LivenessCheck);
    const age = Date.now() - (slot.startedAt ?? Date.now());
    if (!alive) {
      slot.healthFailures += 1;
      if (slot.healthFailures >= this.livenessFailures) {
        return this.livenessFailed(
          slot,
          `stopped answering the supervisor's liveness check (${slot.healthFailures} in a row)`,
        );
      }
      return this.schedule(slot, generation, Math.min(this.pollMs, 1_000));
    }
    slot.healthFailures = 0;
    const ready = await fetchStatus(`${url}/ready`, this.probeTimeoutMs);
    if (this.superseded(slot, generation)) return;
    if (ready.status === 200) {
      slot.waitingOn = undefined;
      if (slot.state !== 'ready') {
        slot.lastError = undefined;
        slot.wasReady = true;
        this.note(slot.name, `ready after ${age} ms`);
        this.setState(slot, 'ready');
      }
      return this.schedule(slot, generation, this.pollMs);
    }
    const why = ready.detail ?? `/ready answered ${ready.status || 'nothing'}`;
    const failing = ready.failing ?? [];
    const names = failing.map((c) => c.name);
    slot.waitingOn = names;
    // Identity outside this supervisor (IDENTITY_PUBLIC_URL, or not among its services) counts as running.
    const identity = this.slots.get('identity');
    const identityRunning = !identity || ['starting', 'live', 'ready', 'degraded'].includes(identity.state);
    // Waiting on the person (or the network, or identity) is not starting: it says so until given what it needs.
    if (waitsOutside(slot.name, failing, identityRunning)) {
      if (slot.state !== 'waiting') this.note(slot.name, `waiting: ${why}`);
      this.setState(slot, 'waiting', why);
      return this.schedule(slot, generation, this.pollMs);
    }
    if (slot.wasReady) {
      this.setState(slot, 'degraded', why);
      return this.schedule(slot, generation, this.pollMs);
    }
    this.setState(slot, 'live', why);
    return this.schedule(slot, generation, age < 10_000 ? 200 : 1_000);
  }

  /**
   * Probes a running service now rather than at its next turn (a person says "re-check" after signing
   * in): resolves with its status once that probe has answered.
   */
  async recheck(name: ServiceName): Promise<ServiceStatus> {
    const slot = this.slot(name);
    if (slot.proc && !slot.starting && slot.state !== 'stopping') {
      this.clearTimer(slot);
      await this.probe(slot, slot.generation);
    }
    return this.describe(slot);
  }

  /** True when the probe's process is no longer the current one, or is being stopped. */
  private superseded(slot: Slot, generation: number): boolean {
    return slot.generation !== generation || !slot.proc || slot.state === 'stopping';
  }

  private livenessFailed(slot: Slot, reason: string): void {
    slot.killReason = `${serviceLabel(slot.name)} ${reason}`;
    this.note(slot.name, `${reason}; ending the process to restart it`);
    void this.terminate(slot);
  }

  /** SIGTERM, then SIGKILL (with everything the process started) after the stop timeout. */
  private async terminate(slot: Slot): Promise<void> {
    const proc = slot.proc;
    if (!proc) return;
    const exited = slot.exited;
    proc.kill('SIGTERM');
    const inTime = await Promise.race([exited?.then(() => true), sleep(this.stopTimeoutMs).then(() => false)]);
    if (!inTime && slot.proc === proc) {
      const family = proc.pid !== undefined ? descendants(proc.pid) : [];
      this.note(
        slot.name,
        `did not stop within ${this.stopTimeoutMs} ms of SIGTERM; sending SIGKILL to it and ${family.length} process(es) it started`,
      );
      proc.kill('SIGKILL');
      for (const pid of family) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      await exited;
    }
  }

  private handleExit(slot: Slot, generation: number, code: number | null, signal: string | null): void {
    if (slot.generation !== generation) return;
    slot.proc = undefined;
    slot.listening = false;
    clearTimeout(slot.listenTimer);
    this.clearTimer(slot);
    // Nothing serves the port now: the supervisor answers its callers until the next process does.
    slot.held?.unserved();
    const how = signal ? `was ended by ${signal}` : `exited with code ${code}`;
    if (slot.desired === 'stopped') {
      this.note(slot.name, `stopped (${how})`);
      this.setState(slot, 'stopped');
      return;
    }
    const said = lastMeaningfulLine(slot.stderrTail);
    // A configuration error, or a native module that cannot be loaded: a restart cannot fix either.
    if (code === NEEDS_A_PERSON_EXIT) {
      const message = `${said ?? `${serviceLabel(slot.name)} ${how}.`} Not restarting: this needs a change before it can start.`;
      slot.desired = 'stopped';
      this.note(slot.name, message);
      this.setState(slot, 'gave-up', message);
      return;
    }
    const cause = slot.killReason ?? `${serviceLabel(slot.name)} ${how}${said ? `: ${said}` : ''}`;
    const now = Date.now();
    const count = slot.crashes.record(now);
    if (slot.crashes.tooMany(count)) {
      const message =
        `Gave up after ${count} crashes within ${Math.round(this.policy.windowMs / 1000)} s. Last: ${cause}. ` +
        'Look at its log, then start it again.';
      slot.desired = 'stopped';
      this.note(slot.name, message);
      this.setState(slot, 'gave-up', message);
      return;
    }
    this.setState(slot, 'crashed', cause);
    const delay = backoffDelay(count, this.policy);
    // The note's time and restartAt are the same moment, so the log and the console's countdown agree.
    this.note(
      slot.name,
      `${cause}; restarting in ${delay} ms (crash ${count} of ${this.policy.maxCrashes} allowed within the window)`,
      now,
    );
    slot.restartAt = now + delay;
    this.setState(slot, 'backing-off', `${cause}. Restarting in ${(delay / 1000).toFixed(1)} s.`);
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      if (slot.desired !== 'running' || slot.proc || slot.starting) return;
      slot.restarts += 1;
      slot.starting = this.launch(slot).finally(() => (slot.starting = undefined));
    }, delay);
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function fetchStatus(
  url: string,
  timeoutMs: number,
): Promise<{ status: number; detail?: string; failing?: FailingCheck[] }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (res.ok) {
      await res.body?.cancel();
      return { status: res.status };
    }
    const body = (await res.json().catch(() => undefined)) as { detail?: unknown; checks?: unknown } | undefined;
    const detail = typeof body?.detail === 'string' ? body.detail : failingChecks(body?.checks);
    const failing = failingCheckList(body?.checks);
    return {
      status: res.status,
      ...(detail ? { detail: detail.slice(0, 300) } : {}),
      ...(failing.length ? { failing } : {}),
    };
  } catch {
    return { status: 0 };
  }
}

/** The failing checks of a /ready body, in either shape: `name: "failing"` (the kit) or `name: { ok: false, state? }` (the provider). */
function failingCheckList(checks: unknown): FailingCheck[] {
  if (!checks || typeof checks !== 'object') return [];
  return Object.entries(checks as Record<string, unknown>).flatMap(([name, value]): FailingCheck[] => {
    if (!/^[a-z_]{1,40}$/.test(name)) return [];
    if (value === 'failing') return [{ name }];
    if (value && typeof value === 'object' && (value as { ok?: unknown }).ok === false) {
      const state = (value as { state?: unknown }).state;
      return [typeof state === 'string' && /^[a-z_]{1,40}$/.test(state) ? { name, state } : { name }];
    }
    return [];
  });
}

/** For a /ready body without a problem detail (the provider's): the checks that fail, with their state. */
function failingChecks(checks: unknown): string | undefined {
  if (!checks || typeof checks !== 'object') return undefined;
  const failing = Object.entries(checks as Record<string, unknown>).flatMap(([name, value]) => {
    if (value === 'failing') return [name];
    if (value && typeof value === 'object' && (value as { ok?: unknown }).ok === false) {
      const state = (value as { state?: unknown }).state;
      return [
        typeof state === 'string' && /^[a-z_]{1,40}$/.test(state) ? `${name} (${state.replace(/_/g, ' ')})` : name,
      ];
    }
    return [];
  });
  return failing.length ? `Not ready: ${failing.join(', ')}.` : undefined;
}

/** The last stderr line that says something (not a stack frame), shortened for a status line. */
function lastMeaningfulLine(lines: string[]): string | undefined {
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.trim();
    if (!line || /^at\s/.test(line) || line.startsWith('{')) continue;
    return line.length > 300 ? `${line.slice(0, 297)}...` : line;
  }
  return undefined;
}
