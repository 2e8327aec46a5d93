/**
 * The CLI's argv for one run. Every run, the startup probe included, gets the same lockdown flags:
 * no tools, no slash commands or skills, exactly the empty MCP configuration, no session transcript,
 * and every hook the CLI runs reported (so that lockdown can refuse it).
 * The prompt is never on argv: it goes on stdin (a prompt starting with "-" would be read as a flag,
 * `--tools`/`--mcp-config` are variadic and swallow a following prompt, and argv over 128 KiB fails).
 */
export const EMPTY_MCP_CONFIG = '{"mcpServers":{}}';

export interface Invocation {
  model: string;
  systemPrompt?: string;
  jsonSchema?: Record<string, unknown>;
  /** `--include-partial-messages`: the reply's text also as `stream_event` deltas while the CLI writes it. */
  partialMessages?: boolean;
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
    // A structured answer costs the model turns (it calls the StructuredOutput tool), so a schema run gets four.
    '--max-turns',
    inv.jsonSchema ? '4' : '1',
    '--model',
    inv.model,
  ];
  if (inv.systemPrompt !== undefined) args.push('--system-prompt', inv.systemPrompt);
  if (inv.jsonSchema) args.push('--json-schema', JSON.stringify(inv.jsonSchema));
  return args;
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

/**
 * The environment a CLI run gets: the allowed part of the service's own (as given to startModelProvider).
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
