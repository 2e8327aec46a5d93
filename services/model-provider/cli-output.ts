import { providerError, ProviderError } from './errors.ts';
import type { RunResult } from './cli-process.ts';
import type { FinishReason, Usage } from './shapes.ts';

/** What a run loaded, from its `system/init` event (and the hook events the CLI prints around it). */
export interface Loaded {
  tools: string[];
  mcp_servers: string[];
  hooks: string[];
  /** Both empty under --disable-slash-commands; a CLI that lists any has not applied it (a command can run shell lines). */
  slash_commands?: string[];
  skills?: string[];
  /** The init event names an auto memory folder (`memory_paths`) only while the CLI's auto memory is on. */
  auto_memory?: boolean;
  /** Where the CLI's API key comes from (`apiKeySource`): `none` for a subscription login. */
  api_key_source?: string;
}

/** A subscription login (or none at all) has no API key: anything else is billed to an API account. */
export const SUBSCRIPTION_KEY_SOURCE = 'none';

export function loadedBy(init: Record<string, unknown>): Loaded {
  const names = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  const mcp = Array.isArray(init.mcp_servers)
    ? init.mcp_servers.map((s) => String((s as { name?: unknown })?.name ?? s))
    : [];
  return {
    tools: names(init.tools),
    mcp_servers: mcp,
    hooks: [],
    slash_commands: names(init.slash_commands),
    skills: names(init.skills),
    auto_memory: typeof init.memory_paths === 'object' && init.memory_paths !== null,
    ...(typeof init.apiKeySource === 'string' ? { api_key_source: init.apiKeySource } : {}),
  };
}

/** What to change, by the API key source the CLI reports (the values its 2.1.197 binary gives). */
export function billingFix(source: string): string {
  const where = `the CLI reports its API key source as "${source.slice(0, 60)}", so runs would be billed to an API account instead of your subscription login`;
  if (source === 'apiKeyHelper')
    return `${where}: remove "apiKeyHelper" from the CLI's settings (~/.claude/settings.json, or a managed settings file), then restart the service`;
  if (source === 'ANTHROPIC_API_KEY')
    return `${where}: remove ANTHROPIC_API_KEY from the "env" of the CLI's settings files (~/.claude/settings.json), then restart the service`;
  if (source === '/login managed key')
    return `${where}: the CLI is signed in with an Anthropic Console account; run the CLI in a terminal, /logout, then /login with your Claude subscription, then restart the service`;
  return `${where}: sign the CLI in with your Claude subscription and remove any API key from its settings, then restart the service`;
}

export const isInit = (e: Record<string, unknown>) => e.type === 'system' && e.subtype === 'init';
export const isHook = (e: Record<string, unknown>) =>
  e.type === 'system' && typeof e.subtype === 'string' && e.subtype.startsWith('hook_');
/** The hook's name as the CLI reports it (`SessionStart:startup`, `UserPromptSubmit`). */
export const hookName = (e: Record<string, unknown>) => String(e.hook_name ?? e.hook_event ?? 'hook');

/**
 * A run is locked down when it loaded no tools, no MCP servers, no slash commands or skills (and ran no hooks). A schema run
 * is allowed exactly the StructuredOutput tool, which --json-schema itself adds.
 */
export function lockdownBreach(loaded: Loaded, structured: boolean): string | undefined {
  const tools = loaded.tools.filter((t) => !(structured && t === 'StructuredOutput'));
  const parts: string[] = [];
  if (tools.length > 0) parts.push(`tools ${tools.join(', ')}`);
  if (loaded.mcp_servers.length > 0) parts.push(`MCP servers ${loaded.mcp_servers.join(', ')}`);
  if (loaded.hooks.length > 0) parts.push(`hooks ${loaded.hooks.join(', ')}`);
  if (loaded.slash_commands?.length) parts.push(`slash commands ${loaded.slash_commands.join(', ')}`);
  if (loaded.skills?.length) parts.push(`skills ${loaded.skills.join(', ')}`);
  if (loaded.auto_memory) parts.push('auto memory (the person\u2019s own notes)');
  if (loaded.api_key_source !== undefined && loaded.api_key_source !== SUBSCRIPTION_KEY_SOURCE)
    parts.push(`an API key (${billingFix(loaded.api_key_source)})`);
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** prompt_tokens counts everything the model read: fresh input plus cache reads plus cache writes. */
export function usageOf(raw: unknown): Usage {
  const u = (raw ?? {}) as Record<string, unknown>;
  const n = (k: string) => (typeof u[k] === 'number' && Number.isFinite(u[k]) ? (u[k] as number) : 0);
  const cacheRead = n('cache_read_input_tokens');
  const prompt = n('input_tokens') + cacheRead + n('cache_creation_input_tokens');
  const completion = n('output_tokens');
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead },
  };
}

