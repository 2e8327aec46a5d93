import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';

/** How one CLI run ended, before its output is read for meaning. */
export type RunEnd = 'exited' | 'timeout' | 'aborted' | 'stopped' | 'spawn_failed' | 'shutdown' | 'output_too_large';

export interface RunResult {
  end: RunEnd;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** Parsed stream-json events, in order. */
  events: Record<string, unknown>[];
  /** The first part of stderr, for the log. */
  stderr: string;
  spawnError?: NodeJS.ErrnoException;
  pid?: number;
}

export interface RunOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Sees each event as it arrives; returning 'stop' kills the run at once (a lockdown breach). */
  onEvent?: (event: Record<string, unknown>) => 'stop' | void;
}

const MAX_STDOUT_BYTES = 32 * 1024 * 1024;
const MAX_STDERR_CHARS = 2000;

/**
 * Runs CLI processes, each detached into its own process group so that a timeout, a client that went
 * away or a shutdown can kill the run with everything it started (process.kill(-pid)). SIGTERM first,
 * SIGKILL for the whole group once the leader is gone or after a short grace.
 */
export class CliProcesses {
  private readonly live = new Map<number, (why: RunEnd) => void>();
  private readonly exits = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly options: { cwd: string; env: NodeJS.ProcessEnv; killGraceMs?: number }) {}

  get running(): number {
    return this.live.size;
  }

  run(binary: string, args: string[], stdin: string, opts: RunOptions): Promise<RunResult> {
    if (this.stopped) return Promise.resolve({ end: 'shutdown', exitCode: null, signal: null, events: [], stderr: '' });
    return new Promise<RunResult>((resolveRun) => {
      const events: Record<string, unknown>[] = [];
      let stderr = '';
      let end: RunEnd | undefined;
      let spawnError: NodeJS.ErrnoException | undefined;
      let stdoutBytes = 0;
      let pending = '';
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(binary, args, { cwd: this.options.cwd, env: this.options.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
      } catch (err) {
        // Arguments the OS cannot take (a NUL, E2BIG) throw here rather than emit 'error'; the request checks keep them out.
        resolveRun({ end: 'spawn_failed', exitCode: null, signal: null, events: [], stderr: '', spawnError: err as NodeJS.ErrnoException });
        return;
      }
      const pid = child.pid;
      let graceTimer: NodeJS.Timeout | undefined;
      const killGroup = (sig: NodeJS.Signals) => {
        if (pid === undefined) return;
        try {
          process.kill(-pid, sig);
        } catch {
          /* the group is already gone */
        }
      };
      const stop = (why: RunEnd) => {
        if (end !== undefined) return;
        end = why;
        killGroup('SIGTERM');
        graceTimer = setTimeout(() => killGroup('SIGKILL'), this.options.killGraceMs ?? 2000);
      };
      const timer = setTimeout(() => stop('timeout'), opts.timeoutMs);
      const onAbort = () => stop('aborted');
      if (opts.signal?.aborted) queueMicrotask(onAbort);
      else opts.signal?.addEventListener('abort', onAbort, { once: true });

      const handleLine = (line: string) => {
        if (line.trim() === '') return;
        let event: Record<string, unknown>;
        try {
          event = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (typeof event !== 'object' || event === null) return;
        events.push(event);
        if (opts.onEvent?.(event) === 'stop') stop('stopped');
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
      let exitDone: () => void = () => {};
      const exitPromise = new Promise<void>((r) => (exitDone = r));
      this.exits.add(exitPromise);
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        clearTimeout(graceTimer);
        opts.signal?.removeEventListener('abort', onAbort);
        if (pid !== undefined) this.live.delete(pid);
        handleLine(pending);
        this.exits.delete(exitPromise);
        exitDone();
        resolveRun({
          end: spawnError ? 'spawn_failed' : (end ?? 'exited'),
          exitCode: code,
          signal,
          events,
          stderr,
          ...(spawnError ? { spawnError } : {}),
          ...(pid !== undefined ? { pid } : {}),
        });
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
