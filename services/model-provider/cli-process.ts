import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/**
 * How one CLI run ended, before its output is read for meaning. `answered`: the CLI printed the event
 * that ends its answer (see RunOptions.onEvent) and the run was read then, while its process was still
 * exiting; exitCode and signal are then null.
 */
export type RunEnd =
  'exited' | 'answered' | 'cut' | 'timeout' | 'aborted' | 'stopped' | 'spawn_failed' | 'shutdown' | 'output_too_large';

/** How a run's process ended (after its answer, for a run that was `answered`). */
export interface RunExit {
  end: RunEnd;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunResult extends RunExit {
  /**
   * Parsed stream-json events, in order (up to the answer's last one, for a run that was `answered`); the
   * `stream_event` lines of partial messages are only shown to onEvent, not kept (a long reply has thousands).
   */
  events: Record<string, unknown>[];
  /** The first part of stderr, for the log. */
  stderr: string;
  spawnError?: NodeJS.ErrnoException;
  pid?: number;
  /**
   * Settles once the process has exited and its group has been cleared: at once for a run read at its
   * exit; later for an `answered` one, whose process still counts as running (killAll stops it and waits
   * for it) until then. Never rejects.
   */
  exited: Promise<RunExit>;
}

export interface RunOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /**
   * Sees each event as it arrives. 'stop' kills the run at once (a lockdown breach). 'answered' says the
   * CLI's answer is complete with this event: the run is read at once rather than when the process has
   * exited (the CLI takes about 40 ms to exit after its result, all of it added to the answer otherwise),
   * later events are not kept, and a client that goes away after it no longer stops the process. The
   * process is then given EXIT_GRACE_MS (or what is left of the timeout, if less) to exit on its own
   * before its group is stopped as at a timeout (`exited` then says 'timeout'). 'enough' reads the run
   * at once as 'answered' does, and stops its process group (the service has what it asked for: a stop
   * sequence or the output limit was reached; `exited` then says 'cut').
   */
  onEvent?: (event: Record<string, unknown>) => 'stop' | 'answered' | 'enough' | void;
  /** Variables of this run on top of the environment every run gets (its settings: output limit, stop sequences, sampling). */
  variables?: Record<string, string>;
}

const MAX_STDOUT_BYTES = 32 * 1024 * 1024;
const MAX_STDERR_CHARS = 2000;
/** How long a CLI that printed its answer may take to exit (it takes about 40 ms) before its group is stopped. */
const EXIT_GRACE_MS = 10_000;

/**
 * Signals the process group `pgid` leads, if it still exists. Every run ends with one such signal to a
 * group that is usually gone already (ESRCH): Node throws for that, and the exception's stack trace
 * cost more than the signal itself, on the path from the CLI's exit to the answer. So it is thrown without one.
 */
