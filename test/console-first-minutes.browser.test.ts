/**
 * A person's first minutes with the console, in Debian's Chromium against the headless console server:
 * the real supervisor runs the real identity service, persona store and gateway (its platform address
 * answers nothing), and the provider's port is taken by another program, so the provider is never
 * started. What the overview says about both, editing a persona's card when the persona store refuses a
 * value, and a new launch's URL opened in the tab of the old one.
 */
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ServiceStatus } from '../common/contract.ts';
import { startConsoleServer } from '../main/console/server.ts';
import type { ConsoleServer } from '../main/console/server-parts.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { standInBinary } from '../services/model-provider/test-support/stand-in.ts';
import { SETTLE_MS, STACK_TIMING } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { ROOT, freePort } from './support/process.ts';
import { launchChromium } from './support/chromium.ts';

// Two services and Chromium on a loaded 2-core machine: the timeouts are backstops, never windows.
vi.setConfig({ testTimeout: 150_000, hookTimeout: SETTLE_MS + 60_000 });

const ARTIFACTS = join(ROOT, 'test-artifacts', 'console');

let dir: string;
let squatter: Server;
let supervisor: ServiceSupervisor;
let server: ConsoleServer;
let context: BrowserContext;
let page: Page;

const tab = (name: string) =>
  page.getByRole('navigation', { name: 'Console sections' }).getByRole('button', { name, exact: true });

beforeAll(async () => {
  dir = tempDir('console-first-minutes');
  // Another program on the provider's port: the supervisor refuses to start the provider there.
  const providerPort = await freePort();
  // It hangs up on whoever connects, so that no connection keeps it open at the end.
  squatter = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => squatter.listen(providerPort, '127.0.0.1', resolve));
  supervisor = new ServiceSupervisor({
    dataDir: join(dir, 'data'),
    services: ['identity', 'persona-store', 'repohost-gateway', 'model-provider'],
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      IDENTITY_PORT: String(await freePort()),
      PERSONA_PORT: String(await freePort()),
      REPOHOST_PORT: String(await freePort()),
      // Nothing listens there: the gateway waits for its platform.
      REPOHOST_PLATFORM_URL: `http://127.0.0.1:${await freePort()}`,
      MODELPROV_PORT: String(providerPort),
      MODELPROV_CLI_BINARY: standInBinary(join(dir, 'cli')).binary,
    },
    ...STACK_TIMING,
  });
  await supervisor.startAll();
  const settled: ServiceStatus[] = await supervisor.waitUntilSettled(undefined, SETTLE_MS);
  expect(settled.map((s) => `${s.name}:${s.state}`)).toEqual([
    'identity:ready',
    'persona-store:ready',
    'repohost-gateway:waiting',
    'model-provider:gave-up',
  ]);
  server = await startConsoleServer({ supervisor, port: 0 });
  context = await launchChromium(join(dir, 'chromium-profile'), { width: 1280, height: 900 });
  context.setDefaultTimeout(120_000);
  page = context.pages()[0] ?? (await context.newPage());
  await page.goto(server.url);
});

afterAll(async () => {
  await context?.close();
  await server?.close();
  await supervisor?.close();
  await new Promise((resolve) => squatter?.close(resolve));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a service whose port another program holds', () => {
  it('the overview says why it was left stopped, and does not say it crashed', async () => {
    const provider = supervisor.status().find((s) => s.name === 'model-provider')!;
    // It never ran: nothing crashed.
    expect(provider.restarts).toBe(0);
    expect(provider.lastError).toMatch(/is already in use by a program that is not one of these services/);

    await tab('Overview').click();
    const attention = page.locator('ul.attention li', { hasText: 'Chat-model provider' });
    await attention.waitFor();
    const said = await attention.innerText();
    expect(said).toMatch(/^Chat-model provider: gave up\. Port \d+ on 127\.0\.0\.1 is already in use/);
    expect(said).not.toMatch(/crash/i);
    const card = page.locator('li.service-card[data-service="model-provider"]');
    // What holds the port, and what to do, in words; the button names no variable.
    expect(await card.locator('.service-need').innerText()).toMatch(
      /^Port \d+ of the chat-model provider is held by .+, not by this app, so the chat-model provider was not started\. To move the chat-model provider instead, set MODELPROV_PORT to a free port\.$/,
    );
    expect(await card.locator('a.button.primary').innerText()).toMatch(/^Stop .+, then start the chat-model provider$/);
    expect(await card.locator('a.button.primary').innerText()).not.toMatch(/[A-Z]+_[A-Z]+/);
    // Its charts say why they are empty, in words; the footnote's figures keep their spaces.
    await page.locator('figure.chart[data-chart="provider-runs"] .chart-summary').getByText('Not counted').waitFor();
    expect(await page.locator('figure.chart[data-chart="provider-runs"] .chart-summary').innerText()).toBe(
      'Not counted: it gave up.',
    );
    expect(await page.getByText('Counted by each service at its /metrics').innerText()).toMatch(
      / read every \d+ s and .* last read \w+ \d+, \d{4}, \d/,
    );
    await page.screenshot({ path: join(ARTIFACTS, 'first-minutes-port-taken.png'), fullPage: true });
  });
});

