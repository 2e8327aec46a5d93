/**
 * The real desktop app under Playwright's `_electron`, where Electron's binary exists. Where it does not
 * (it is downloaded on first use, which needs the network), the test is reported as skipped with the reason.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { electronBinary, whyNoDesktop } from '../main/electron/binary.ts';
import { tempDir } from './support/identity.ts';
import { ROOT, freePort } from './support/process.ts';

const reason = whyNoDesktop();
if (reason) process.stdout.write(`[electron-app.test] skipped: ${reason}.\n`);

describe('the desktop app in Electron', () => {
  it.skipIf(reason !== undefined)(
    reason ? `opens a hardened console window that reaches the services over IPC (skipped: ${reason})` : 'opens a hardened console window that reaches the services over IPC',
    { timeout: 120_000 },
    async () => {
      const { _electron } = await import('playwright-core');
      const home = tempDir('electron-home-');
      const app = await _electron.launch({
        executablePath: electronBinary()!,
        args: [ROOT],
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          DISPLAY: process.env.DISPLAY ?? '',
          HOME: home,
          XDG_DATA_HOME: join(home, 'data'),
          XDG_CONFIG_HOME: join(home, 'config'),
          IDENTITY_PORT: String(await freePort()),
          PERSONA_PORT: String(await freePort()),
          REPOHOST_PORT: String(await freePort()),
          MODELPROV_PORT: String(await freePort()),
        },
      });
      try {
        const page = await app.firstWindow();
        expect(page.url()).toBe('app://console/index.html');
        // getLastWebPreferences exists at run time but is not in Electron's type declarations.
        const prefs = await app.evaluate(({ BrowserWindow }) =>
          (BrowserWindow.getAllWindows()[0]!.webContents as unknown as { getLastWebPreferences(): Record<string, unknown> }).getLastWebPreferences(),
        );
        expect(prefs).toMatchObject({ contextIsolation: true, sandbox: true, nodeIntegration: false, webSecurity: true });
        expect(await page.evaluate(() => typeof (globalThis as { require?: unknown }).require)).toBe('undefined');
        expect(await page.evaluate(() => Object.keys(window.consoleBridge ?? {}))).toEqual(['call']);
        expect(
          await page.evaluate(() => {
            try {
              return String(eval('1'));
            } catch {
              return 'blocked';
            }
          }),
        ).toBe('blocked');
        const answer = (await page.evaluate(() => window.consoleBridge!.call({ method: 'services.list' }))) as { ok: boolean; data: Array<{ name: string }> };
        expect(answer.ok).toBe(true);
        expect(answer.data.map((s) => s.name)).toEqual(['identity', 'persona-store', 'repohost-gateway', 'model-provider']);
        // Navigation away from the console is refused.
        await page.evaluate(() => (window.location.href = 'https://example.com/')).catch(() => undefined);
        expect(page.url()).toMatch(/^app:\/\/console\//);
      } finally {
        await app.close();
      }
    },
  );
});
