#!/usr/bin/env node
/* global Buffer, setInterval, clearInterval, performance */
/**
 * A stand-in for the signed-in CLI in print mode, for tests and benchmarks. It replays the recorded
 * 2.1.197 output shapes (stream-json: system/init, assistant, result) for signed-in answers, which
 * cannot be recorded here (with `modelUsage` keyed by a model id, as signed-in runs report it). It takes
 * `-p` or `--print`, answers `--version` without reading stdin, and reads the prompt from stdin or, when
 * stdin is empty, from its last argument, as the CLI does. What it does is chosen by a marker in the prompt:
 *   (none)                     a text answer that names the prompt's size and hash
 *   [stand-in:empty]           a successful result with empty text
 *   [stand-in:crash]           an error on stderr, exit 1, no result
 *   [stand-in:hang]            starts a child process, prints init, then never finishes
 *   [stand-in:tool-call-once]  tool-call syntax the first time (per STANDIN_RECORD_DIR), text after
 *   [stand-in:tool-call-always] tool-call syntax every time
 *   [stand-in:not-logged-in]   the recorded not-logged-in shape
 *   [stand-in:rate-limit]      a usage-limit failure
 *   [stand-in:slow=MS]         waits MS milliseconds, then answers
 *   [stand-in:hold]            prints init, then answers once the file `release` exists in STANDIN_RECORD_DIR
 *   [stand-in:linger]          answers at once, then exits only once the file `release` exists (a CLI slow to exit)
 *   [stand-in:fail-after-text] prints part of its text (as deltas with --include-partial-messages), then crashes: no result
 *   [stand-in:text-then-tool]  text, then a tool_use block; the run ends as out of turns (error_max_turns)
 *   [stand-in:hold-after-text] prints its first text delta, then the rest once the file `release` exists
 *   [stand-in:loads-tool]      its init event lists the tool Bash, then it answers as usual
 *   [stand-in:no-init]         answers as usual without printing its init event
 *   [stand-in:api-key]         its init event reports apiKeySource ANTHROPIC_API_KEY (an API key reached it), then it answers
 *   [stand-in:stop-hook]       answers as usual, a Stop hook's events after its reply (with --include-hook-events)
 *   [stand-in:text=WORDS]      a reply of WORDS words (with --include-partial-messages, one delta per word unless paced)
 *   [stand-in:prompt-too-long] the 2.1.197 CLI's answer to a prompt over the context window (recorded against a
 *                              Messages API double: assistant error invalid_request, "Prompt is too long · ...",
 *                              result is_error with terminal_reason prompt_too_long)
 * While the file `signed-out` exists in STANDIN_RECORD_DIR, every run (the lockdown probe too) answers as
 * [stand-in:not-logged-in] does: a CLI signed out, and signed in again once the file is gone.
 * With --json-schema it answers in structured_output, an object built from the schema.
 * Variables it reads as the 2.1.197 binary does: CLAUDE_CODE_DISABLE_AUTO_MEMORY (a true value: no
 * `memory_paths` in init; otherwise the auto memory folder under HOME, as the signed-out CLI reports it),
 * CLAUDE_CODE_MAX_OUTPUT_TOKENS (a whole number above 0: each message is at most that many "tokens", a token
 * here being one piece of text, a word unless paced; a message cut there ends with stop_reason max_tokens,
 * and then, as the CLI does on its own, it asks again to go on, up to three times: the first time once the
 * file `release` exists in STANDIN_RECORD_DIR, as if that request took the model a while; still cut after
 * three, an error result "API Error: Claude's response exceeded the N output token maximum..."; finished,
 * a result whose text is the last message's only, as the CLI's), CLAUDE_CODE_EXTRA_BODY (its stop_sequences
 * as the model applies them: the text ends before the first, which is left out, stop_reason stop_sequence).
 * The record keeps the values of those and CLAUDE_CODE_DISABLE_CLAUDE_MDS, CLAUDE_CODE_DISABLE_THINKING
 * (`cliVars`). STANDIN_API_KEY_SOURCE sets the init event's apiKeySource (default none, a subscription login);
 * STANDIN_MEMORY=on makes a CLI whose auto memory stays on whatever CLAUDE_CODE_DISABLE_AUTO_MEMORY says.
 * With --include-partial-messages it also prints the `stream_event` lines of the 2.1.197 CLI (read from its
 * binary: message_start with ttft_ms, content_block_start, content_block_delta text_delta ..., then the
 * block's whole `assistant` message, content_block_stop, message_delta, message_stop; a `system/status`
 * "requesting" line after init, as the signed-out CLI prints it too). The pace of the text deltas: a
 * marker `[stand-in-pace:COUNTxMS]` in the prompt or STANDIN_PACE=COUNTxMS (COUNT deltas, MS ms apart;
 * by default one delta per word, none apart; without partial messages a paced reply comes as late as its
 * last delta would). The record then holds when the first delta was printed (`firstDeltaAt`).
 * Environment: STANDIN_RECORD_DIR (each run writes run-<pid>-<session>.json there: argv, cwd, stdin, pgid,
 * the names but not the values of its environment variables, how many runs were alive when it
 * started, counted from alive/<pid> entries whose process still lives), STANDIN_LOADS (comma-separated tools the init event reports), STANDIN_MCP (MCP server
 * names), STANDIN_HOOK (a SessionStart hook event before init), STANDIN_SKILLS (skills the init event lists, each also
 * as a slash command). A record also holds when the run's process
 * started and, once it answered, when it ended (`startedAt`, `endedAt`). STANDIN_PACE sets the default pace of text deltas.
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const argv = process.argv.slice(2);
const flag = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const session = randomUUID();
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const { flags, positional } = parseArgv();

// As the real CLI: --version answers at once, without reading stdin (the peer proxy checks it at start);
// only as a flag, never as the value of one (`--system-prompt --version` is a system prompt).
if (flags.has('--version')) {
  process.stdout.write('2.1.197 (Claude Code)\n');
  process.exit(0);
}
const chunks = [];
for await (const c of process.stdin) chunks.push(c);
// The prompt comes on stdin (this service) or, when stdin is empty, as the last argument (the peer proxy does that).
const stdin = Buffer.concat(chunks).toString('utf8') || positional;
if (!flags.has('-p') && !flags.has('--print')) {
  process.stderr.write('stand-in: only print mode (-p) is imitated\n');
  process.exit(2);
}
if (stdin.length === 0) {
  process.stderr.write(
    'Error: Input must be provided either through stdin or as a prompt argument when using --print\n',
  );
  process.exit(1);
}

const recordDir = process.env.STANDIN_RECORD_DIR;
const alive = recordDir ? join(recordDir, 'alive') : undefined;
// startedAt/endedAt (ms since the epoch, from this process's start to its exit): what the run itself took, for the benchmark.
const record = {
  pid: process.pid,
  argv,
  cwd: process.cwd(),
  cwdEntries: readdirSync(process.cwd()),
  stdin,
  pgid: pgid(),
  concurrentAtStart: 0,
  envKeys: Object.keys(process.env),
  // Values only of the variables the service sets for the CLI (never of the rest: a token may be among them).
  cliVars: Object.fromEntries(
    [
      'CLAUDE_CODE_DISABLE_CLAUDE_MDS',
      'CLAUDE_CODE_DISABLE_AUTO_MEMORY',
      'CLAUDE_CODE_MAX_OUTPUT_TOKENS',
      'CLAUDE_CODE_DISABLE_THINKING',
      'CLAUDE_CODE_EXTRA_BODY',
    ]
      .filter((k) => process.env[k] !== undefined)
      .map((k) => [k, process.env[k]]),
  ),
  startedAt: performance.timeOrigin,
};
if (alive) {
  mkdirSync(alive, { recursive: true });
  // The entry holds the process's start time, so that a pid the system has since given to another process is not counted.
  writeFileSync(join(alive, String(process.pid)), startTimeOf(process.pid) ?? '');
  record.concurrentAtStart = countAlive(alive);
  // A run killed by SIGKILL cannot remove its entry; one ended by a catchable signal removes it, then dies of that signal.
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.once(sig, () => {
      rmSync(join(alive, String(process.pid)), { force: true });
      process.kill(process.pid, sig);
    });
  }
}
// Written beside, then renamed: a test may read the record while the run is still writing it.
const save = () => {
  if (!recordDir) return;
  // The session id too: on a busy machine the system hands a pid out again within one benchmark.
  const file = join(recordDir, `run-${process.pid}-${session.slice(0, 8)}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(record));
  renameSync(`${file}.tmp`, file);
};
const done = (code) => {
  if (alive) rmSync(join(alive, String(process.pid)), { force: true });
  record.endedAt = performance.timeOrigin + performance.now();
  save();
  process.exit(code);
};
save();

/** A variable the CLI reads as true (its ct(): 1, true, yes, on). */
function truthy(value) {
  return ['1', 'true', 'yes', 'on'].includes(
    String(value ?? '')
      .toLowerCase()
      .trim(),
  );
}

