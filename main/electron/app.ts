/** Electron's main process: the real Electron modules, the settings and the supervisor, handed to runDesktop. */
import { join } from 'node:path';
import * as electron from 'electron';
import { appDataDir } from '../../services/kit/config.ts';
import { ServiceSupervisor } from '../supervisor/supervisor.ts';
import { PROJECT_ROOT } from '../supervisor/launcher.ts';
import { runDesktop } from './desktop.ts';
import { openSettings } from './settings.ts';
import { utilityProcessLauncher } from './utility-launcher.ts';

const supervisor = new ServiceSupervisor({
  dataDir: appDataDir(),
  launcher: utilityProcessLauncher(electron.utilityProcess.fork, electron.app, join(PROJECT_ROOT, 'main', 'supervisor', 'parent-watch.mjs')),
});

// A login item on macOS opens the app without arguments; it says so through wasOpenedAtLogin instead of --hidden.
const openedAtLogin = process.platform === 'darwin' && electron.app.getLoginItemSettings().wasOpenedAtLogin;
await runDesktop(electron, { supervisor, settings: openSettings(), hidden: process.argv.includes('--hidden') || openedAtLogin });