function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    process.kill(-pgid, sig);
  } catch {
    /* the group is already gone */
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * Runs CLI processes, each detached into its own process group so that a timeout, a client that went
 * away or a shutdown can kill the run with everything it started (process.kill(-pid)). SIGTERM first,
 * SIGKILL for the whole group once the leader is gone or after a short grace.
 */
export class CliProcesses {
  private readonly live = new Map<number, (why: RunEnd) => void>();
  private readonly exits = new Set<Promise<RunExit>>();
  private stopped = false;

  constructor(private readonly options: { cwd: string; env: NodeJS.ProcessEnv; killGraceMs?: number }) {}

  get running(): number {
    return this.live.size;
  }

  run(binary: string, args: string[], stdin: string, opts: RunOptions): Promise<RunResult> {
    if (this.stopped) return Promise.resolve(notRun('shutdown'));
    return new Promise<RunResult>((resolveRun) => {
      const events: Record<string, unknown>[] = [];
      let stderr = '';
      let end: RunEnd | undefined;
      let spawnError: NodeJS.ErrnoException | undefined;
      let stdoutBytes = 0;
      let pending = '';
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(binary, args, {
          cwd: this.options.cwd,
          env: opts.variables ? { ...this.options.env, ...opts.variables } : this.options.env,
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
      } catch (err) {
        // Arguments the OS cannot take (a NUL, E2BIG) throw here rather than emit 'error'; the request checks keep them out.
        resolveRun({ ...notRun('spawn_failed'), spawnError: err as NodeJS.ErrnoException });
        return;
      }
      const pid = child.pid;
      let graceTimer: NodeJS.Timeout | undefined;
      const killGroup = (sig: NodeJS.Signals) => {
        if (pid !== undefined) signalGroup(pid, sig);
      };
      const stop = (why: RunEnd) => {
        if (end !== undefined) return;
        end = why;
        killGroup('SIGTERM');
        graceTimer = setTimeout(() => killGroup('SIGKILL'), this.options.killGraceMs ?? 2000);
      };
      const deadline = Date.now() + opts.timeoutMs;
      let timer = setTimeout(() => stop('timeout'), opts.timeoutMs);
      const onAbort = () => stop('aborted');
      if (opts.signal?.aborted) queueMicrotask(onAbort);
      else opts.signal?.addEventListener('abort', onAbort, { once: true });

      let answered = false;
      let exitDone: (exit: RunExit) => void = () => {};
      const exited = new Promise<RunExit>((r) => (exitDone = r));
      const read = (how: RunEnd, code: number | null, signal: NodeJS.Signals | null): RunResult => ({
        end: spawnError ? 'spawn_failed' : how,
        exitCode: code,
        signal,
        events,
        stderr,
        ...(spawnError ? { spawnError } : {}),
        ...(pid !== undefined ? { pid } : {}),
        exited,
      });
      const handleLine = (line: string) => {
        if (answered || line.trim() === '') return;
        let event: Record<string, unknown>;
        try {
          event = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (typeof event !== 'object' || event === null) return;
        if (event.type !== 'stream_event') events.push(event);
        const verdict = opts.onEvent?.(event);
        if (verdict === 'stop') stop('stopped');
        else if ((verdict === 'answered' || verdict === 'enough') && end === undefined) {
          answered = true;
          opts.signal?.removeEventListener('abort', onAbort);
          clearTimeout(timer);
          if (verdict === 'enough') stop('cut');
          else timer = setTimeout(() => stop('timeout'), Math.max(0, Math.min(EXIT_GRACE_MS, deadline - Date.now())));
          resolveRun(read('answered', null, null));
        }
      };
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        stdoutBytes += chunk.length;
        if (stdoutBytes > MAX_STDOUT_BYTES) {
          stop('output_too_large');
          return;
        }
        // Events are whole lines; a chunk holds several, or part of one (kept in `pending`, never copied again per line).
        let start = 0;
        let nl = chunk.indexOf('\n');
        if (nl >= 0 && pending !== '') {
          handleLine(pending + chunk.slice(0, nl));
          pending = '';
          start = nl + 1;
          nl = chunk.indexOf('\n', start);
        }
        while (nl >= 0) {
          handleLine(chunk.slice(start, nl));
          start = nl + 1;
          nl = chunk.indexOf('\n', start);
        }
        pending += chunk.slice(start);
      });
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        if (stderr.length < MAX_STDERR_CHARS) stderr += chunk.slice(0, MAX_STDERR_CHARS - stderr.length);
      });
      // The CLI may exit without reading all of stdin; that is not an error of ours.
      child.stdin.on('error', () => {});
      child.on('error', (err: NodeJS.ErrnoException) => {
        if (pid === undefined) {
          spawnError = err;
          finish(null, null);
        }
      });

      let finished = false;
      this.exits.add(exited);
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        clearTimeout(graceTimer);
        opts.signal?.removeEventListener('abort', onAbort);
        if (pid !== undefined) this.live.delete(pid);
        handleLine(pending);
        this.exits.delete(exited);
        const how = end ?? 'exited';
        exitDone({ end: spawnError ? 'spawn_failed' : how, exitCode: code, signal });
        // A run already read at its answer has resolved; this settles only one read at its exit.
        resolveRun(read(how, code, signal));
      };
      child.on('exit', (code, signal) => {
        // Nothing the run started may outlive it: clear its whole group now that the leader is gone.
        killGroup('SIGKILL');
        // Output still buffered in the pipes arrives before 'close'; a descendant that escaped the group could hold them open.
        const late = setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          finish(code, signal);
        }, 1000);
        child.once('close', () => {
          clearTimeout(late);
          finish(code, signal);
        });
      });
      if (pid !== undefined) {
        this.live.set(pid, stop);
        child.stdin.end(stdin);
      }
    });
  }

  /** Kills every run's process group, starts no new run, and waits until each leader has exited. */
  async killAll(): Promise<void> {
    this.stopped = true;
    for (const stop of this.live.values()) stop('shutdown');
    await Promise.all([...this.exits]);
  }
}

/** A run that never started a process. */
function notRun(end: RunEnd): RunResult {
  const exit = { end, exitCode: null, signal: null };
  return { ...exit, events: [], stderr: '', exited: Promise.resolve(exit) };
}
