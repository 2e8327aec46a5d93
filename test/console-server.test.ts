/**
 * The headless console server over real HTTP: the per-launch secret (a header, never a cookie), the
 * loopback Host and same-origin checks, the CSP, and the API behind them (the real supervisor running
 * the real identity service).
 */
import { rmSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startConsoleServer } from '../main/console/server.ts';
import type { ConsoleServer } from '../main/console/server-parts.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { SETTLE_MS, STACK_TIMING } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';

let supervisor: ServiceSupervisor;
let server: ConsoleServer;
let base: string;
let secret: string;
let port: number;
let dataDir: string;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** node:http, not fetch, so that Host and Origin can be set to what a hostile page would send. */
function send(
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const apiCall = (body: unknown, headers: Record<string, string>) =>
  send('/api/call', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

// Identity starts as a real process; on a loaded machine that can take a while (a backstop, not a window).
vi.setConfig({ hookTimeout: SETTLE_MS + 30_000 });

beforeAll(async () => {
  dataDir = tempDir('console-server');
  supervisor = new ServiceSupervisor({
    dataDir,
    services: ['identity'],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      IDENTITY_PORT: String(await freePort()),
      IDENTITY_LOG_LEVEL: 'warn',
    },
    ...STACK_TIMING,
  });
  await supervisor.startAll();
  await supervisor.waitUntilSettled(undefined, SETTLE_MS);
  server = await startConsoleServer({ supervisor, host: '127.0.0.1', port: 0 });
  const url = new URL(server.url);
  base = url.origin;
  port = Number(url.port);
  secret = new URLSearchParams(url.hash.slice(1)).get('secret')!;
});

afterAll(async () => {
  await server?.close();
  await supervisor?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('the console URL and its secret', () => {
  it('is a loopback URL carrying a long random secret', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#secret=hubcon_[A-Za-z0-9_-]{43}$/);
  });

  it('the page and its files load without the secret, under a strict CSP, and never set a cookie', async () => {
    const page = await send('/', { headers: { host: `127.0.0.1:${port}` } });
    expect(page.status).toBe(200);
    expect(page.headers['set-cookie']).toBeUndefined();
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).toContain('<script defer src="app.js">');
    expect(page.body).not.toMatch(/https?:\/\//);
    const script = await send('/app.js', { headers: { host: `127.0.0.1:${port}` } });
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toContain('javascript');
    expect(script.headers['set-cookie']).toBeUndefined();
    // The secret is never in the page the server sends: the browser keeps it from the URL's fragment.
    expect(page.body + script.body).not.toContain(secret);
  });

  it('a secret in the query or a cookie opens nothing: only the X-Console-Secret header does', async () => {
    const query = await send(`/api/call?secret=${secret}`, {
      method: 'POST',
      headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json' },
      body: '{"method":"services.list"}',
    });
    expect(query.status).toBe(401);
    expect(JSON.parse(query.body).error.message).toContain('npm run serve');
    for (const cookie of [`hub_console_${port}=${secret}`, `secret=${secret}`]) {
      expect((await apiCall({ method: 'services.list' }, { host: `127.0.0.1:${port}`, cookie })).status).toBe(401);
    }
    const opened = await send(`/?secret=${secret}`, { headers: { host: `127.0.0.1:${port}` } });
    expect(opened.headers['set-cookie']).toBeUndefined();
    // It leaves the address bar at once.
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe('/');
  });
});

describe('the API behind the secret', () => {
  it('answers with the secret as a header', async () => {
    const res = await apiCall({ method: 'services.list' }, { host: `127.0.0.1:${port}`, 'x-console-secret': secret });
    expect(res.status).toBe(200);
    const result = JSON.parse(res.body) as { ok: boolean; data: { name: string; state: string }[] };
    expect(result.ok).toBe(true);
    expect(result.data.map((s) => [s.name, s.state])).toEqual([['identity', 'ready']]);
  });

  it('answers the page\u2019s own origin, which sends the secret as a header', async () => {
    const res = await apiCall(
      { method: 'connections.list' },
      {
        host: `localhost:${port}`,
        origin: `http://localhost:${port}`,
        'sec-fetch-site': 'same-origin',
        'x-console-secret': secret,
      },
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true, data: { connections: [] } });
  });

  it('refuses a call without the secret, or with a wrong one', async () => {
    expect((await apiCall({ method: 'services.list' }, { host: `127.0.0.1:${port}` })).status).toBe(401);
    // One character changed, always to another one (a secret ending in "A" made this "wrong" secret the right one, 1 run in 64).
    const wrongSecret = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    expect(wrongSecret).not.toBe(secret);
    const wrong = await apiCall(
      { method: 'services.list' },
      { host: `127.0.0.1:${port}`, 'x-console-secret': wrongSecret },
    );
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body).error.message).toContain('npm run serve');
  });

  it('refuses a Host that is not loopback (DNS rebinding), even with the secret', async () => {
    const res = await apiCall(
      { method: 'services.list' },
      { host: `attacker.example:${port}`, 'x-console-secret': secret },
    );
    expect(res.status).toBe(421);
    expect(JSON.parse(res.body).error.message).toContain(`http://127.0.0.1:${port}`);
    expect(
      (await apiCall({ method: 'services.list' }, { host: '127.0.0.1:1', 'x-console-secret': secret })).status,
    ).toBe(421);
  });

  it('refuses another page\u2019s Origin and cross-site fetches, even with the secret', async () => {
    const own = { 'x-console-secret': secret };
    const foreign = await apiCall(
      { method: 'services.stopAll' },
      { host: `127.0.0.1:${port}`, origin: 'https://evil.example', ...own },
    );
    expect(foreign.status).toBe(403);
    const otherPort = await apiCall(
      { method: 'services.stopAll' },
      { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port + 1}`, ...own },
    );
    expect(otherPort.status).toBe(403);
    const crossSite = await apiCall(
      { method: 'services.stopAll' },
      { host: `127.0.0.1:${port}`, 'sec-fetch-site': 'cross-site', ...own },
    );
    expect(crossSite.status).toBe(403);
    expect(supervisor.status()[0]!.state).toBe('ready');
  });

  it('takes only JSON of a bounded size (no form posts from other pages)', async () => {
    const headers = { host: `127.0.0.1:${port}`, 'x-console-secret': secret };
    const form = await send('/api/call', {
      method: 'POST',
      headers: { ...headers, 'content-type': 'text/plain' },
      body: '{"method":"services.stopAll"}',
    });
    expect(form.status).toBe(415);
    const big = await send('/api/call', {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ method: 'x', params: 'y'.repeat(70_000) }),
    });
    expect(big.status).toBe(413);
    const broken = await send('/api/call', {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{"method":',
    });
    expect(broken.status).toBe(400);
    const get = await send('/api/call', { headers });
    expect(get.status).toBe(405);
  });

  it('an unknown page is a 404 that points at the console', async () => {
    const res = await send('/admin', { headers: { host: `127.0.0.1:${port}`, 'x-console-secret': secret } });
    expect(res.status).toBe(404);
    expect(res.body).toContain('open / instead');
  });
});

describe('starting the console', () => {
  it('refuses a host that is not loopback', async () => {
    await expect(startConsoleServer({ supervisor, host: '0.0.0.0', port: 0 })).rejects.toThrow('loopback only');
  });

  it('names a busy port', async () => {
    await expect(startConsoleServer({ supervisor, host: '127.0.0.1', port })).rejects.toThrow(`Port ${port}`);
  });

  it('each launch has its own secret, and a closed console frees its port', async () => {
    const other = await startConsoleServer({ supervisor, host: '127.0.0.1', port: 0 });
    const otherUrl = new URL(other.url);
    expect(new URLSearchParams(otherUrl.hash.slice(1)).get('secret')).not.toBe(secret);
    await other.close();
    await expect(fetch(`${otherUrl.origin}/`)).rejects.toThrow();
  });

  it('the base URL is the loopback origin', () => {
    expect(base).toBe(`http://127.0.0.1:${port}`);
  });
});
