import { chmodSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { CrashHistory, backoffDelay, DEFAULT_RESTART_POLICY } from './backoff.ts';
import { LogFiles, LogRing, lineSplitter } from './log-buffer.ts';
import { GATEWAY_TOKEN_FILE, gatewayServiceToken, identityPlaces, placement, serviceEnv } from './wiring.ts';

const wiring = {
  dataDir: '/data',
  identityUrl: 'http://127.0.0.1:8001',
  identityKeysFile: '/data/identity/public-keys.json',
  identitySocket: '/data/identity/identity.sock',
  gatewayToken: 'g'.repeat(43),
};

describe('each service\u2019s environment', () => {
  it('passes only the service\u2019s own prefixed variables, and the user\u2019s values win', () => {
    const parent = {
      PATH: '/bin',
      HOME: '/home/u',
      PERSONA_PORT: '9004',
      PERSONA_LOG_LEVEL: 'debug',
      REPOHOST_PLATFORM_URL: 'http://x',
      MODELPROV_CLI_BINARY: '/c',
      IDENTITY_PORT: '9001',
    };
    const env = serviceEnv('persona-store', parent, wiring);
    expect(env).toEqual({
      PATH: '/bin',
      HOME: '/home/u',
      PERSONA_PORT: '9004',
      PERSONA_LOG_LEVEL: 'debug',
      PERSONA_HOST: '127.0.0.1',
      PERSONA_DATA_DIR: '/data/persona-store',
      PERSONA_IDENTITY_URL: 'http://127.0.0.1:8001',
      PERSONA_IDENTITY_KEYS_FILE: '/data/identity/public-keys.json',
      PERSONA_IDENTITY_SOCKET: '/data/identity/identity.sock',
    });
  });

  it('hands the persona store and the gateway identity\u2019s keys file and socket, unless the user points them at another identity', () => {
    for (const [name, prefix] of [
      ['persona-store', 'PERSONA_'],
      ['repohost-gateway', 'REPOHOST_'],
    ] as const) {
      expect(serviceEnv(name, {}, wiring)).toMatchObject({
        [`${prefix}IDENTITY_KEYS_FILE`]: wiring.identityKeysFile,
        [`${prefix}IDENTITY_SOCKET`]: wiring.identitySocket,
      });
      // An identity of the user's own: its keys and socket are the user's to name (docs/configuration.md).
      const elsewhere = serviceEnv(name, { [`${prefix}IDENTITY_URL`]: 'https://id.example.com' }, wiring);
      expect(elsewhere[`${prefix}IDENTITY_KEYS_FILE`]).toBeUndefined();
      expect(elsewhere[`${prefix}IDENTITY_SOCKET`]).toBeUndefined();
      const pinned = serviceEnv(name, { [`${prefix}IDENTITY_KEY_THUMBPRINTS`]: 'a'.repeat(43) }, wiring);
      expect(pinned[`${prefix}IDENTITY_KEYS_FILE`]).toBeUndefined();
      expect(pinned[`${prefix}IDENTITY_SOCKET`]).toBe(wiring.identitySocket);
      const own = serviceEnv(name, { [`${prefix}IDENTITY_KEYS_FILE`]: '/mine.json' }, wiring);
      expect(own[`${prefix}IDENTITY_KEYS_FILE`]).toBe('/mine.json');
    }
    expect(identityPlaces('/d', { IDENTITY_DATA_DIR: '/elsewhere' })).toEqual({
      keysFile: '/elsewhere/public-keys.json',
      socket: '/elsewhere/identity.sock',
    });
    expect(serviceEnv('model-provider', {}, wiring).MODELPROV_IDENTITY_SOCKET).toBeUndefined();
  });

  it('passes of the person\u2019s shell only what the system needs, never its other variables', () => {
    const shell = {
      PATH: '/usr/bin',
      HOME: '/home/ada',
      USER: 'ada',
      LOGNAME: 'ada',
      TMPDIR: '/tmp/ada',
      LANG: 'en_GB.UTF-8',
      LC_TIME: 'de_DE.UTF-8',
      TZ: 'Europe/Berlin',
      XDG_CONFIG_HOME: '/home/ada/.config',
      HTTPS_PROXY: 'http://proxy:3128',
      no_proxy: 'localhost',
      NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
      // What is none of a service's business.
      GITHUB_TOKEN: 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB',
      AWS_SECRET_ACCESS_KEY: 'x'.repeat(40),
      NODE_OPTIONS: '--require /tmp/evil.cjs',
      PGPASSWORD: 'secret',
      SSH_AUTH_SOCK: '/tmp/ssh-agent',
      CLAUDE_CONFIG_DIR: '/home/ada/.claude-work',
      ANTHROPIC_API_KEY: 'sk-ant-x',
      LC_: 'not a locale category',
      XDG_: 'nor an XDG folder',
    };
    const system = {
      PATH: '/usr/bin',
      HOME: '/home/ada',
      USER: 'ada',
      LOGNAME: 'ada',
      TMPDIR: '/tmp/ada',
      LANG: 'en_GB.UTF-8',
      LC_TIME: 'de_DE.UTF-8',
      TZ: 'Europe/Berlin',
      XDG_CONFIG_HOME: '/home/ada/.config',
      HTTPS_PROXY: 'http://proxy:3128',
      no_proxy: 'localhost',
      NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
    };
    const wired = (env: Record<string, string>) =>
      Object.fromEntries(Object.entries(env).filter(([k]) => !/^(IDENTITY|PERSONA|REPOHOST|MODELPROV)_/.test(k)));
    for (const name of ['identity', 'persona-store', 'repohost-gateway'] as const)
      expect(wired(serviceEnv(name, shell, wiring, 'linux'))).toEqual(system);
    // The provider's CLI finds its login where the person moved it; an API key would switch its billing and stays out.
    expect(wired(serviceEnv('model-provider', shell, wiring, 'linux'))).toEqual({
      ...system,
      CLAUDE_CONFIG_DIR: '/home/ada/.claude-work',
    });
  });

  it('on Windows, compares names as Windows does, without regard to case', () => {
    const shell = {
      Path: 'C:\\Windows\\system32',
      SYSTEMROOT: 'C:\\Windows',
      windir: 'C:\\Windows',
      APPDATA: 'C:\\Users\\ada\\AppData\\Roaming',
      LocalAppData: 'C:\\Users\\ada\\AppData\\Local',
      USERPROFILE: 'C:\\Users\\ada',
      ComSpec: 'C:\\Windows\\system32\\cmd.exe',
      GH_TOKEN: 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB',
    };
    const env = serviceEnv('identity', shell, wiring, 'win32');
    expect(Object.keys(env).filter((k) => !k.startsWith('IDENTITY_'))).toEqual([
      'Path',
      'SYSTEMROOT',
      'windir',
      'APPDATA',
      'LocalAppData',
      'USERPROFILE',
      'ComSpec',
    ]);
  });

  it('makes identity the persona store\u2019s settings service, unless the user named another one or another identity', () => {
    const withToken = { ...wiring, settingsToken: 's'.repeat(43) };
    expect(serviceEnv('identity', {}, withToken).IDENTITY_SERVICE_TOKENS).toBe(
      `repohost-api=${wiring.gatewayToken},persona=${withToken.settingsToken}`,
    );
    expect(serviceEnv('persona-store', {}, withToken)).toMatchObject({
      PERSONA_SETTINGS_API_BASE_URL: wiring.identityUrl,
      PERSONA_SETTINGS_API_TOKEN: withToken.settingsToken,
      PERSONA_IDENTITY_URL: wiring.identityUrl,
    });
    for (const own of [
      { PERSONA_SETTINGS_API_BASE_URL: 'http://127.0.0.1:9999', PERSONA_SETTINGS_API_TOKEN: 'theirs' },
      { PERSONA_IDENTITY_URL: 'http://127.0.0.1:9001' },
    ]) {
      const env = serviceEnv('persona-store', own, withToken);
      expect(env.PERSONA_SETTINGS_API_TOKEN).toBe(own.PERSONA_SETTINGS_API_TOKEN);
      expect(env.PERSONA_SETTINGS_API_BASE_URL).toBe(own.PERSONA_SETTINGS_API_BASE_URL);
    }
  });

  it('wires the gateway\u2019s service token into identity and the gateway', () => {
    expect(serviceEnv('identity', {}, wiring).IDENTITY_SERVICE_TOKENS).toBe(`repohost-api=${wiring.gatewayToken}`);
    expect(
      serviceEnv('identity', { IDENTITY_SERVICE_TOKENS: 'other=abcdefghijklmnopq' }, wiring).IDENTITY_SERVICE_TOKENS,
    ).toBe(`other=abcdefghijklmnopq,repohost-api=${wiring.gatewayToken}`);
    // A user who registered the gateway themselves keeps their own token.
    expect(
      serviceEnv('identity', { IDENTITY_SERVICE_TOKENS: 'repohost-api=mine-mine-mine-mine' }, wiring)
        .IDENTITY_SERVICE_TOKENS,
    ).toBe('repohost-api=mine-mine-mine-mine');
    const gateway = serviceEnv('repohost-gateway', {}, wiring);
    expect(gateway).toMatchObject({
      REPOHOST_IDENTITY_URL: wiring.identityUrl,
      REPOHOST_IDENTITY_SERVICE_TOKEN: wiring.gatewayToken,
      REPOHOST_PORT: '8011',
    });
    expect(gateway.REPOHOST_SIGNAL_REFUSED_PORTS).toBe('8001,8004,8011,8127');
    // Moved services are refused where they are; the user's own ports stay refused too.
    expect(
      serviceEnv('repohost-gateway', { PERSONA_PORT: '9004', REPOHOST_SIGNAL_REFUSED_PORTS: '5432, 8001' }, wiring)
        .REPOHOST_SIGNAL_REFUSED_PORTS,
    ).toBe('5432,8001,9004,8011,8127');
    // The headless console's port is one of the app's own too.
    expect(serviceEnv('repohost-gateway', {}, { ...wiring, appPorts: [41234] }).REPOHOST_SIGNAL_REFUSED_PORTS).toBe(
      '8001,8004,8011,8127,41234',
    );
    expect(serviceEnv('model-provider', {}, wiring)).toEqual({
      MODELPROV_HOST: '127.0.0.1',
      MODELPROV_PORT: '8127',
      MODELPROV_DATA_DIR: '/data/model-provider',
    });
  });

  it('places each service on its default port and folder unless told otherwise', () => {
    expect(placement('identity', '/d', {})).toEqual({ host: '127.0.0.1', port: 8001, dataDir: '/d/identity' });
    expect(placement('identity', '/d', { IDENTITY_PORT: '9100', IDENTITY_DATA_DIR: '/elsewhere' })).toEqual({
      host: '127.0.0.1',
      port: 9100,
      dataDir: '/elsewhere',
    });
    // A bad port is left for the service to refuse by name; the supervisor shows the default meanwhile.
    expect(placement('identity', '/d', { IDENTITY_PORT: 'eighty' }).port).toBe(8001);
  });

  it('makes the gateway token once, owner-only, and repairs loose permissions', () => {
    const dir = tempDir('token-');
    const first = gatewayServiceToken(dir);
    expect(first).toMatch(/^hubsvc_[A-Za-z0-9_-]{43}$/);
    expect(gatewayServiceToken(dir)).toBe(first);
    const file = join(dir, GATEWAY_TOKEN_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    chmodSync(file, 0o644);
    expect(gatewayServiceToken(dir)).toBe(first);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    writeFileSync(file, 'short\n');
    expect(() => gatewayServiceToken(dir)).toThrow(/does not hold a service token; delete it/);
    expect(readFileSync(file, 'utf8')).toBe('short\n');
  });
});

describe('restart policy', () => {
  it('doubles the delay per crash up to the cap', () => {
    const policy = { ...DEFAULT_RESTART_POLICY, baseDelayMs: 500, maxDelayMs: 30_000 };
    expect([1, 2, 3, 4, 5, 6, 7, 8, 60].map((n) => backoffDelay(n, policy))).toEqual([
      500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000,
    ]);
  });

  it('counts crashes inside the window only, and gives up at the limit', () => {
    const history = new CrashHistory({ ...DEFAULT_RESTART_POLICY, maxCrashes: 3, windowMs: 1000 });
    expect(history.record(0)).toBe(1);
    expect(history.record(500)).toBe(2);
    expect(history.record(1400)).toBe(2); // the crash at 0 fell out of the window
    expect(history.tooMany(history.record(1450))).toBe(true);
    history.clear();
    expect(history.record(1500)).toBe(1);
  });
});

describe('log ring buffer', () => {
  const line = (text: string) => ({ service: 'identity' as const, time: 't', stream: 'stdout' as const, text });

  it('keeps the newest lines, filters case-insensitively and limits', () => {
    const ring = new LogRing(3);
    for (const t of ['one', 'Two', 'three', 'four']) ring.push(line(t));
    expect(ring.tail().map((l) => l.text)).toEqual(['Two', 'three', 'four']);
    expect(ring.tail({ filter: 'T' }).map((l) => l.text)).toEqual(['Two', 'three']);
    expect(ring.tail({ limit: 1 }).map((l) => l.text)).toEqual(['four']);
    expect(ring.tail({ limit: 0 })).toEqual([]);
  });

  it('splits chunks into lines, holding a partial line until it ends', () => {
    const lines: string[] = [];
    const splitter = lineSplitter((l) => lines.push(l));
    splitter.push('a\nb');
    splitter.push('c\r\n\nd');
    expect(lines).toEqual(['a', 'bc']);
    splitter.flush();
    expect(lines).toEqual(['a', 'bc', 'd']);
  });
});

describe('the log files', () => {
  it('rotate past their size, keep only the newest files, and are readable by their owner only', async () => {
    const dir = join(tempDir('log-files'), 'logs');
    const files = new LogFiles(dir, { size: '1K', maxFiles: 2 });
    // Written all at once, as a burst of service output arrives: rotation keeps up without pauses between writes.
    for (let i = 0; i < 200; i++) {
      files.write({
        service: 'identity',
        time: new Date().toISOString(),
        stream: 'stdout',
        text: `line ${i} ${'x'.repeat(60)}`,
      });
    }
    files.write({ service: 'persona-store', time: new Date().toISOString(), stream: 'stderr', text: 'one line' });
    await files.close();
    const names = readdirSync(dir).sort();
    expect(names).toContain('identity.log');
    expect(names).toContain('persona-store.log');
    const rotated = names.filter((n) => n !== 'identity.log' && n.endsWith('identity.log'));
    // 200 lines of about 100 bytes each fill many 1 KB files; only the two newest rotated ones stay.
    expect(rotated.length).toBeGreaterThan(0);
    expect(rotated.length).toBeLessThanOrEqual(2);
    const current = readFileSync(join(dir, 'identity.log'), 'utf8');
    expect(current).toContain('line 199 ');
    expect(current.length).toBeLessThanOrEqual(1024 + 120);
    expect(names.map((n) => readFileSync(join(dir, n), 'utf8')).join('')).not.toContain('line 0 ');
    // The folder is the wall (no one else may enter it); the log files are owner-only as well.
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const n of names.filter((n) => n.endsWith('.log'))) expect(statSync(join(dir, n)).mode & 0o777, n).toBe(0o600);
    // Beside them, rotating-file-stream's history of rotated files: their names, nothing logged.
    for (const n of names.filter((n) => !n.endsWith('.log'))) {
      expect(n).toBe('identity.log.txt');
      for (const entry of readFileSync(join(dir, n), 'utf8').split('\n').filter(Boolean))
        expect(rotated.map((r) => join(dir, r))).toContain(entry);
    }
    expect(readFileSync(join(dir, 'persona-store.log'), 'utf8')).toMatch(/^\S+ stderr one line\n$/);
    rmSync(dirname(dir), { recursive: true, force: true });
  });
});
