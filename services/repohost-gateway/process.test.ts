import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGitHubDouble, type GitHubDouble } from '../../test/github-double/double.ts';
import { startTestIdentity, tempDir, type TestIdentity } from '../../test/support/identity.ts';
import { freePort, spawnService } from '../../test/support/process.ts';
import { startRepohostGateway } from './service.ts';

let double: GitHubDouble;
let identity: TestIdentity;
const dirs: string[] = [];
const dir = () => {
  const d = tempDir('repohost-proc');
  dirs.push(d);
  return d;
};

beforeAll(async () => {
  double = await startGitHubDouble();
  identity = await startTestIdentity();
});

afterAll(async () => {
  await identity?.close();
  await double?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the gateway as a program', () => {
  it('runs as `npm run service -- repohost-gateway`, answers /healthy and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const proc = await spawnService(
      'repohost-gateway',
      {
        REPOHOST_PORT: String(port),
        REPOHOST_DATA_DIR: dir(),
        ...identity.trust('REPOHOST_'),
        REPOHOST_PLATFORM_URL: double.url,
      },
      port,
    );
    const healthy = await fetch(`${proc.url}/healthy`);
    expect(healthy.status).toBe(200);
    expect(await healthy.json()).toEqual({ status: 'ok' });
    // Up but not ready: without REPOHOST_IDENTITY_SERVICE_TOKEN it cannot resolve credentials, and says so.
    const ready = await fetch(`${proc.url}/ready`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks.service_token).toBe('failing');
    expect(await proc.stop('SIGTERM')).toBe(0);
  });

  it('refuses to start with an unknown REPOHOST_ variable, naming it', async () => {
    const port = await freePort();
    await expect(
      spawnService('repohost-gateway', { REPOHOST_PORT: String(port), REPOHOST_SIGNAL_PREFIXES: 'http://x' }, port),
    ).rejects.toThrow(/REPOHOST_SIGNAL_PREFIXES/);
  });
});

describe('readiness names what is missing', () => {
  it('without a service token: /ready and every /v1 route say to set REPOHOST_IDENTITY_SERVICE_TOKEN', async () => {
    const gateway = await startRepohostGateway({
      REPOHOST_PORT: '0',
      REPOHOST_DATA_DIR: dir(),
      ...identity.trust('REPOHOST_'),
      REPOHOST_PLATFORM_URL: double.url,
      REPOHOST_LOG_LEVEL: 'silent',
    });
    try {
      const ready = await fetch(`${gateway.url}/ready`);
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { detail: string; checks: Record<string, string> };
      expect(body.detail).toContain('REPOHOST_IDENTITY_SERVICE_TOKEN');
      expect(body.checks).toEqual({
        identity_keys: 'ok',
        identity: 'ok',
        platform: 'ok',
        database: 'ok',
        service_token: 'failing',
      });
      const before = double.calls.length;
      const me = await fetch(`${gateway.url}/v1/me`, {
        headers: {
          authorization: `Bearer ${await identity.mint(identity.localCredential, 'repohost-api')}`,
          'x-identity-profile': 'work',
        },
      });
      expect(me.status).toBe(503);
      expect(((await me.json()) as { detail: string }).detail).toContain('REPOHOST_IDENTITY_SERVICE_TOKEN');
      expect(double.calls.length).toBe(before);
    } finally {
      await gateway.close();
    }
  });

  it('without identity\u2019s keys file and socket (no identity has run on that data folder): 503 naming both', async () => {
    const nowhere = dir();
    const gateway = await startRepohostGateway({
      REPOHOST_PORT: '0',
      REPOHOST_DATA_DIR: dir(),
      REPOHOST_IDENTITY_URL: 'http://127.0.0.1:9',
      REPOHOST_IDENTITY_KEYS_FILE: join(nowhere, 'public-keys.json'),
      REPOHOST_IDENTITY_SOCKET: join(nowhere, 'identity.sock'),
      REPOHOST_PLATFORM_URL: double.url,
      REPOHOST_IDENTITY_SERVICE_TOKEN: 'x'.repeat(32),
      REPOHOST_LOG_LEVEL: 'silent',
    });
    try {
      const ready = await fetch(`${gateway.url}/ready`);
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { detail: string; checks: Record<string, string> };
      expect(body.checks.identity_keys).toBe('failing');
      expect(body.checks.identity).toBe('failing');
      expect(body.detail).toContain('REPOHOST_IDENTITY_KEYS_FILE');
      expect(body.detail).toContain('REPOHOST_IDENTITY_SOCKET');
    } finally {
      await gateway.close();
    }
  });
});