/** The CLI's output limit (its _de(): a whole number above 0, else its default, here none). */
function outputLimit() {
  const n = parseInt(process.env.CLAUDE_CODE_MAX_OUTPUT_TOKENS ?? '', 10);
  return Number.isNaN(n) || n <= 0 ? undefined : n;
}

/** CLAUDE_CODE_EXTRA_BODY, which the CLI adds to its request body (a JSON object, else nothing). */
function extraBody() {
  try {
    const body = JSON.parse(process.env.CLAUDE_CODE_EXTRA_BODY ?? '{}');
    return body && typeof body === 'object' && !Array.isArray(body) ? body : {};
  } catch {
    return {};
  }
}

/** The flags given, and the last argument that is neither a flag nor a flag's value (the prompt; '' when there is none). */
function parseArgv() {
  const takesValue = new Set([
    '--output-format',
    '--input-format',
    '--model',
    '--system-prompt',
    '--json-schema',
    '--max-turns',
    '--mcp-config',
    '--tools',
    '--session-id',
    '--name',
    '--effort',
  ]);
  const given = new Set();
  let prompt = '';
  for (let i = 0; i < argv.length; i++) {
    if (takesValue.has(argv[i])) i++;
    else if (argv[i].startsWith('-')) given.add(argv[i]);
    else prompt = argv[i];
  }
  return { flags: given, positional: prompt };
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks); null for a zombie, undefined where there is no /proc or no such process. */
function startTimeOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : fields[19];
  } catch {
    return undefined;
  }
}

