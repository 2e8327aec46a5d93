/**
 * The provider as the console shows it when something is wrong: a CLI whose probe loaded tools, an
 * MCP server and ran a hook (lockdown not confirmed), and the real CLI package, which runs here without a login.
 * Real provider processes under the real supervisor; the page is checked in Debian's Chromium.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createConsoleApi } from '../main/console/api.ts';
import { startConsoleServer } from '../main/console/server.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { standInBinary } from '../services/model-provider/test-support/stand-in.ts';
import { SETTLE_MS, STACK_TIMING } from './support/console-stack.ts';
import { tempDir } from './support/identity.ts';
import { ROOT, freePort } from './support/process.ts';
import { launchChromium } from './support/chromium.ts';

interface ProviderStatus {
  ready: {
    ready: boolean;
    checks: {
      cli: { ok: boolean };
      login: { state: string; detail?: string };
      lockdown: { ok: boolean; state: string; tools: string[]; mcp_servers: string[]; hooks: string[]; detail: string };
    };
  };
  models: { data: { id: string }[] };
}

// The real CLI's probe and Chromium are slow on a loaded machine; these timeouts are backstops only.
vi.setConfig({ testTimeout: SETTLE_MS + 60_000, hookTimeout: SETTLE_MS });

const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

async function providerOnly(cliBinary: string) {
  const dir = tempDir('console-provider');
  const supervisor = new ServiceSupervisor({
    dataDir: join(dir, 'data'),
    services: ['model-provider'],
    env: {
      PATH: process.env.PATH,
      HOME: dir,
      MODELPROV_PORT: String(await freePort()),
      MODELPROV_CLI_BINARY: cliBinary,
    },
    ...STACK_TIMING,
  });
  cleanup.push(async () => {
    await supervisor.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await supervisor.startAll();
  return { supervisor };
}

/**
 * Polls the console until the provider's startup probe has finished (it decides readiness, so the state
 * stays `live`, and no event says when); the deadline is a backstop.
 */
