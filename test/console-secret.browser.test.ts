/**
 * The console's launch secret stays with the console (real Chromium, playwright-core, fresh profile):
 * after the person opens the console, another web server on 127.0.0.1 that they open in the same
 * browser receives nothing of it (cookies are not scoped by port, so a cookie would go there), cannot
 * read it from its own page, and what it did receive does not open the console API.
 */
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConsoleServer } from '../main/console/server-parts.ts';
import { startConsoleServer } from '../main/console/server.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { SETTLE_MS, STACK_TIMING } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';
import { launchChromium } from './support/chromium.ts';

vi.setConfig({ testTimeout: 120_000, hookTimeout: SETTLE_MS + 60_000 });

let dir: string;
let supervisor: ServiceSupervisor;
let server: ConsoleServer;
let secret: string;
let context: BrowserContext;
let other: Server;
let otherUrl: string;
/** Everything the other server was sent: request lines and headers. */
const received: { url: string; headers: Record<string, string | string[] | undefined> }[] = [];

beforeAll(async () => {
  dir = tempDir('console-secret');
  supervisor = new ServiceSupervisor({
    dataDir: join(dir, 'data'),
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
  secret = /secret=([A-Za-z0-9_-]+)/.exec(server.url)![1]!;
  other = createServer((req, res) => {
    received.push({ url: req.url ?? '', headers: req.headers });
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        '<!doctype html><title>another local server</title><p>another local server</p><img src="/pixel.png" alt="">',
      );
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', () => resolve()));
  otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  context = await launchChromium(join(dir, 'chromium-profile'));
});

afterAll(async () => {
  await context?.close();
  await new Promise<void>((resolve) => (other ? other.close(() => resolve()) : resolve()));
  await server?.close();
  await supervisor?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the console secret in a browser', () => {
  it('opens the console, whose API answers the page, with the secret gone from the address and no cookie', async () => {
    const page = context.pages()[0] ?? (await context.newPage());
    const answered = page.waitForResponse((r) => r.url().endsWith('/api/call'));
    await page.goto(server.url);
    expect((await answered).status()).toBe(200);
    expect(page.url()).not.toContain(secret);
    expect(page.url()).not.toContain('secret');
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect((await context.cookies()).map((c) => c.name)).toEqual([]);
    // A reload in the same tab keeps working: the secret is in this origin's sessionStorage.
    const again = page.waitForResponse((r) => r.url().endsWith('/api/call'));
    await page.reload();
    expect((await again).status()).toBe(200);
  });

  it('sends nothing of it to another server on 127.0.0.1, which cannot read it either', async () => {
    const page = await context.newPage();
    await page.goto(otherUrl);
    await page.getByText('another local server').waitFor();
    // The same tab as the console, too: navigating away from it.
    const consoleTab = context.pages()[0]!;
    await consoleTab.goto(`${otherUrl}/from-the-console-tab`);
    await consoleTab.getByText('another local server').waitFor();
    expect(received.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(received)).not.toContain(secret);
    const seen = await page.evaluate(() =>
      JSON.stringify({ cookie: document.cookie, session: { ...sessionStorage }, local: { ...localStorage } }),
    );
    expect(seen).not.toContain(secret);
  });

  it('what the other server received does not open the console API', async () => {
    const replayed = await Promise.all(
      received.map(async ({ headers }) => {
        const res = await fetch(`${new URL(server.url).origin}/api/call`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(typeof headers.cookie === 'string' ? { cookie: headers.cookie } : {}),
          },
          body: JSON.stringify({ method: 'hub.get' }),
        });
        await res.text();
        return res.status;
      }),
    );
    expect(new Set(replayed)).toEqual(new Set([401]));
  });
});