/**
 * Runs alive now, this one included: an entry counts only while its pid is a live process that started
 * when the entry says. Entries of runs that were killed (SIGKILL leaves them) are removed on the way.
 */
function countAlive(dir) {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const pid = Number(name);
    let recorded;
    try {
      recorded = readFileSync(join(dir, name), 'utf8');
    } catch {
      continue;
    }
    if (Number.isInteger(pid) && pid > 0 && isLive(pid, recorded)) n++;
    else rmSync(join(dir, name), { force: true });
  }
  return n;
}

function isLive(pid, recordedStart) {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (err.code === 'ESRCH') return false;
  }
  const now = startTimeOf(pid);
  if (now === null) return false;
  return now === undefined || recordedStart === '' || now === recordedStart;
}

function pgid() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return null;
  }
}

const schemaText = flag('--json-schema');
const skills = (process.env.STANDIN_SKILLS ?? '').split(',').filter(Boolean);
const tools = (process.env.STANDIN_LOADS ?? '').split(',').filter(Boolean);
if (schemaText) tools.push('StructuredOutput');
// A run that turns out to load a tool after the probe proved lockdown (its text follows as usual).
if (stdin.includes('[stand-in:loads-tool]')) tools.push('Bash');
/** A settings hook's two events, as the CLI prints them. */
function hookEvents(name, event) {
  const hookId = randomUUID();
  const common = { hook_id: hookId, hook_name: name, hook_event: event };
  out({ type: 'system', subtype: 'hook_started', ...common, uuid: randomUUID(), session_id: session });
  out({
    type: 'system',
    subtype: 'hook_response',
    ...common,
    output: '',
    stdout: '',
    stderr: '',
    exit_code: 0,
    outcome: 'success',
    uuid: randomUUID(),
    session_id: session,
  });
}
if (process.env.STANDIN_HOOK) hookEvents('SessionStart:startup', 'SessionStart');
// [stand-in:no-init]: a run that never says what it loaded, and answers all the same.
if (!stdin.includes('[stand-in:no-init]'))
  out({
    type: 'system',
    subtype: 'init',
    cwd: process.cwd(),
    session_id: session,
    tools,
    mcp_servers: (process.env.STANDIN_MCP ?? '')
      .split(',')
      .filter(Boolean)
      .map((name) => ({ name, status: 'pending' })),
    model: flag('--model') ?? 'default',
    permissionMode: 'default',
    // A CLI that loads the user's skills lists each as a skill and a slash command.
    slash_commands: skills,
    apiKeySource: stdin.includes('[stand-in:api-key]')
      ? 'ANTHROPIC_API_KEY'
      : process.env.STANDIN_API_KEY_SOURCE || 'none',
    claude_code_version: '2.1.197',
    output_style: 'default',
    agents: ['claude', 'Explore', 'general-purpose', 'Plan', 'statusline-setup'],
    skills,
    plugins: [],
    uuid: randomUUID(),
    // The binary lists the auto memory folder only while auto memory is on (its au(): off for a true CLAUDE_CODE_DISABLE_AUTO_MEMORY).
    ...(truthy(process.env.CLAUDE_CODE_DISABLE_AUTO_MEMORY) && process.env.STANDIN_MEMORY !== 'on'
      ? {}
      : {
          memory_paths: {
            auto: join(
              process.env.HOME ?? '/',
              '.claude',
              'projects',
              process.cwd().replace(/[^A-Za-z0-9]/g, '-'),
              'memory/',
            ),
          },
        }),
    fast_mode_state: 'off',
  });