export interface CliAnswer {
  text: string;
  structured: unknown;
  usage: Usage;
  /** The model answered with tool-call syntax (or tried to use a tool) instead of text. */
  toolCall: boolean;
  /** `length`: cut at the output limit (max_tokens); `stop`: finished, or ended at a stop sequence. */
  finish: FinishReason;
  /** The reply ended at one of the caller's stop sequences. */
  stopped?: boolean;
}

const AUTH_ERRORS = new Set(['authentication_failed', 'oauth_org_not_allowed']);
const AUTH_TEXT =
  /^(Not logged in|Invalid API key|Please run \/login|Failed to authenticate|OAuth token expired|OAuth session expired)/i;
const LIMIT_ERRORS = new Set(['rate_limit', 'billing_error']);
/** How the CLI words a prompt over the model's context window: "Prompt is too long", alone or followed by " · " and the sizes. */
const PROMPT_TOO_LONG = /^Prompt is too long\b/;

/**
 * Markup a model emits when it believes it can call tools; with no tools it is never a real answer.
 * A reply counts when it opens with such a tag, or carries a function-call block anywhere.
 */
const TOOL_TAG_NAMES = [
  'function_calls',
  'invoke',
  'tool_use',
  'tool_call',
  'function_call',
  'bash',
  'read_file',
  'write_file',
  'execute_command',
  'attempt_completion',
];
const TOOL_TAGS = `(?:antml:)?(?:${TOOL_TAG_NAMES.join('|')})`;
const OPENS_WITH_TOOL_TAG = new RegExp(`^\\s*(?:\`\`\`\\w*\\s*)?<${TOOL_TAGS}\\b`, 'i');
const CALL_BLOCK = /<(?:antml:)?function_calls>|<(?:antml:)?invoke name=|"type"\s*:\s*"tool_use"/i;
/** Every way a reply may open with a tool tag, and a call block begin (the tags may carry a namespace): text that is a prefix of one may still become one. */
const TAG_PREFIXES = ['', 'antml' + ':'];
const TAG_OPENINGS = TOOL_TAG_NAMES.flatMap((name) => TAG_PREFIXES.map((prefix) => `<${prefix}${name}`));
const CALL_BLOCK_OPENINGS = ['function_calls>', 'invoke name='].flatMap((tag) =>
  TAG_PREFIXES.map((prefix) => `<${prefix}${tag}`),
);

export function looksLikeToolCall(text: string): boolean {
  return OPENS_WITH_TOOL_TAG.test(text) || CALL_BLOCK.test(text);
}

/**
 * How much of a reply's text so far may be shown while the CLI still writes it (MODELPROV_STREAM=deltas),
 * so that what is shown is never what the finished reply would be refused for: nothing while the text is
 * blank (it may end empty) or could still open with a tool tag (such a reply is asked for again, unseen);
 * otherwise everything up to a call block, and never a tail that could still begin one. `from` is where
 * a call block may start (what was already searched need not be again).
 */
