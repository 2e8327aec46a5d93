/**
 * Why the provider's CLI runs stay on Node's child_process (services/model-provider/cli-process.ts)
 * rather than execa: the same run both ways, in one process, in alternating rounds. A run is what the
 * provider does for one completion: spawn detached (its own process group), the prompt on stdin, a hard
 * timeout, kill on abort, stream-json read line by line as it arrives, the group cleared once the leader
 * exits. The execa side is execa 9 with the options that would replace the hand-written parts (`input`,
 * `timeout`, `forceKillAfterDelay`, `cancelSignal`, `detached`, a line transform on stdout that parses each
 * event, `maxBuffer`)
 * and the group kill it lacks added by hand; `cleanup: false`, its cheapest setting, since the provider
 * kills its groups itself.
 *
 * The "CLI" is /bin/cat replaying recorded stream-json (init, assistant, result), so that the figures are
 * the parent's own cost, not a Node start in the child. Printed per run: wall time p50/p95 and this
 * process's own CPU time (user + system, children excluded), and execa's extra over child_process.
 * `--smoke` runs a few of each, to check that the script works; its figures mean nothing.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { CliProcesses } from '../../services/model-provider/cli-process.ts';
import { ms, summarize, time } from '../stats.ts';

const SMOKE = process.argv.includes('--smoke');
const ROUNDS = SMOKE ? 2 : 10;
const PER_ROUND = SMOKE ? 5 : 100;
const TIMEOUT_MS = 300_000;
const KILL_GRACE_MS = 2_000;
const MAX_STDOUT_BYTES = 32 * 1024 * 1024;
const CAT = '/bin/cat';

const cwd = mkdtempSync(join(tmpdir(), 'bench-cli-runs-'));
const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir() };
// What a signed-in run prints (shapes as recorded from 2.1.197; the stand-in CLI replays the same).
const usage = { input_tokens: 12, cache_creation_input_tokens: 30, cache_read_input_tokens: 2000, output_tokens: 9 };
const STREAM = [
  {
    type: 'system',
    subtype: 'init',
    cwd,
    session_id: 's',
    tools: [],
    mcp_servers: [],
    model: 'claude-stand-in',
    permissionMode: 'default',
    slash_commands: [],
    apiKeySource: 'none',
    output_style: 'default',
    agents: [],
    skills: [],
    plugins: [],
  },
  {
    type: 'assistant',
    message: {
      id: 'msg_1',
      model: 'claude-stand-in',
      role: 'assistant',
      type: 'message',
      stop_reason: 'end_turn',
      usage,
      content: [{ type: 'text', text: 'Hello there.' }],
    },
    session_id: 's',
  },
  {
    type: 'result',
    subtype: 'success',
    is_error: false,
    duration_ms: 5,
    num_turns: 1,
    result: 'Hello there.',
    session_id: 's',
    total_cost_usd: 0.0001,
    usage,
    modelUsage: {},
  },
]
  .map((e) => `${JSON.stringify(e)}\n`)
  .join('');

const processes = new CliProcesses({ cwd, env, killGraceMs: KILL_GRACE_MS });

async function viaChildProcess(): Promise<number> {
  const controller = new AbortController();
  const run = await processes.run(CAT, [], STREAM, {
    timeoutMs: TIMEOUT_MS,
    signal: controller.signal,
    onEvent: () => undefined,
  });
  return run.events.length;
}

async function viaExeca(): Promise<number> {
  const controller = new AbortController();
  const subprocess = execa(CAT, [], {
    cwd,
    env,
    extendEnv: false,
    detached: true,
    input: STREAM,
    timeout: TIMEOUT_MS,
    forceKillAfterDelay: KILL_GRACE_MS,
    cancelSignal: controller.signal,
    cleanup: false,
    reject: false,
    maxBuffer: MAX_STDOUT_BYTES,
    // Each stream-json line as it arrives, parsed; the result's stdout is the list of events.
    stdout: {
      *transform(line: unknown) {
        if (typeof line !== 'string' || line.trim() === '') return;
        try {
          yield JSON.parse(line) as Record<string, unknown>;
        } catch {
          /* not an event */
        }
      },
      objectMode: true,
    },
  });
  const result = await subprocess;
  // execa signals the leader only: the group is cleared by hand, as cli-process.ts does.
  if (subprocess.pid !== undefined) {
    try {
      process.kill(-subprocess.pid, 'SIGKILL');
    } catch {
      /* the group is already gone */
    }
  }
  return result.stdout.length;
}

const sides = { child_process: viaChildProcess, execa: viaExeca };
type Side = keyof typeof sides;
const names = Object.keys(sides) as Side[];
for (const side of names) {
  for (let i = 0; i < (SMOKE ? 2 : 20); i++) {
    const n = await sides[side]();
    if (n !== 3) throw new Error(`${side} read ${n} events where 3 were sent`);
  }
}
const wall: Record<Side, number[]> = { child_process: [], execa: [] };
const cpu: Record<Side, number[]> = { child_process: [], execa: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const side of r % 2 === 0 ? names : [...names].reverse()) {
    const before = process.cpuUsage();
    for (let i = 0; i < PER_ROUND; i++) wall[side].push((await time(sides[side]))[0]);
    const used = process.cpuUsage(before);
    cpu[side].push((used.user + used.system) / 1000 / PER_ROUND);
  }
}
const median = (xs: number[]) => summarize(xs).p50;
if (SMOKE) console.log('(smoke run: a few of each, to check the script; the figures mean nothing)');
console.log(
  `model-provider / one CLI run (${CAT} replaying stream-json), child_process against execa, ${ROUNDS} alternating rounds of ${PER_ROUND}`,
);
for (const side of names) {
  const w = summarize(wall[side]);
  console.log(
    `  ${side.padEnd(13)}  wall p50 ${ms(w.p50)}  p95 ${ms(w.p95)}  own CPU per run ${ms(median(cpu[side]))} (median of rounds; rounds ${cpu[side].map((x) => x.toFixed(2)).join(', ')})`,
  );
}
console.log(
  `  execa adds per run: wall p50 ${ms(median(wall.execa) - median(wall.child_process))}, own CPU ${ms(median(cpu.execa) - median(cpu.child_process))}`,
);