// A Stop hook of the user's settings runs after the reply; the CLI reports it only with --include-hook-events.
const stopHook = stdin.includes('[stand-in:stop-hook]') && flags.has('--include-hook-events');

const usage = {
  input_tokens: 12,
  cache_creation_input_tokens: 30,
  cache_read_input_tokens: 2000,
  output_tokens: 9,
  server_tool_use: { web_search_requests: 0, web_fetch_requests: 0 },
  service_tier: 'standard',
};
// Keyed by the concrete model id, as a signed-in run reports it (a run that is not signed in reports {}).
const modelUsage = {
  'claude-stand-in': {
    inputTokens: 12,
    outputTokens: 9,
    cacheReadInputTokens: 2000,
    cacheCreationInputTokens: 30,
    webSearchRequests: 0,
    costUSD: 0.0001,
    contextWindow: 200000,
  },
};
const assistant = (content, extra = {}) =>
  out({
    type: 'assistant',
    message: {
      id: `msg_${session.slice(0, 8)}`,
      model: 'claude-stand-in',
      role: 'assistant',
      type: 'message',
      stop_reason: 'end_turn',
      usage,
      content,
    },
    parent_tool_use_id: null,
    session_id: session,
    uuid: randomUUID(),
    ...extra,
  });
const result = (fields) =>
  out({
    type: 'result',
    subtype: 'success',
    is_error: false,
    api_error_status: null,
    duration_ms: 5,
    duration_api_ms: 4,
    num_turns: 1,
    result: '',
    stop_reason: 'end_turn',
    session_id: session,
    total_cost_usd: 0.0001,
    usage,
    modelUsage,
    permission_denials: [],
    terminal_reason: 'completed',
    uuid: randomUUID(),
    ...fields,
  });

