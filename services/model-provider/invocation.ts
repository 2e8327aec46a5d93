import type { RunSettings } from './members.ts';

/**
 * The CLI's argv for one run. Every run, the startup probe included, gets the same lockdown flags:
 * no tools, no slash commands or skills, exactly the empty MCP configuration, no session transcript,
 * and every hook the CLI runs reported (so that lockdown can refuse it).
 * The prompt is never on argv: it goes on stdin (a prompt starting with "-" would be read as a flag,
 * `--tools`/`--mcp-config` are variadic and swallow a following prompt, and argv over 128 KiB fails).
 */
export const EMPTY_MCP_CONFIG = '{"mcpServers":{}}';
/** The display name of every run's session (`--name`), which spares it the CLI's own title request. */
export const SESSION_NAME = 'model-provider';

export interface Invocation {
  model: string;
  systemPrompt?: string;
  jsonSchema?: Record<string, unknown>;
  /** `--include-partial-messages`: the reply's text also as `stream_event` deltas while the CLI writes it. */
  partialMessages?: boolean;
  /** `--effort`: the model's effort level (reasoning_effort). */
  effort?: string;
}

export function cliArgs(inv: Invocation): string[] {
  const args = [
    '-p',
    '--output-format',
    'stream-json',
    '--verbose',
    // Without it a UserPromptSubmit (or Stop) hook from the user's settings runs unseen: lockdown must see every hook.
    '--include-hook-events',
    ...(inv.partialMessages ? ['--include-partial-messages'] : []),
    '--tools',
    '',
    '--disable-slash-commands',
    '--mcp-config',
    EMPTY_MCP_CONFIG,
    '--strict-mcp-config',
    '--no-session-persistence',
    // A session with a name gets no title: without one the CLI asks the model for a title of every prompt of
    // 10 characters or more, a second model call per completion that sends the prompt again.
    '--name',
    SESSION_NAME,
    // A structured answer costs the model turns (it calls the StructuredOutput tool), so a schema run gets four.
    '--max-turns',
    inv.jsonSchema ? '4' : '1',
    '--model',
    inv.model,
  ];
  if (inv.effort !== undefined) args.push('--effort', inv.effort);
  if (inv.systemPrompt !== undefined) args.push('--system-prompt', inv.systemPrompt);
  if (inv.jsonSchema) args.push('--json-schema', JSON.stringify(inv.jsonSchema));
  return args;
}

/**
 * Set by the service on every run, the probe included: the person's own CLAUDE.md files (~/.claude/CLAUDE.md,
 * managed ones) and their auto memory (MEMORY.md under ~/.claude/projects) stay out of hub prompts. The
 * pinned CLI reads both from HOME whatever the working directory; these two switches of its binary turn
 * them off (README, "The CLI's environment").
 */
export const CLI_SWITCHES = {
  CLAUDE_CODE_DISABLE_CLAUDE_MDS: '1',
  CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1',
} as const;

/**
 * The variables a run's own settings add (README, "Request members"): the CLI's output limit
 * (CLAUDE_CODE_MAX_OUTPUT_TOKENS, with thinking off so that the limit counts the reply and a small one
 * is valid for every model), and what the CLI passes to the model in its request body
 * (CLAUDE_CODE_EXTRA_BODY): the stop sequences that hold more than blanks, and sampling (with thinking
 * off, which sampling requires). Empty for a run that asks for none of them.
 */
export function runVariables(settings: RunSettings): Record<string, string> {
  const vars: Record<string, string> = {};
  if (settings.maxTokens !== undefined) {
    vars.CLAUDE_CODE_MAX_OUTPUT_TOKENS = String(settings.maxTokens);
    vars.CLAUDE_CODE_DISABLE_THINKING = '1';
  }
  const body: Record<string, unknown> = {};
  // The model refuses a stop sequence of blanks only; the service cuts at those itself.
  const stops = settings.stop?.filter((s) => s.trim() !== '');
  if (stops && stops.length > 0) body.stop_sequences = stops;
  if (settings.temperature !== undefined) body.temperature = settings.temperature;
  if (settings.topP !== undefined) body.top_p = settings.topP;
  if (body.temperature !== undefined || body.top_p !== undefined) vars.CLAUDE_CODE_DISABLE_THINKING = '1';
  if (Object.keys(body).length > 0) vars.CLAUDE_CODE_EXTRA_BODY = JSON.stringify(body);
  return vars;
}

/**
 * The only variables a CLI run gets from the service's environment: what the CLI needs to find its
 * login and run, and nothing else (the README says why each is there). Anything outside never reaches
 * it: an API key or auth token would switch billing away from the signed-in account, model and provider
 * variables would remap the aliases or send the run elsewhere, NODE_OPTIONS could load code into an npm
 * install of the CLI, and the parent's own secrets and MODELPROV_ settings are none of its business.
 */
export const CLI_ENVIRONMENT_NAMES = [
  // who and where: the login lives under HOME (or the config folders below); USER names the macOS keychain entry
  'HOME',
  'USER',
  'LOGNAME',
  'PATH',
  'TMPDIR',
  'TMP',
  'TEMP',
  // locale and time zone
  'LANG',
  'LANGUAGE',
  'TZ',
  // network: proxies (both spellings) and certificates, as on the user's own command line
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'CLAUDE_CODE_CERT_STORE',
  'CLAUDE_CODE_CLIENT_CERT',
  'CLAUDE_CODE_CLIENT_KEY',
  'CLAUDE_CODE_CLIENT_KEY_PASSPHRASE',
  // the CLI's own variables that move its login
  'CLAUDE_CONFIG_DIR',
  'CLAUDE_SECURESTORAGE_CONFIG_DIR',
  'CLAUDE_CODE_OAUTH_TOKEN',
  // Windows
  'USERPROFILE',
  'USERNAME',
  'HOMEDRIVE',
  'HOMEPATH',
  'APPDATA',
  'LOCALAPPDATA',
  'SystemRoot',
  'SystemDrive',
  'windir',
  'ComSpec',
  'PATHEXT',
  'CLAUDE_CODE_GIT_BASH_PATH',
] as const;

/** Whole families: locale categories (LC_ALL, LC_CTYPE, ...) and the XDG base folders (config, data, cache, state, runtime). */
export const CLI_ENVIRONMENT_PREFIXES = ['LC_', 'XDG_'] as const;

const EXACT = new Set<string>(CLI_ENVIRONMENT_NAMES);
const EXACT_UPPER = new Set<string>(CLI_ENVIRONMENT_NAMES.map((n) => n.toUpperCase()));

function allowed(name: string, caseless: boolean): boolean {
  const n = caseless ? name.toUpperCase() : name;
  if ((caseless ? EXACT_UPPER : EXACT).has(n)) return true;
  return CLI_ENVIRONMENT_PREFIXES.some((prefix) => n.startsWith(prefix) && n.length > prefix.length);
}

/** The environment every CLI run starts from: the allowed part of the service's own, and the service's switches. */
export function runEnvironment(
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv {
  return { ...cliEnvironment(env, platform), ...CLI_SWITCHES };
}

/**
 * The part of the service's own environment a CLI run gets (as given to startModelProvider).
 * Windows spells names as it likes (Path, SystemRoot) and reads them without regard to case, so there the
 * comparison ignores case; elsewhere names are exact (https_proxy and HTTPS_PROXY are both listed).
 */
export function cliEnvironment(
  env: NodeJS.ProcessEnv,
  platform: NodeJS.Platform = process.platform,
): NodeJS.ProcessEnv {
  const caseless = platform === 'win32';
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && allowed(k, caseless)) out[k] = v;
  return out;
}
