import type { Logger } from '../kit/logger.ts';
import { binaryIdentity, type CliLocation } from './cli-binary.ts';
import { hookName, isHook, isInit, loadedBy, lockdownBreach, readAnswer, type Loaded } from './cli-output.ts';
import type { CliProcesses } from './cli-process.ts';
import { ProviderError } from './errors.ts';
import { cliArgs } from './invocation.ts';

export type LockdownState = 'pending' | 'ok' | 'not_ok' | 'probe_failed' | 'no_cli';
export type LoginState = 'signed_in' | 'not_signed_in' | 'unknown';

export const PROBE_PROMPT = 'Reply with the single word: ready';

/**
 * The startup probe: the CLI runs once under exactly the flags and switches of every call, and lockdown is
 * ok only when its init event lists no tools, no MCP servers, no slash commands and no skills, no auto
 * memory folder, and no API key source (a subscription login has none: anything else bills an API
 * account), and no hook ran. Until the probe has finished, and whenever it is not ok, completions are refused.
 */
export class Lockdown {
  state: LockdownState = 'pending';
  loaded: Loaded = { tools: [], mcp_servers: [], hooks: [] };
  detail = 'The startup probe has not finished yet.';
  probedAt: string | undefined;
  /** The binary the proof is about: another one found later is probed afresh before it runs. */
  probedPath: string | undefined;
  /** The file that path ran when it was probed (binaryIdentity): an update in place is probed afresh too. */
  private probedIdentity: string | undefined;
  login: LoginState = 'unknown';
  private running: Promise<void> | undefined;

  constructor(
    private readonly parts: {
      processes: CliProcesses;
      locate: () => CliLocation;
      model: string;
      systemPrompt: string;
      timeoutSeconds: number;
      logger: Logger;
      /** Whether plain calls ask for partial messages (MODELPROV_STREAM=deltas): the probe runs under the same flags. */
      partialMessages?: boolean;
    },
  ) {}

  get ok(): boolean {
    return this.state === 'ok';
  }

