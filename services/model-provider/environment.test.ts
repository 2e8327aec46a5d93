import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_ENVIRONMENT_NAMES, CLI_SWITCHES, cliEnvironment } from './invocation.ts';
import { startProvider, type StartedProvider } from './test-support/provider.ts';

/**
 * The CLI gets an allow-list of the service's environment: what it needs to find its login and run
 * (home, user, paths, temp, locale, proxy and certificate settings, its own config folders), nothing else.
 */
const scratch = mkdtempSync(join(tmpdir(), 'modelprov-env-'));

/** One of each kind the list lets through, with harmless values. */
const ALLOWED: Record<string, string> = {
  HOME: scratch,
  USER: 'someone',
  LOGNAME: 'someone',
  TMPDIR: scratch,
  TMP: scratch,
  TEMP: scratch,
  LANG: 'C.UTF-8',
  LANGUAGE: 'en',
  LC_ALL: 'C.UTF-8',
  LC_MESSAGES: 'C',
  TZ: 'UTC',
  XDG_CONFIG_HOME: join(scratch, 'config'),
  XDG_DATA_HOME: join(scratch, 'data'),
  XDG_RUNTIME_DIR: scratch,
  HTTP_PROXY: 'http://127.0.0.1:9',
  HTTPS_PROXY: 'http://127.0.0.1:9',
  NO_PROXY: 'localhost',
  ALL_PROXY: 'http://127.0.0.1:9',
  http_proxy: 'http://127.0.0.1:9',
  https_proxy: 'http://127.0.0.1:9',
  no_proxy: 'localhost',
  SSL_CERT_FILE: join(scratch, 'ca.pem'),
  SSL_CERT_DIR: scratch,
  CLAUDE_CONFIG_DIR: join(scratch, 'claude'),
  CLAUDE_SECURESTORAGE_CONFIG_DIR: join(scratch, 'claude'),
  CLAUDE_CODE_OAUTH_TOKEN: 'not-a-real-token',
  CLAUDE_CODE_CLIENT_CERT: join(scratch, 'client.pem'),
  USERPROFILE: scratch,
  APPDATA: scratch,
};

/** What no CLI run may get: secrets of the parent, anything that switches billing or provider, model remaps, code injection, the service's own settings. */
const REFUSED: Record<string, string> = {
  SECRET_FROM_PARENT: 'do-not-pass',
  AWS_SECRET_ACCESS_KEY: 'do-not-pass',
  AWS_ACCESS_KEY_ID: 'do-not-pass',
  GITHUB_TOKEN: 'do-not-pass',
  REPOHOST_SERVICE_TOKEN: 'do-not-pass',
  ANTHROPIC_API_KEY: 'sk-ant-api03-test-placeholder',
  ANTHROPIC_AUTH_TOKEN: 'do-not-pass',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
  ANTHROPIC_MODEL: 'claude-not-an-alias',
  ANTHROPIC_DEFAULT_SONNET_MODEL: 'claude-not-an-alias',
  ANTHROPIC_SMALL_FAST_MODEL: 'claude-not-an-alias',
  ANTHROPIC_CONFIG_DIR: scratch,
  CLAUDE_CODE_SUBAGENT_MODEL: 'claude-not-an-alias',
  CLAUDE_CODE_USE_BEDROCK: '1',
  CLAUDE_CODE_USE_VERTEX: '1',
  CLAUDE_CODE_ENABLE_TELEMETRY: '1',
  CLAUDECODE: '1',
  NODE_OPTIONS: '--no-warnings',
  SHELL: '/bin/sh',
  TERM: 'xterm-256color',
  MODELPROV_TIMEOUT_SECONDS: '60',
};

let p: StartedProvider;

beforeAll(async () => {
  p = await startProvider({ base: { PATH: process.env.PATH ?? '', ...ALLOWED }, env: REFUSED });
  await p.service.lockdownProbed();
});
afterAll(async () => {
  await p?.close();
});

describe('the environment of every CLI run', () => {
  it('holds each allowed variable the service has and nothing else: not a secret, key, remap or setting from the parent', async () => {
    const c = await p.client.chat.completions.create({
      model: 'sonnet',
      messages: [{ role: 'user', content: 'environment allow-list' }],
    });
    expect(c.choices[0]!.message.content).toMatch(/^Stand-in reply/);
    const runs = [...p.probeRuns(), ...p.runs().filter((r) => r.stdin === 'environment allow-list')];
    expect(runs).toHaveLength(2);
    for (const run of runs) {
      // The stand-in is a shell script that execs node; the shell itself adds PWD (and may add SHLVL, _).
      const received = run.envKeys.filter(
        (k) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(k) && !k.startsWith('STANDIN_'),
      );
      expect(received.sort()).toEqual(['PATH', ...Object.keys(ALLOWED), ...Object.keys(CLI_SWITCHES)].sort());
      expect(received.filter((k) => k in REFUSED || k.startsWith('MODELPROV_'))).toEqual([]);
      // The service's own: the person's CLAUDE.md and auto memory stay out of every run, the probe's too.
      expect(run.cliVars).toEqual({ CLAUDE_CODE_DISABLE_CLAUDE_MDS: '1', CLAUDE_CODE_DISABLE_AUTO_MEMORY: '1' });
    }
  });

  it('matches names exactly on POSIX and without regard to case on Windows, where Path and SystemRoot are spelt as they come', () => {
    const env = {
      Path: 'C:\\Windows',
      SystemRoot: 'C:\\Windows',
      COMSPEC: 'cmd.exe',
      appdata: 'C:\\Users\\a\\AppData\\Roaming',
      Secret: 'x',
      lc_all: 'C',
    };
    expect(Object.keys(cliEnvironment(env, 'win32')).sort()).toEqual(
      ['COMSPEC', 'Path', 'SystemRoot', 'appdata', 'lc_all'].sort(),
    );
    expect(Object.keys(cliEnvironment(env, 'linux')).sort()).toEqual(['SystemRoot']);
    expect(
      Object.keys(
        cliEnvironment(
          { https_proxy: 'x', Https_Proxy: 'y', LC_CTYPE: 'C', XDG_CACHE_HOME: '/c', XDGX: 'no' },
          'linux',
        ),
      ).sort(),
    ).toEqual(['LC_CTYPE', 'XDG_CACHE_HOME', 'https_proxy'].sort());
  });

  it('lists every allowed name in the README beside why', async () => {
    const { readFileSync } = await import('node:fs');
    const readme = readFileSync(join(import.meta.dirname, 'README.md'), 'utf8');
    for (const name of [...CLI_ENVIRONMENT_NAMES, ...Object.keys(CLI_SWITCHES)])
      expect(readme).toContain(`\`${name}\``);
  });
});