async function probedStatus(api: ReturnType<typeof createConsoleApi>): Promise<ProviderStatus> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const result = await api.call({ method: 'provider.status' });
    if (result.ok) {
      const status = result.data as ProviderStatus;
      if (status.ready.checks.lockdown.state !== 'pending') return status;
    }
    if (Date.now() > deadline) throw new Error(`the provider's probe did not finish: ${JSON.stringify(result)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The console's provider panel for `supervisor`, in Debian's Chromium through the headless console server. */
async function providerPanel(supervisor: ServiceSupervisor) {
  const server = await startConsoleServer({ supervisor, port: 0 });
  const browserDir = tempDir('console-provider-chromium');
  const context = await launchChromium(browserDir);
  cleanup.push(async () => {
    await context.close();
    await server.close();
    rmSync(browserDir, { recursive: true, force: true });
  });
  // Chromium on a loaded machine: waits for the page are backstopped generously.
  context.setDefaultTimeout(90_000);
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(server.url);
  await page.getByRole('button', { name: 'Provider', exact: true }).click();
  const dl = page.locator('dl.provider');
  await dl.waitFor();
  return { page, dl };
}

describe('the provider panel when completions would not work', () => {
  it('lists the tools, MCP servers and hooks a CLI loaded, and the page shows them as the reason', async () => {
    const cliDir = tempDir('console-provider-cli');
    cleanup.push(async () => rmSync(cliDir, { recursive: true, force: true }));
    const standIn = standInBinary(cliDir, { loads: ['Bash', 'WebFetch'], mcp: ['github'], hook: true });
    const { supervisor } = await providerOnly(standIn.binary);
    const api = createConsoleApi({ supervisor });
    const status = await probedStatus(api);
    expect(status.ready.ready).toBe(false);
    expect(status.ready.checks.lockdown).toMatchObject({
      ok: false,
      tools: ['Bash', 'WebFetch'],
      mcp_servers: ['github'],
      hooks: ['SessionStart:startup'],
    });
    expect(status.models.data.length).toBeGreaterThan(0);

    const { page, dl } = await providerPanel(supervisor);
    expect(await dl.locator('[data-check="ready"]').innerText()).toBe('no: see the checks below');
    // The provider's own sentence names what was loaded and says what to do: fix the CLI's configuration, then restart.
    expect(await dl.locator('[data-check="lockdown"]').innerText()).toMatch(
      /^not confirmed \(not_ok\)\. The CLI loaded tools Bash, WebFetch; MCP servers github; hooks SessionStart:startup, .*fix that in the CLI's configuration, then restart the service\.$/,
    );
    expect(await dl.locator('[data-check="tools"] li').allInnerTexts()).toEqual(['Bash', 'WebFetch']);
    expect(await dl.locator('[data-check="mcp"] li').allInnerTexts()).toEqual(['github']);
    expect(await dl.locator('[data-check="hooks"] li').allInnerTexts()).toEqual(['SessionStart:startup']);
    expect(await dl.locator('[data-check="login"]').innerText()).toBe(
      'not known: the probe stopped when the CLI loaded what it must not (see Lockdown).',
    );
    await page.screenshot({
      path: join(ROOT, 'test-artifacts', 'console', 'provider-not-locked-down.png'),
      fullPage: true,
    });
  });

  it('the real CLI package without a login shows "not signed in" with what to do', async () => {
    const { supervisor } = await providerOnly(join(ROOT, 'node_modules', '.bin', 'claude'));
    const status = await probedStatus(createConsoleApi({ supervisor }));
    expect(status.ready.checks.cli.ok).toBe(true);
    expect(status.ready.checks.login.state).toBe('not_signed_in');
    expect(status.ready.checks.login.detail).toContain('sign in');
    expect(status.ready.ready).toBe(false);

    const { page, dl } = await providerPanel(supervisor);
    expect(await dl.locator('[data-check="login"]').innerText()).toMatch(
      /^no\. .*run it once in a terminal and sign in.*The provider notices within a minute once you have\.$/,
    );
    expect(await dl.locator('[data-check="hooks"]').innerText()).toBe('none');
    await page.screenshot({
      path: join(ROOT, 'test-artifacts', 'console', 'provider-not-signed-in.png'),
      fullPage: true,
    });
  });
});

describe('the provider panel: how streamed replies are sent', () => {
  it('shows the mode, keeps the person\u2019s choice in the settings and applies it when the provider restarts', async () => {
    const cliDir = tempDir('console-provider-stream-cli');
    cleanup.push(async () => rmSync(cliDir, { recursive: true, force: true }));
    const { supervisor } = await providerOnly(standInBinary(cliDir).binary);
    const api = createConsoleApi({ supervisor, env: {} });
    const before = (await probedStatus(api)) as ProviderStatus & { stream: unknown };
    expect(before.stream).toEqual({ setting: 'whole', running: 'whole', fromEnvironment: false });

    const { page, dl } = await providerPanel(supervisor);
    const stream = dl.locator('[data-check="stream"]');
    // A choice of two, the mode in force checked: never a button named after the mode it is not in.
    const whole = stream.getByRole('radio', { name: 'the whole reply at once, when the CLI has finished' });
    const deltas = stream.getByRole('radio', { name: 'the words as the CLI writes them' });
    expect([await whole.isChecked(), await deltas.isChecked()]).toEqual([true, false]);
    expect(await stream.innerText()).toContain('The running provider sends the whole reply at once');
    await deltas.check();
    await stream.getByText('It applies when the provider restarts.').waitFor();
    expect(await deltas.isChecked()).toBe(true);
    // Kept in the app's settings (headless: the data folder's settings.json) before any restart.
    expect(JSON.parse(readFileSync(join(supervisor.dataDir, 'settings.json'), 'utf8'))).toEqual({
      providerStream: 'deltas',
    });
    await stream.getByRole('button', { name: 'Restart the provider now' }).click();
    await stream.getByText('The running provider sends the words as the CLI writes them.').waitFor();
    await page.screenshot({
      path: join(ROOT, 'test-artifacts', 'console', 'provider-stream-deltas.png'),
      fullPage: true,
    });

    // The restarted provider got MODELPROV_STREAM=deltas: a streamed reply comes in more pieces than the whole one's four events.
    const res = await fetch(`${supervisor.url('model-provider')}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sonnet',
        messages: [{ role: 'user', content: 'stream after the restart' }],
        stream: true,
      }),
    });
    const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events.length).toBeGreaterThan(4);
    expect(events.at(-1)).toBe('data: [DONE]');
    const after = await api.call({ method: 'provider.status' });
    expect(after.ok && (after.data as { stream: unknown }).stream).toEqual({
      setting: 'deltas',
      running: 'deltas',
      fromEnvironment: false,
    });
  });

  it('refuses a mode that does not exist, naming the member', async () => {
    const dir = tempDir('console-provider-stream-refusal');
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const supervisor = new ServiceSupervisor({ dataDir: dir, services: ['model-provider'] });
    cleanup.push(() => supervisor.close());
    const answer = await createConsoleApi({ supervisor }).call({
      method: 'provider.setStream',
      params: { mode: 'tokens' },
    });
    expect(answer).toMatchObject({
      ok: false,
      error: {
        status: 422,
        message: expect.stringMatching(/^The provider\.setStream request is not right: params\.mode: /) as unknown,
      },
    });
    expect(supervisor.settings.get().providerStream).toBe('whole');
  });
});