export function showableLength(text: string, from = 0): number {
  if (from === 0) {
    let body = text.trimStart().toLowerCase();
    if (body === '' || '```'.startsWith(body)) return 0;
    if (body.startsWith('```')) {
      body = body.slice(/^```\w*/.exec(body)![0].length);
      // The fence's language word may go on, and the tag may come after the blank that ends it.
      if (body === '' || body.trimStart() === '') return 0;
      body = body.trimStart();
    }
    if (TAG_OPENINGS.some((opening) => opening.startsWith(body)) || OPENS_WITH_TOOL_TAG.test(text)) return 0;
  }
  const searched = text.slice(from);
  const block = CALL_BLOCK.exec(searched);
  if (block) return from + block.index;
  const lt = searched.lastIndexOf('<');
  if (lt >= 0) {
    const tail = searched.slice(lt).toLowerCase();
    if (CALL_BLOCK_OPENINGS.some((opening) => opening.startsWith(tail))) return from + lt;
  }
  return text.length;
}

/**
 * Reads a finished run. `is_error` (not `subtype`) says a run failed; a not-signed-in CLI says so with
 * the assistant error `authentication_failed` and a result text starting "Not logged in".
 */
export function readAnswer(run: RunResult, structured: boolean, timeoutSeconds: number): CliAnswer {
  if (run.end === 'spawn_failed') {
    const code = run.spawnError?.code;
    // Thrown by spawn itself: the binary is there, the request could not be handed to it.
    if (code === 'E2BIG' || code === 'ERR_INVALID_ARG_VALUE' || code === 'ERR_INVALID_ARG_TYPE') {
      throw providerError.cliFailed(`the request could not be passed to the CLI (${code}).`);
    }
    throw providerError.cliNotFound(
      code === 'ENOENT'
        ? 'The CLI binary could not be started (not found).'
        : `The CLI binary could not be started (${code ?? 'spawn error'}).`,
    );
  }
  if (run.end === 'timeout') throw providerError.timeout(timeoutSeconds);
  if (run.end === 'shutdown') throw providerError.shuttingDown();
  if (run.end === 'output_too_large')
    throw providerError.cliFailed('it printed more output than the service accepts (32 MiB).');

  const assistantErrors = run.events
    .filter((e) => e.type === 'assistant' && typeof e.error === 'string')
    .map((e) => e.error as string);
  const result = [...run.events].reverse().find((e) => e.type === 'result');
  const resultText = typeof result?.result === 'string' ? result.result : '';
  if (assistantErrors.some((e) => AUTH_ERRORS.has(e)) || (result?.is_error === true && AUTH_TEXT.test(resultText))) {
    throw providerError.notLoggedIn();
  }
  // The CLI's own words for a prompt over the context window (its result says terminal_reason prompt_too_long).
  if (result?.is_error === true && (result.terminal_reason === 'prompt_too_long' || PROMPT_TOO_LONG.test(resultText))) {
    throw providerError.contextLengthExceeded(resultText || 'Prompt is too long');
  }
  if (!result) {
    const how = run.signal ? `it was ended by ${run.signal}` : `it exited with code ${run.exitCode ?? 'unknown'}`;
    throw providerError.cliFailed(`${how} without a result.`);
  }
  const toolUseBlocks = run.events.some(
    (e) =>
      e.type === 'assistant' &&
      Array.isArray((e.message as { content?: unknown })?.content) &&
      (e.message as { content: { type?: string; name?: string }[] }).content.some(
        (b) => b.type === 'tool_use' && !(structured && b.name === 'StructuredOutput'),
      ),
  );
  if (result.is_error === true || (typeof result.subtype === 'string' && result.subtype.startsWith('error'))) {
    const why =
      (Array.isArray(result.errors) ? result.errors.join('; ') : resultText).slice(0, 200) || String(result.subtype);
    if (assistantErrors.some((e) => LIMIT_ERRORS.has(e))) throw providerError.rateLimited(`${why}.`);
    if (assistantErrors.includes('model_not_found')) {
      throw new ProviderError(
        404,
        'model_not_found',
        'The signed-in account cannot use this model; choose another alias from GET /v1/models.',
        { param: 'model' },
      );
    }
    // A plain run that ran out of its single turn was trying to use a tool.
    if (!structured && result.subtype === 'error_max_turns')
      return { text: '', structured: undefined, usage: usageOf(result.usage), toolCall: true, finish: 'stop' };
    throw providerError.cliFailed(`${why}.`);
  }
  const text = resultText;
  return {
    text,
    structured: result.structured_output,
    usage: usageOf(result.usage),
    toolCall: toolUseBlocks || (!structured && looksLikeToolCall(text)),
    finish: 'stop',
  };
}
