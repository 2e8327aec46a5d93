/**
 * The CLI's argv for one run. Every run, the startup probe included, gets the same lockdown flags:
 * no tools, no slash commands or skills, exactly the empty MCP configuration, no session transcript.
 * The prompt is never on argv: it goes on stdin (a prompt starting with "-" would be read as a flag,
 * `--tools`/`--mcp-config` are variadic and swallow a following prompt, and argv over 128 KiB fails).
 */
export const EMPTY_MCP_CONFIG = '{"mcpServers":{}}';

export interface Invocation {
  model: string;
  systemPrompt?: string;
  jsonSchema?: Record<string, unknown>;
}

export function cliArgs(inv: Invocation): string[] {
  const args = [
    '-p',
    '--output-format',
    'stream-json',
    '--verbose',
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

/** Variables the CLI must not inherit: an API key would silently switch billing, model overrides would remap the aliases. */
const STRIPPED = /^(ANTHROPIC_API_KEY|ANTHROPIC_AUTH_TOKEN|ANTHROPIC_MODEL|ANTHROPIC_DEFAULT_\w+_MODEL|ANTHROPIC_SMALL_FAST_MODEL|CLAUDE_CODE_SUBAGENT_MODEL|CLAUDECODE|MODELPROV_\w*)$/;

/** The environment a CLI run gets: the service's own (as given to startModelProvider) minus STRIPPED. */
export function cliEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!STRIPPED.test(k) && v !== undefined) out[k] = v;
  return out;
}