  /**
   * Runs the probe unless one is running or has already run with a binary present. Called at start, and
   * again by the first completion or readiness check that finds a binary while the state is no_cli.
   */
  ensureProbed(): Promise<void> {
    if (this.state !== 'pending' && this.state !== 'no_cli') return Promise.resolve();
    this.running ??= this.probe().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * Keeps the proof tied to the binary it was made with. A binary that appeared since startup, or one
   * found at another path than the one probed (PATH or the install changed), is probed now; until that
   * probe answers the state is pending. True when a probe was started.
   */
  noticeBinary(where: CliLocation): boolean {
    if (!where.found) return false;
    if (this.state === 'no_cli') {
      void this.ensureProbed();
      return true;
    }
    if (this.probedPath === undefined) return false;
    const samePath = where.path === this.probedPath;
    if (samePath && binaryIdentity(where.path) === this.probedIdentity) return false;
    // Not proven for this binary: refuse, whatever the state says, until a probe of it has answered.
    // (A probe already running, such as the login re-check, is let finish; the next call looks again.)
    if (!this.running) {
      this.parts.logger.warn(
        { probed: this.probedPath, found: where.path },
        samePath
          ? 'the CLI binary changed in place; probing it before it runs'
          : 'another CLI binary found; probing it before it runs',
      );
      this.state = 'pending';
      this.detail = samePath
        ? `The CLI at ${where.path} has changed since its lockdown probe (an update); its lockdown probe is running.`
        : `The CLI is now ${where.path} (the proof was for ${this.probedPath}); its lockdown probe is running.`;
      void this.ensureProbed();
    }
    return true;
  }

  /**
   * A CLI that was not signed in may be signed in by now: readiness probes again, in the background and
   * at most once a minute (a run that is not signed in costs no tokens; once signed in, probing stops).
   */
  recheckLogin(): void {
    if (this.login !== 'not_signed_in' || this.running) return;
    if (this.probedAt && Date.now() - Date.parse(this.probedAt) < 60_000) return;
    this.running = this.probe().finally(() => (this.running = undefined));
  }

  /**
   * A person says they signed in ("re-check" in the console): probe again now, unless signed in already,
   * a probe is running (its answer is awaited instead) or one answered in the last 5 seconds.
   */
  async recheckLoginNow(): Promise<void> {
    if (this.running) return this.running;
    if (this.login === 'signed_in') return;
    if (this.probedAt && Date.now() - Date.parse(this.probedAt) < 5_000) return;
    this.running = this.probe().finally(() => (this.running = undefined));
    return this.running;
  }

  /** A later run saw something loaded after all: lockdown is off until the service is restarted. */
  breached(loaded: Loaded, breach: string): void {
    this.state = 'not_ok';
    this.loaded = loaded;
    this.detail = `A CLI run loaded ${breach}; every completion is refused until that is fixed in the CLI's configuration and the service restarted.`;
    this.parts.logger.error({ lockdown: this.state, ...loaded }, 'lockdown breached');
  }

  private async probe(): Promise<void> {
    const { logger } = this.parts;
    const where = this.parts.locate();
    if (!where.found) {
      this.state = 'no_cli';
      this.detail = `Not probed: ${where.detail}`;
      logger.warn({ lockdown: this.state }, 'lockdown probe skipped: no CLI binary');
      return;
    }
    // A binary found after startup is probed like at startup: pending until the probe answers. A
    // re-probe (the login check) keeps serving under the state already proven until it has a new answer.
    if (this.state === 'pending' || this.state === 'no_cli') {
      this.state = 'pending';
      this.detail = 'The lockdown probe is running.';
    }
    // Taken before the run: a file that changes while it is probed differs afterwards and is probed again.
    const identity = binaryIdentity(where.path);
    const hooks: string[] = [];
    let init: Loaded | undefined;
    const run = await this.parts.processes.run(
      where.path,
      cliArgs({
        model: this.parts.model,
        systemPrompt: this.parts.systemPrompt,
        partialMessages: this.parts.partialMessages === true,
      }),
      PROBE_PROMPT,
      {
        timeoutMs: this.parts.timeoutSeconds * 1000,
        onEvent: (event) => {
          if (isHook(event)) {
            hooks.push(hookName(event));
            // A hook after init (UserPromptSubmit, Stop) ends the probe as one before it does.
            if (init) return 'stop';
          }
          if (isInit(event) && !init) {
            init = { ...loadedBy(event), hooks: [...new Set(hooks)] };
            if (lockdownBreach(init, false)) return 'stop';
          }
        },
      },
    );
    this.probedAt = new Date().toISOString();
    // Only now, with an answer, is the state below about this binary.
    this.probedPath = where.path;
    this.probedIdentity = identity;
    if (!init) {
      this.state = 'probe_failed';
      const how =
        run.end === 'timeout'
          ? `did not report what it loaded within ${this.parts.timeoutSeconds} s`
          : run.end === 'spawn_failed'
            ? `could not be started (${run.spawnError?.code ?? 'error'})`
            : `exited (code ${run.exitCode ?? run.signal}) without reporting what it loaded`;
      this.detail = `The probe run of ${where.path} ${how}; check the binary, then restart the service.`;
      logger.error(
        { lockdown: this.state, end: run.end, exitCode: run.exitCode, stderr: run.stderr.slice(0, 500) },
        'lockdown probe failed',
      );
      return;
    }
    this.loaded = { ...init, hooks: [...new Set(hooks)] };
    const breach = lockdownBreach(this.loaded, false);
    if (breach) {
      this.state = 'not_ok';
      this.detail = `The CLI loaded ${breach}, although every call turns these off; fix that in the CLI's configuration, then restart the service.`;
      logger.error({ lockdown: this.state, ...this.loaded }, 'lockdown not ok');
      return;
    }
    this.state = 'ok';
    this.detail =
      'The probe run loaded no tools, no MCP servers, no slash commands or skills, no hooks and no auto memory, and uses no API key (billing stays on the login).';
    try {
      readAnswer(run, false, this.parts.timeoutSeconds);
      this.login = 'signed_in';
    } catch (err) {
      this.login = err instanceof ProviderError && err.code === 'not_logged_in' ? 'not_signed_in' : 'unknown';
    }
    logger.info({ lockdown: this.state, login: this.login, cli: where.path }, 'lockdown probe done');
  }
}
