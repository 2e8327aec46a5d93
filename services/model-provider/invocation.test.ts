import { describe, expect, it } from 'vitest';
import {
  CLI_ENVIRONMENT_NAMES,
  CLI_ENVIRONMENT_PREFIXES,
  CLI_SWITCHES,
  cliArgs,
  cliEnvironment,
  EMPTY_MCP_CONFIG,
  runEnvironment,
  runVariables,
  SESSION_NAME,
} from './invocation.ts';

/**
 * How the CLI is invoked (invocation.ts), rule by rule: the lockdown flags of every run, what a request's
 * settings add, and the allow-list of the environment. The real CLI runs with them in real-cli.test.ts.
 */
const LOCKDOWN = [
  '-p',
  '--output-format',
  'stream-json',
  '--verbose',
  '--include-hook-events',
  '--tools',
  '',
  '--disable-slash-commands',
  '--mcp-config',
  '{"mcpServers":{}}',
  '--strict-mcp-config',
  '--no-session-persistence',
  '--name',
  'model-provider',
];

describe('cliArgs', () => {
  it('every run: no tools, no slash commands, exactly the empty MCP configuration, no transcript, hooks reported, one turn', () => {
    expect(EMPTY_MCP_CONFIG).toBe('{"mcpServers":{}}');
    expect(SESSION_NAME).toBe('model-provider');
    expect(cliArgs({ model: 'sonnet' })).toEqual([...LOCKDOWN, '--max-turns', '1', '--model', 'sonnet']);
  });

  it('adds partial messages, effort, a system prompt (an empty one too) and a schema (with four turns) when asked', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(
      cliArgs({ model: 'opus', partialMessages: true, effort: 'high', systemPrompt: '', jsonSchema: schema }),
    ).toEqual([
      ...LOCKDOWN.slice(0, 5),
      '--include-partial-messages',
      ...LOCKDOWN.slice(5),
      '--max-turns',
      '4',
      '--model',
      'opus',
      '--effort',
      'high',
      '--system-prompt',
      '',
      '--json-schema',
      JSON.stringify(schema),
    ]);
    expect(cliArgs({ model: 'opus', partialMessages: false, systemPrompt: '-be brief' })).toEqual([
      ...LOCKDOWN,
      '--max-turns',
      '1',
      '--model',
      'opus',
      '--system-prompt',
      '-be brief',
    ]);
  });
});

describe('runVariables', () => {
  it('none for a run that asks for nothing, or only for blank stop sequences', () => {
    expect(runVariables({})).toEqual({});
    expect(runVariables({ stop: [] })).toEqual({});
    expect(runVariables({ stop: [' ', '\n\t'] })).toEqual({});
  });

  it('an output limit, with thinking off so that the limit counts the reply', () => {
    expect(runVariables({ maxTokens: 0 })).toEqual({
      CLAUDE_CODE_MAX_OUTPUT_TOKENS: '0',
      CLAUDE_CODE_DISABLE_THINKING: '1',
    });
  });

  it('stop sequences that hold more than blanks, in the request body, without turning thinking off', () => {
    expect(runVariables({ stop: ['END', ' ', ' x '] })).toEqual({
      CLAUDE_CODE_EXTRA_BODY: JSON.stringify({ stop_sequences: ['END', ' x '] }),
    });
  });

  it('sampling in the request body, zero included, with thinking off', () => {
    expect(runVariables({ temperature: 0 })).toEqual({
      CLAUDE_CODE_EXTRA_BODY: '{"temperature":0}',
      CLAUDE_CODE_DISABLE_THINKING: '1',
    });
    expect(runVariables({ topP: 0 })).toEqual({
      CLAUDE_CODE_EXTRA_BODY: '{"top_p":0}',
      CLAUDE_CODE_DISABLE_THINKING: '1',
    });
    expect(runVariables({ maxTokens: 100, stop: ['x'], temperature: 0.5, topP: 0.9 })).toEqual({
      CLAUDE_CODE_MAX_OUTPUT_TOKENS: '100',
      CLAUDE_CODE_DISABLE_THINKING: '1',
      CLAUDE_CODE_EXTRA_BODY: '{"stop_sequences":["x"],"temperature":0.5,"top_p":0.9}',
    });
  });
});

