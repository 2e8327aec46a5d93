/** Starting and stopping what the provider benchmarks compare: the provider, the peer, and the bare CLI's runner. */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A server in its own process and session, its output to /dev/null, once `probe` answers 200. Its own
 * session, as a program started on its own: where the scheduler groups processes by session (Linux's
 * autogroup), the benchmark's client then does not share the server's share of the CPU.
 */
export async function startServer(
  name: string,
  command: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  url: string,
  probe: string,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, command, { cwd, env, stdio: 'ignore', detached: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited early (${child.exitCode})`);
    const status = await fetch(`${url}${probe}`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return child;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not answer ${probe} with 200`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * The pinned real CLI, and a whole environment for the service (or the bare runner) to run it in: PATH and
 * an empty HOME, nothing else of this machine's, so it runs signed out; undefined (and a line saying so)
 * when the package is not installed.
 */
export function signedOutRealCli(root: string): { binary: string; env: NodeJS.ProcessEnv } | undefined {
  const binary = join(root, 'node_modules', '.bin', 'claude');
  if (!existsSync(binary)) {
    console.log('model-provider / real CLI: skipped, the pinned CLI package is not installed (run npm ci)');
    return undefined;
  }
  return { binary, env: { PATH: '/usr/bin:/bin', HOME: mkdtempSync(join(tmpdir(), 'bench-modelprov-home-')) } };
}

/** The bare CLI's runner (see _bare-cli.mjs): runs and times the CLI without any server around it. */
export class BareCli {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<
    number,
    {
      resolve: (answer: { ms: number[]; first?: number[]; spawnedAt?: number[] }) => void;
      reject: (err: Error) => void;
    }
  >();

  constructor(private readonly run: { binary: string; args: string[]; cwd: string; env: NodeJS.ProcessEnv }) {
    // No --import tsx: the runner is plain JavaScript and must stay as small as a process can be.
    // In its own session, as the servers are (see startServer).
    this.child = fork(join(dirname(fileURLToPath(import.meta.url)), '_bare-cli.mjs'), [], {
      execArgv: [],
      detached: true,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on(
      'message',
      (m: { id: number; ms?: number[]; first?: number[]; spawnedAt?: number[]; error?: string }) => {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error !== undefined || m.ms === undefined) w?.reject(new Error(`bare CLI run failed: ${m.error}`));
        else w?.resolve({ ms: m.ms, ...(m.first ? { first: m.first, spawnedAt: m.spawnedAt ?? [] } : {}) });
      },
    );
  }

  private ask(
    prompts: string[],
    concurrency?: number,
  ): Promise<{ ms: number[]; first?: number[]; spawnedAt?: number[] }> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.send({ id, run: this.run, prompts, ...(concurrency === undefined ? {} : { concurrency }) });
    });
  }

  /** Every prompt at once: each run's time. */
  async many(prompts: string[]): Promise<number[]> {
    return (await this.ask(prompts)).ms;
  }

  /** Every prompt at once: each run's time from the spawn to its first text delta, and to the close of its pipes; when it was spawned (ms since the epoch). */
  async streamed(prompts: string[]): Promise<{ first: number; total: number; spawnedAt: number }[]> {
    const { ms, first, spawnedAt } = await this.ask(prompts);
    return ms.map((total, i) => ({
      first: first?.[i] ?? Number.NaN,
      total,
      spawnedAt: spawnedAt?.[i] ?? Number.NaN,
    }));
  }

  /** The prompts `concurrency` at a time: the whole batch's time. */
  async batch(prompts: string[], concurrency: number): Promise<number> {
    return (await this.ask(prompts, concurrency)).ms[0]!;
  }

  close(): void {
    this.child.disconnect();
  }
}
