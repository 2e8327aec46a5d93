/** Starting and stopping the servers the provider benchmarks compare (the provider, the peer). */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
 * The pinned real CLI behind a wrapper that gives it an empty HOME and nothing else of this environment,
 * so it runs signed out; undefined (and a line saying so) when the package is not installed.
 */
export function signedOutRealCli(root: string, dir: string): string | undefined {
  const real = join(root, 'node_modules', '.bin', 'claude');
  if (!existsSync(real)) {
    console.log('model-provider / real CLI: skipped, the pinned CLI package is not installed (run npm ci)');
    return undefined;
  }
  const home = mkdtempSync(join(tmpdir(), 'bench-modelprov-home-'));
  const wrapper = join(dir, 'real-claude');
  writeFileSync(wrapper, `#!/bin/sh\nexec env -i PATH=/usr/bin:/bin HOME='${home}' TERM=dumb '${real}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  return wrapper;
}