/** The allow-list, written out: a name added to or dropped from invocation.ts shows here. */
const NAMES = [
  'HOME',
  'USER',
  'LOGNAME',
  'PATH',
  'TMPDIR',
  'TMP',
  'TEMP',
  'LANG',
  'LANGUAGE',
  'TZ',
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
  'CLAUDE_CONFIG_DIR',
  'CLAUDE_SECURESTORAGE_CONFIG_DIR',
  'CLAUDE_CODE_OAUTH_TOKEN',
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
];

describe('cliEnvironment and runEnvironment', () => {
  it('the list is the one written here, and the families are the locale\u2019s and XDG\u2019s', () => {
    expect([...CLI_ENVIRONMENT_NAMES]).toEqual(NAMES);
    expect([...CLI_ENVIRONMENT_PREFIXES]).toEqual(['LC_', 'XDG_']);
    expect(CLI_SWITCHES).toEqual({ CLAUDE_CODE_DISABLE_CLAUDE_MDS: '1', CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1' });
  });

  it('passes each listed name and each member of a family, exactly spelled, and nothing else', () => {
    const env: NodeJS.ProcessEnv = Object.fromEntries(NAMES.map((n) => [n, `v-${n}`]));
    Object.assign(env, {
      LC_ALL: 'C',
      XDG_CONFIG_HOME: '/x',
      LC_: 'bare family name',
      XDG_: 'bare family name',
      XLC_ALL: 'no',
      ANTHROPIC_API_KEY: 'sk-ant-no',
      NODE_OPTIONS: '--require evil',
      MODELPROV_PORT: '8127',
      home: 'lower case',
      Path: 'Windows spelling',
      lc_all: 'lower case family',
      UNSET: undefined,
    });
    const expected = { ...Object.fromEntries(NAMES.map((n) => [n, `v-${n}`])), LC_ALL: 'C', XDG_CONFIG_HOME: '/x' };
    expect(cliEnvironment(env, 'linux')).toEqual(expected);
    expect(cliEnvironment(env, 'darwin')).toEqual(expected);
  });

  it('passes no variable that is not set', () => {
    expect(Object.keys(cliEnvironment({ HOME: undefined, USER: 'u' }, 'linux'))).toEqual(['USER']);
  });

  it('on Windows, compares names without regard to case', () => {
    const env = {
      Path: 'C:\\bin',
      systemroot: 'C:\\Windows',
      lc_all: 'C',
      Xdg_Data_Home: 'D',
      Api_Key: 'no',
      lc_: 'no',
    };
    expect(cliEnvironment(env, 'win32')).toEqual({
      Path: 'C:\\bin',
      systemroot: 'C:\\Windows',
      lc_all: 'C',
      Xdg_Data_Home: 'D',
    });
  });

  it('a run starts from the allowed part and the service\u2019s switches, which no inherited value overrides', () => {
    const env = { HOME: '/home/ada', CLAUDE_CODE_DISABLE_CLAUDE_MDS: '0', SECRET: 'no' };
    expect(runEnvironment(env, 'linux')).toEqual({
      HOME: '/home/ada',
      CLAUDE_CODE_DISABLE_CLAUDE_MDS: '1',
      CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1',
    });
    // The platform defaults to this one's.
    expect(runEnvironment({ Home: '/h', HOME: '/H' })).toEqual({
      ...(process.platform === 'win32' ? { Home: '/h' } : {}),
      HOME: '/H',
      ...CLI_SWITCHES,
    });
    expect(cliEnvironment({ Home: '/h' })).toEqual(process.platform === 'win32' ? { Home: '/h' } : {});
  });
});