const signedOut = recordDir !== undefined && existsSync(join(recordDir, 'signed-out'));
const mode = signedOut ? [undefined, 'not-logged-in'] : /\[stand-in:([a-z-]+)(?:=(\d+))?\]/.exec(stdin);
const TOOL_CALL =
  '<function_calls>\n<invoke name="Bash">\n<parameter name="command">ls</parameter>\n</invoke>\n</function_calls>';
const partial = flags.has('--include-partial-messages');
const paceText =
  /\[stand-in-pace:(\d+)x(\d+)\]/.exec(stdin)?.slice(1) ??
  /^(\d+)x(\d+)$/.exec(process.env.STANDIN_PACE ?? '')?.slice(1);
const pace = paceText ? { deltas: Math.max(1, Number(paceText[0])), ms: Number(paceText[1]) } : undefined;
if (partial) out({ type: 'system', subtype: 'status', status: 'requesting', uuid: randomUUID(), session_id: session });

function exampleFor(schema) {
  if (!schema || typeof schema !== 'object') return 'stand-in';
  if (schema.type === 'object' || schema.properties) {
    return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, exampleFor(v)]));
  }
  if (schema.type === 'array') return [exampleFor(schema.items)];
  if (schema.type === 'number' || schema.type === 'integer') return 42;
  if (schema.type === 'boolean') return true;
  return 'stand-in';
}

/** Calls `then` once the file `release` exists in STANDIN_RECORD_DIR: a test decides when, acting meanwhile. */
function whenReleased(then) {
  const release = join(recordDir ?? '.', 'release');
  const check = setInterval(() => {
    if (!existsSync(release)) return;
    clearInterval(check);
    then();
  }, 20);
}
const released = () => new Promise((resolve) => whenReleased(resolve));

const streamEvent = (event, extra = {}) =>
  out({ type: 'stream_event', event, session_id: session, parent_tool_use_id: null, uuid: randomUUID(), ...extra });

/** The text in `count` pieces (by words when not paced), joined exactly back into it. */
function pieces(text, count) {
  if (count === undefined) return text.match(/\S+\s*|\s+/g) ?? [];
  const n = Math.min(count, Math.max(1, text.length));
  const size = Math.ceil(text.length / n);
  return Array.from({ length: n }, (_, i) => text.slice(i * size, (i + 1) * size)).filter((p) => p !== '');
}

/**
 * One assistant message. With --include-partial-messages its stream events come first, its text as deltas at
 * the pace asked for (`afterFirst` runs after the first delta; `stopAfter` prints only that many, then returns
 * false: the run is cut off). Blocks: `{ text }` or `{ tool: { name, input } }`.
 */
