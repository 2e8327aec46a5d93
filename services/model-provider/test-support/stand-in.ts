import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const STAND_IN_SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'stand-in-cli.mjs');

export interface StandInRun {
  pid: number;
  argv: string[];
  cwd: string;
  cwdEntries: string[];
  stdin: string;
  pgid: number | null;
  concurrentAtStart: number;
  grandchildPid?: number;
  /** The names (never the values) of every variable in the run's environment. */
  envKeys: string[];
  /** The values of the variables the service sets for the CLI (CLAUDE_CODE_DISABLE_*, CLAUDE_CODE_MAX_OUTPUT_TOKENS, CLAUDE_CODE_EXTRA_BODY), where set. */
  cliVars: Record<string, string>;
  /** When the run's process started and, once it answered, when it ended (ms since the epoch). */
  startedAt: number;
  endedAt?: number;
  /** With --include-partial-messages: when its first text delta was printed (ms since the epoch). */
  firstDeltaAt?: number;
}

/**
 * An executable stand-in CLI in `dir` (named `claude` unless `name` says otherwise): a small shell script that sets what the stand-in should
 * pretend to have loaded, the pace of its text deltas (`pace`, COUNTxMS) and where it records its runs, notes its pid in `started` (so that a run killed
 * before the stand-in could write its record still counts), then execs the stand-in with the argv the
 * service gave it, untouched (same pid).
 */
export function standInBinary(
  dir: string,
  options: {
    loads?: string[];
    mcp?: string[];
    hook?: boolean;
    skills?: string[];
    name?: string;
    recordDir?: string;
    pace?: string;
    /** The init event's apiKeySource (default none, a subscription login). */
    apiKeySource?: string;
    /** A CLI whose auto memory stays on whatever the service's switch says. */
    memory?: boolean;
  } = {},
): { binary: string; recordDir: string; runs(): StandInRun[]; started(): number[] } {
  const recordDir = options.recordDir ?? join(dir, 'runs');
  mkdirSync(recordDir, { recursive: true });
  const vars = [
    `STANDIN_RECORD_DIR='${recordDir}'`,
    options.loads ? `STANDIN_LOADS='${options.loads.join(',')}'` : '',
    options.mcp ? `STANDIN_MCP='${options.mcp.join(',')}'` : '',
    options.hook ? 'STANDIN_HOOK=1' : '',
    options.skills ? `STANDIN_SKILLS='${options.skills.join(',')}'` : '',
    options.pace ? `STANDIN_PACE='${options.pace}'` : '',
    options.apiKeySource ? `STANDIN_API_KEY_SOURCE='${options.apiKeySource}'` : '',
    options.memory ? 'STANDIN_MEMORY=on' : '',
  ].filter(Boolean);
  mkdirSync(dir, { recursive: true });
  const binary = join(dir, options.name ?? 'claude');
  const started = join(recordDir, 'started');
  writeFileSync(
    binary,
    `#!/bin/sh\nexport ${vars.join(' ')}\necho $$ >> '${started}'\nexec '${process.execPath}' '${STAND_IN_SCRIPT}' "$@"\n`,
  );
  chmodSync(binary, 0o755);
  return {
    binary,
    recordDir,
    runs: () =>
      readdirSync(recordDir)
        .filter((f) => /^run-\d+-[0-9a-f]{8}\.json$/.test(f))
        .map((f) => JSON.parse(readFileSync(join(recordDir, f), 'utf8')) as StandInRun),
    started: () => (existsSync(started) ? readFileSync(started, 'utf8').split('\n').filter(Boolean).map(Number) : []),
  };
}

/** A process is gone when /proc no longer has it or it is a zombie waiting to be reaped. */
export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Every live (non-zombie) process in process group `pgid`, read from the process table (/proc). */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) members.push(Number(entry));
    } catch {
      /* gone while reading */
    }
  }
  return members;
}
