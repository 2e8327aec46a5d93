/**
 * Electron's main process, built to out/main/app.mjs (package.json's "main"): the real Electron modules,
 * the settings and the supervisor, handed to runDesktop.
 */
import * as electron from 'electron';
import { appDataDir } from '../../services/kit/config.ts';
import { ServiceSupervisor } from '../supervisor/supervisor.ts';
import { runDesktop } from './desktop.ts';
import { openSettings } from './settings.ts';
import { TEST_HOOKS_VARIABLE, connectTestHooks } from './test-hooks.ts';
import { desktopLauncher } from './utility-launcher.ts';

const { app } = electron;
const { launcher } = desktopLauncher(electron);
const settings = openSettings();
const supervisor = new ServiceSupervisor({ dataDir: appDataDir(), launcher, settings });

// A login item on macOS opens the app without arguments; it says so through wasOpenedAtLogin instead of --hidden.
const openedAtLogin = process.platform === 'darwin' && app.getLoginItemSettings().wasOpenedAtLogin;
// Not awaited here: Electron emits 'ready' only after this module has finished evaluating, and runDesktop waits for 'ready'.
runDesktop(electron, {
  supervisor,
  settings,
  hidden: process.argv.includes('--hidden') || openedAtLogin,
  ...(process.env[TEST_HOOKS_VARIABLE]
    ? { testHooks: (hooks) => connectTestHooks(hooks, process.env[TEST_HOOKS_VARIABLE]!) }
    : {}),
}).catch((err: unknown) => {
  process.stderr.write(`The desktop app could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  app.exit(1);
});