async function message(blocks, { afterFirst, stopAfter, stopReason, stopSequence = null, outputTokens } = {}) {
  const content = blocks.map((b) =>
    b.tool
      ? { type: 'tool_use', id: `toolu_${session.slice(0, 8)}`, name: b.tool.name, input: b.tool.input }
      : { type: 'text', text: b.text },
  );
  if (!partial) {
    // The model takes as long to write whether or not its words are shown on the way.
    if (pace?.ms) await sleep((pace.deltas - 1) * pace.ms);
    assistant(content);
    return true;
  }
  streamEvent(
    {
      type: 'message_start',
      message: {
        model: 'claude-stand-in',
        id: `msg_${session.slice(0, 8)}`,
        type: 'message',
        role: 'assistant',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    },
    { ttft_ms: 5 },
  );
  let sent = 0;
  for (const [index, block] of content.entries()) {
    if (block.type === 'text') {
      streamEvent({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const piece of pieces(block.text, pace?.deltas)) {
        if (sent > 0 && pace?.ms) await sleep(pace.ms);
        streamEvent({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
        sent++;
        if (sent === 1) {
          record.firstDeltaAt = performance.timeOrigin + performance.now();
          save();
          await afterFirst?.();
        }
        if (stopAfter !== undefined && sent >= stopAfter) return false;
      }
    } else {
      streamEvent({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
      streamEvent({
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
      });
    }
    assistant([block]);
    streamEvent({ type: 'content_block_stop', index });
  }
  const stop = stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  streamEvent({
    type: 'message_delta',
    delta: { stop_reason: stop, stop_sequence: stopSequence },
    usage: { ...usage, ...(outputTokens === undefined ? {} : { output_tokens: outputTokens }) },
  });
  streamEvent({ type: 'message_stop' });
  return true;
}

/** A reply of `words` words. */
const wordsReply = (words) => Array.from({ length: words }, (_, i) => `word${i + 1}`).join(' ') + '.';

/** Prints the answer (its result event last), then `finish` (by default exits 0). */
async function answer(finish = () => done(0), options = {}) {
  if (schemaText) {
    const structured = exampleFor(JSON.parse(schemaText));
    await message([{ tool: { name: 'StructuredOutput', input: structured } }]);
    result({ num_turns: 2, structured_output: structured });
  } else {
    let text =
      options.text ??
      `Stand-in reply to ${Buffer.byteLength(stdin)} bytes (sha256 ${createHash('sha256').update(stdin).digest('hex').slice(0, 16)}).`;
    // The model stops at the first of the request's stop sequences, which it leaves out.
    let stopSequence = null;
    for (const seq of extraBody().stop_sequences ?? []) {
      const at = text.indexOf(seq);
      if (at >= 0 && (stopSequence === null || at < text.indexOf(stopSequence))) stopSequence = seq;
    }
    if (stopSequence !== null) text = text.slice(0, text.indexOf(stopSequence));
    const limit = outputLimit();
    const tokens = pieces(text, pace?.deltas);
    if (limit !== undefined && tokens.length > limit) {
      await limited(tokens, limit, options);
      return finish();
    }
    await message([{ text }], {
      ...options,
      ...(stopSequence === null ? {} : { stopReason: 'stop_sequence', stopSequence }),
    });
    if (stopHook) hookEvents('Stop', 'Stop');
    result({ result: text, ...(stopSequence === null ? {} : { stop_reason: 'stop_sequence' }) });
  }
  finish();
}

/**
 * A reply longer than the output limit, as the 2.1.197 CLI runs it (recorded against a Messages API double):
 * the message is cut at `limit` tokens (stop_reason max_tokens); the CLI then asks the model to go on by
 * itself, up to three times ("Output token limit hit. Resume directly..."), each message cut again at the
 * limit; still cut after three, an error result; finished, a result with the last message's text only.
 */
async function limited(tokens, limit, options) {
  const say = (part, cut) =>
    message([{ text: part.join('') }], {
      ...options,
      stopReason: cut ? 'max_tokens' : 'end_turn',
      outputTokens: part.length,
    });
  await say(tokens.slice(0, limit), true);
  let rest = tokens.slice(limit);
  for (let recovery = 1; recovery <= 3; recovery++) {
    out({ type: 'system', subtype: 'status', status: 'requesting', uuid: randomUUID(), session_id: session });
    // The continuation is a new request to the model: a test decides when it answers (never, unless the run is left to go on).
    if (recovery === 1) await released();
    const part = rest.slice(0, limit);
    rest = rest.slice(limit);
    await say(part, rest.length > 0);
    if (rest.length === 0) {
      result({ result: part.join(''), usage: { ...usage, output_tokens: part.length } });
      return;
    }
  }
  const error = `API Error: Claude's response exceeded the ${limit} output token maximum. To configure this behavior, set the CLAUDE_CODE_MAX_OUTPUT_TOKENS environment variable.`;
  out({
    type: 'assistant',
    message: {
      id: randomUUID(),
      model: '<synthetic>',
      role: 'assistant',
      stop_reason: 'stop_sequence',
      stop_sequence: '',
      type: 'message',
      usage: { input_tokens: 0, output_tokens: 0 },
      content: [{ type: 'text', text: error }],
    },
    parent_tool_use_id: null,
    session_id: session,
    uuid: randomUUID(),
    error: 'max_output_tokens',
  });
  result({ is_error: true, result: error, stop_reason: 'stop_sequence' });
}

switch (mode?.[1]) {
  case 'empty':
    await message([{ text: '' }]);
    result({ result: '' });
    done(0);
    break;
  case 'crash':
    process.stderr.write('Error: the stand-in crashed on purpose\n');
    done(1);
    break;
  case 'hang': {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    record.grandchildPid = child.pid;
    save();
    setInterval(() => {}, 1000);
    break;
  }
  case 'tool-call-once': {
    const marker = recordDir
      ? join(recordDir, `tool-call-${createHash('sha256').update(stdin).digest('hex').slice(0, 12)}`)
      : undefined;
    if (marker && existsSync(marker)) await answer();
    else {
      if (marker) writeFileSync(marker, '');
      await message([{ text: TOOL_CALL }]);
      result({ result: TOOL_CALL });
      done(0);
    }
    break;
  }
  case 'tool-call-always':
    await message([{ text: TOOL_CALL }]);
    result({ result: TOOL_CALL });
    done(0);
    break;
  case 'not-logged-in':
    assistant([{ type: 'text', text: 'Not logged in · Please run /login' }], { error: 'authentication_failed' });
    result({ is_error: true, result: 'Not logged in · Please run /login', total_cost_usd: 0, modelUsage: {} });
    done(1);
    break;
  case 'rate-limit':
    assistant([{ type: 'text', text: "You've hit your usage limit" }], { error: 'rate_limit' });
    result({ is_error: true, result: "You've hit your usage limit" });
    done(1);
    break;
  case 'slow':
    setTimeout(answer, Number(mode[2] ?? 100));
    break;
  case 'hold':
    // A test decides when the run ends (by creating the file), so it can act while the run is surely in flight.
    whenReleased(() => void answer());
    break;
  case 'linger':
    // The whole answer, then a process still running: the end of the answer is its result event, not the exit.
    await answer(() => whenReleased(() => done(0)));
    break;
  case 'fail-after-text':
    await message([{ text: 'The first words of a reply that never ends.' }], { stopAfter: 3 });
    process.stderr.write('Error: the stand-in crashed mid-reply on purpose\n');
    done(1);
    break;
  case 'text-then-tool':
    await message([{ text: 'Let me look at the files first. ' }, { tool: { name: 'Bash', input: { command: 'ls' } } }]);
    result({
      subtype: 'error_max_turns',
      is_error: true,
      result: undefined,
      num_turns: 2,
      stop_reason: 'tool_use',
      errors: ['Reached maximum number of turns (1)'],
    });
    done(1);
    break;
  case 'hold-after-text':
    await answer(undefined, { afterFirst: released });
    break;
  case 'text':
    await answer(undefined, { text: wordsReply(Number(mode[2] ?? 20)) });
    break;
  case 'prompt-too-long': {
    // As the 2.1.197 CLI answers the API's 400 "prompt is too long: N tokens > M maximum".
    const words =
      'Prompt is too long \u00b7 the request is ~250123 tokens (limit 200000) but this conversation is only ~2 tokens \u2014 the rest is system prompt, tool definitions, and attachment content. A single-exchange conversation cannot be compacted; reduce attached files/tools or start with less context.';
    out({
      type: 'assistant',
      message: {
        id: randomUUID(),
        model: '<synthetic>',
        role: 'assistant',
        stop_reason: 'stop_sequence',
        stop_sequence: '',
        type: 'message',
        usage: { input_tokens: 0, output_tokens: 0 },
        content: [{ type: 'text', text: words }],
      },
      parent_tool_use_id: null,
      session_id: session,
      uuid: randomUUID(),
      error: 'invalid_request',
      request_id: 'req_stand_in',
    });
    result({
      is_error: true,
      api_error_status: 400,
      result: words,
      stop_reason: 'stop_sequence',
      total_cost_usd: 0,
      modelUsage: {},
      terminal_reason: 'prompt_too_long',
    });
    done(1);
    break;
  }
  default:
    await answer();
}