describe('the guide\u2019s last step', () => {
  it('names the page where a hub credential is made as the sidebar names it', async () => {
    await tab('Get started').click();
    const state = page.locator('ol.first-run-steps li[data-step="hub-credential"] .step-state');
    await state.waitFor();
    const said = await state.innerText();
    const named = /on the (.+) page/.exec(said)?.[1];
    expect(named, said).toBeDefined();
    expect(await tab(named!).count()).toBe(1);
  });
});

describe('a gateway that cannot reach its platform', () => {
  it('its card says what to do in words that fit the card, and promises no re-check button', async () => {
    await tab('Overview').click();
    const card = page.locator('li.service-card[data-service="repohost-gateway"]');
    await card.locator('.service-need').waitFor();
    expect(await card.locator('.service-need').innerText()).toBe(
      'The repository gateway cannot reach the platform (GitHub, or the address in REPOHOST_PLATFORM_URL); it tries again every few seconds.',
    );
    // The button names no variable (the sentence beside it may).
    const action = card.getByRole('link', { name: 'Check the network', exact: true });
    const [cardBox, actionBox] = [await card.boundingBox(), await action.boundingBox()];
    // The whole action is inside its card, not running over the next one.
    expect(actionBox!.x + actionBox!.width).toBeLessThanOrEqual(cardBox!.x + cardBox!.width);
    await page.screenshot({ path: join(ARTIFACTS, 'first-minutes-platform-unreachable.png'), fullPage: true });
  });
});

describe('editing a persona\u2019s card', () => {
  it('a refused value keeps the dialog open with what was typed and the store\u2019s sentence, until a save works', async () => {
    const credential = await supervisor.localCredential();
    const minted = await fetch(`${supervisor.url('identity')}/v1/auth/service-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ audience: 'persona' }),
    });
    const { token } = (await minted.json()) as { token: string };
    const created = await fetch(`${supervisor.url('persona-store')}/v1/personas`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ profile: 'household', display_name: 'Juniper' }),
    });
    expect(created.status).toBe(201);

    await tab('Personas').click();
    await page.getByRole('button', { name: 'Juniper', exact: true }).click();
    await page.getByRole('heading', { name: 'Juniper', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Edit the card' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit the card' });
    await dialog.getByLabel('Tone').fill('calm and brief');
    await dialog.getByLabel(/^Language/).fill('English please');
    await dialog.getByRole('button', { name: 'Save' }).click();

    // The store refuses the language: the sentence says to correct it, so the box to correct is still there.
    await dialog.getByRole('alert').getByText('a language is a BCP 47 tag').waitFor();
    expect(await dialog.getByLabel('Tone').inputValue()).toBe('calm and brief');
    expect(await dialog.getByLabel(/^Language/).inputValue()).toBe('English please');
    await page.screenshot({ path: join(ARTIFACTS, 'first-minutes-card-refused.png'), fullPage: true });

    await dialog.getByLabel(/^Language/).fill('en');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('status').getByText('Saved the card: language, tone changed.').waitFor();
    const card = page.locator('dl.card-members');
    await card.getByText('calm and brief').waitFor();
    expect(await card.innerText()).toContain('en');
  });
});

describe('the console started again on the same port', () => {
  it('its new URL, opened in the tab that shows the old one, is taken without a reload by hand', async () => {
    await tab('Overview').click();
    await page.locator('p.headline').waitFor();
    // `npm run serve -- --console-port <port>` again: the same address, a new secret.
    const port = Number(new URL(server.url).port);
    await server.close();
    server = await startConsoleServer({ supervisor, port });
    await page.getByText('Open the console with the URL printed by').first().waitFor();
    // What that sentence says to do: open the new URL, here in the same tab (only its fragment differs).
    await page.goto(server.url);
    await expect.poll(() => page.url(), { timeout: 120_000 }).not.toContain('secret');
    // The page answers again: the tray's icon shows the services' state, read with the new secret.
    await expect
      .poll(() => page.locator('aside.sidebar img.tray-icon').getAttribute('alt'), { timeout: 120_000 })
      .toBe('A service crashed or gave up');
    expect(await page.getByText('Open the console with the URL printed by').count()).toBe(0);
  });
});
