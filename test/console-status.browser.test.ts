/**
 * Status at a glance tells the truth, in Chromium against the REAL `npm run serve` (main/headless.ts)
 * and the real services: the charts draw a hub's requests and count the app's own apart (this
 * console's calls, the services' calls to each other); every error drawn in red is named under "Needs
 * attention", over the span the charts show; a stopped service changes the headline, the tray's icon
 * and its tooltip; and after the app quits, no chart is left on the page.
 *
 * The history the console keeps on disk is where older minutes come from (a real run would have
 * written them): before the start, it holds three failed requests at the gateway 150 minutes ago,
 * outside the last hour and inside the last 6 hours.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PROVIDER_SOCKET } from '../common/services.ts';
import type { ServiceStatus } from '../common/contract.ts';
import { trayTooltip } from '../main/electron/tray-menu.ts';
import { overSocket } from '../services/kit/identity-channel.ts';
import { startGitHubDouble, type GitHubDouble } from './github-double/double.ts';
import { launchChromium } from './support/chromium.ts';
import { SETTLE_MS, stackEnv } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { ROOT } from './support/process.ts';

// Every service, headless and Chromium on a loaded 2-core machine: the timeouts are backstops, never windows.
vi.setConfig({ testTimeout: 150_000, hookTimeout: SETTLE_MS + 120_000 });
const PAGE_WAIT = { timeout: 120_000 };
const ARTIFACTS = join(ROOT, 'test-artifacts', 'console');

/** The minute charts and how "Needs attention" names each service. */
const MINUTE_CHARTS = [
  ['persona-minutes', 'persona store'],
  ['provider-minutes', 'chat-model provider'],
  ['identity-minutes', 'identity service'],
  ['gateway-minutes', 'repository-hosting gateway'],
] as const;

let dir: string;
let dataDir: string;
let platform: GitHubDouble;
let env: Record<string, string>;
let headless: ChildProcess;
let output = '';
let consoleUrl: string;
let context: BrowserContext;
let page: Page;

function waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`headless did not print ${pattern} within ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const check = () => {
      const match = output.match(pattern);
      if (match) {
        clearTimeout(timer);
        headless.stdout!.off('data', check);
        resolve(match);
      }
    };
    headless.stdout!.on('data', check);
    headless.once('exit', (code) =>
      reject(new Error(`headless exited (${code}) before printing ${pattern}:\n${output}`)),
    );
    check();
  });
}

/** The console API as a script calls it: the launch secret as a header. */
async function consoleCall<T>(method: string, params?: unknown): Promise<T> {
  const at = new URL(consoleUrl);
  const res = await fetch(`${at.origin}/api/call`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-console-secret': new URLSearchParams(at.hash.slice(1)).get('secret')!,
    },
    body: JSON.stringify(params === undefined ? { method } : { method, params }),
  });
  const result = (await res.json()) as { ok: boolean; data?: T; error?: { message: string } };
  if (!result.ok) throw new Error(`${method} failed: ${result.error?.message}`);
  return result.data as T;
}

const port = (prefix: string) => env[`${prefix}PORT`];

const tab = (name: string) =>
  page.getByRole('navigation', { name: 'Console sections' }).getByRole('button', { name, exact: true });

/** What a chart draws of one series: the sum of its bars' values, read from each bar's title. */
async function drawn(chart: string, kind: 'requests' | 'errors'): Promise<number> {
  const titles = await page.locator(`figure.chart[data-chart="${chart}"] rect.bar.${kind} title`).allTextContents();
  return titles.reduce((n, t) => n + Number(/: (\d+) \(/.exec(t)?.[1]), 0);
}

/**
 * Where the charts and "Needs attention" disagree: a chart that draws red the list does not name (or
 * names another number, or another span), or a service named whose chart draws none. Empty when true.
 */
async function disagreements(span: string): Promise<string[]> {
  const named = await page.locator('ul.attention li').allInnerTexts();
  const out: string[] = [];
  for (const [chart, label] of MINUTE_CHARTS) {
    const red = await drawn(chart, 'errors');
    const line = named.find((t) => t.startsWith(`The ${label} failed`));
    const expected = `The ${label} failed ${red === 1 ? 'one request' : `${red} requests`} of hubs in the ${span} (the red in its chart)`;
    if (red === 0 && line) out.push(`${chart} draws no red, yet: ${line}`);
    if (red > 0 && !line?.startsWith(expected))
      out.push(`${chart} draws ${red} in red, named as: ${line ?? 'nothing'}`);
  }
  return out;
}

/** A hub's completion the provider answers 502: its CLI crashes (the stand-in's marker). */
async function failingCompletion(word: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port('MODELPROV_')}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: `${word} [stand-in:crash]` }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  dir = tempDir('console-status');
  platform = await startGitHubDouble();
  env = await stackEnv(dir, platform.url);
  dataDir = join(dir, 'data');
  // The history of an earlier run: three of a hub's requests failed at the gateway 150 minutes ago.
  const minute = 60_000;
  const earlier = new Date(Math.floor(Date.now() / minute) * minute - 150 * minute).toISOString();
  mkdirSync(join(dataDir, 'console'), { recursive: true, mode: 0o700 });
  writeFileSync(
    join(dataDir, 'console', 'activity.json'),
    JSON.stringify({
      version: 2,
      services: {
        'repohost-gateway': {
          totals: [],
          minutes: [{ at: earlier, requests: 3, refused: 0, errors: 3, appRequests: 0, appRefused: 0, appErrors: 0 }],
          hours: [],
        },
      },
    }),
    { mode: 0o600 },
  );
  headless = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'main', 'headless.ts'), '--data-dir', dataDir], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  headless.stdout!.setEncoding('utf8');
  headless.stderr!.setEncoding('utf8');
  headless.stdout!.on('data', (d: string) => (output += d));
  headless.stderr!.on('data', (d: string) => (output += d));
  const [, printed] = await waitForOutput(/Console: (http:\/\/127\.0\.0\.1:\d+\/#secret=\S+)/, SETTLE_MS);
  for (const name of ['identity', 'persona-store', 'repohost-gateway', 'model-provider'])
    await waitForOutput(new RegExp(`^\\s+${name}\\s+ready\\s`, 'm'), SETTLE_MS);
  consoleUrl = printed!;
  context = await launchChromium(join(dir, 'chromium-profile'), { width: 1280, height: 900 });
  context.setDefaultTimeout(PAGE_WAIT.timeout);
  page = context.pages()[0] ?? (await context.newPage());
});

afterAll(async () => {
  await context?.close();
  if (headless && headless.exitCode === null) {
    const exited = new Promise((r) => headless.once('exit', r));
    headless.kill('SIGINT');
    await exited;
  }
  await platform?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('status at a glance', () => {
  it('charts a hub\u2019s requests, and counts the app\u2019s own apart (this console, the services\u2019 calls to each other)', async () => {
    // A hub: its own credential from the console, a token minted at identity's port, four calls to the
    // persona store (one without a token, refused: nothing proves who sent it, so it is not the app's).
    const hub = await consoleCall<{ credential: string }>('hub.createCredential', { label: 'status hub' });
    const minted = await fetch(`http://127.0.0.1:${port('IDENTITY_')}/v1/auth/service-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hub.credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ audience: 'persona' }),
    });
    expect(minted.status).toBe(200);
    const { token } = (await minted.json()) as { token: string };
    const personas = `http://127.0.0.1:${port('PERSONA_')}/v1/personas`;
    for (let i = 0; i < 3; i++)
      expect((await fetch(personas, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await fetch(personas)).status).toBe(401);

    // The person uses the console: every page reads the services, with the person's own credential.
    await page.goto(consoleUrl);
    for (const name of ['Personas', 'Provider', 'Connect a hub', 'Services']) {
      await tab(name).click();
      await page.locator('main .state.loading').first().waitFor({ state: 'detached' });
    }
    await tab('Overview').click();
    const summary = (chart: string) => page.locator(`figure.chart[data-chart="${chart}"] .chart-summary`);
    await summary('persona-minutes').getByText('requests from hubs', { exact: false }).waitFor();
    expect(await summary('persona-minutes').innerText()).toMatch(
      /^4 requests from hubs in the last hour \(1 refused\), 0 errors; busiest minute \d\. Not drawn: \d+ calls of the app\u2019s own \(this console, the services\u2019 calls to each other\)\.$/,
    );
    expect(await drawn('persona-minutes', 'requests')).toBe(4);
    // At identity, the hub's one mint; the console's calls (its credential, its tokens) and the other
    // services' (revocation checks, settings) are the app's, left out of the bars.
    expect(await summary('identity-minutes').innerText()).toMatch(
      /^1 request from hubs in the last hour \(0 refused\), 0 errors; busiest minute 1\. Not drawn: \d+ calls of the app\u2019s own/,
    );
    expect(await drawn('identity-minutes', 'requests')).toBe(1);
    // The provider page read the provider (on its socket): the app's; no hub called it.
    expect(await summary('provider-minutes').innerText()).toMatch(
      /^0 requests from hubs in the last hour \(0 refused\), 0 errors; busiest minute 0\. Not drawn: \d+ calls? of the app\u2019s own/,
    );
    expect(await drawn('provider-minutes', 'requests')).toBe(0);
    expect(await disagreements('last hour')).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'status-hub-traffic.png'), fullPage: true });
  });

  it('draws errors only where "Needs attention" names them, over the span the charts show', async () => {
    expect(await failingCompletion('Crash now.')).toBe(502);
    // An app's own call that fails (on the provider's socket, as the console calls it) is neither drawn nor named.
    const own = await overSocket(
      `http://127.0.0.1:${port('MODELPROV_')}`,
      join(dataDir, 'model-provider', PROVIDER_SOCKET),
    ).call({
      method: 'POST',
      path: '/v1/chat/completions',
      body: { model: 'sonnet', messages: [{ role: 'user', content: 'Crash here too. [stand-in:crash]' }] },
    });
    expect(own.status).toBe(502);
    // Read again: the overview, then its charts.
    await tab('Services').click();
    await tab('Overview').click();
    await expect.poll(() => drawn('provider-minutes', 'errors'), PAGE_WAIT).toBe(1);
    await expect.poll(() => disagreements('last hour'), PAGE_WAIT).toEqual([]);
    expect(await page.locator('ul.attention li').allInnerTexts()).toContainEqual(
      expect.stringMatching(
        /^The chat-model provider failed one request of hubs in the last hour \(the red in its chart\); its log says why\./,
      ),
    );
    expect(await page.locator('figure.chart[data-chart="provider-minutes"] .chart-summary').innerText()).toMatch(
      /^1 request from hubs in the last hour \(0 refused\), 1 error; .* of the app\u2019s own \(.*\), 1 failed\.$/,
    );
    // The gateway's failures of 150 minutes ago are outside the last hour: not drawn, not named.
    expect(await drawn('gateway-minutes', 'errors')).toBe(0);

    await page.locator('select[name="activity-span"]').selectOption('360');
    await expect.poll(() => drawn('gateway-minutes', 'errors'), PAGE_WAIT).toBe(3);
    await expect.poll(() => disagreements('last 6 hours'), PAGE_WAIT).toEqual([]);
    expect(await page.locator('ul.attention li').allInnerTexts()).toContainEqual(
      expect.stringMatching(
        /^The repository-hosting gateway failed 3 requests of hubs in the last 6 hours \(the red in its chart\)/,
      ),
    );
    await page.screenshot({ path: join(ARTIFACTS, 'status-errors-6-hours.png'), fullPage: true });

    await page.locator('select[name="activity-span"]').selectOption('60');
    await expect.poll(() => drawn('gateway-minutes', 'errors'), PAGE_WAIT).toBe(0);
    await expect.poll(() => disagreements('last hour'), PAGE_WAIT).toEqual([]);
  });

  it('a service stopped from the page changes the headline, the tray\u2019s icon and its tooltip', async () => {
    const icon = page.locator('aside.sidebar img.tray-icon');
    const headline = page.locator('p.headline');
    await expect.poll(() => headline.getAttribute('data-aggregate'), PAGE_WAIT).not.toBe('degraded');
    const before = await headline.innerText();
    await page.getByRole('button', { name: 'Stop Persona store', exact: true }).click();
    await expect
      .poll(() => headline.innerText(), PAGE_WAIT)
      .toBe('Stopped: persona store. Start it on the Services page.');
    expect(await headline.getAttribute('data-aggregate')).toBe('degraded');
    await expect.poll(() => icon.getAttribute('alt'), PAGE_WAIT).toBe('Some services are not ready');
    // The tray's own tooltip, from the same statuses the desktop app's tray gets.
    const statuses = await consoleCall<ServiceStatus[]>('services.list');
    expect(trayTooltip(statuses)).toMatch(/^Hub services: Stopped: persona store\. Start it on the Services page\. \(/);
    // Its chart keeps the hour it drew, and says it is not read now.
    await expect
      .poll(() => page.locator('figure.chart[data-chart="persona-minutes"] .chart-summary').innerText(), PAGE_WAIT)
      .toMatch(/ Not read now: it is stopped\.$/);
    await page.screenshot({ path: join(ARTIFACTS, 'status-stopped.png'), fullPage: false });

    await page.getByRole('button', { name: 'Start Persona store', exact: true }).click();
    await expect.poll(() => headline.innerText(), PAGE_WAIT).toBe(before);
    expect(trayTooltip(await consoleCall<ServiceStatus[]>('services.list'))).not.toContain('Stopped');
  });

  it('after the app quits, the overview says so and shows no chart', async () => {
    expect(await page.locator('figure.chart').count()).toBeGreaterThan(0);
    const exited = new Promise((r) => headless.once('exit', r));
    headless.kill('SIGINT');
    await exited;
    await page.getByText('The console is not answering', { exact: false }).first().waitFor();
    expect(await page.locator('figure.chart').count()).toBe(0);
    // The page keeps asking; each answer that does not come leaves it so.
    await page.waitForEvent('requestfailed', { predicate: (r) => r.url().endsWith('/api/call') });
    expect(await page.locator('figure.chart').count()).toBe(0);
    expect(await page.locator('p.headline').count()).toBe(0);
    await page.screenshot({ path: join(ARTIFACTS, 'status-quit.png'), fullPage: true });
  });
});
