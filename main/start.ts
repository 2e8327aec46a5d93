/**
 * `npm start`: builds what changed (main/build/), then the desktop app where Electron's binary and a
 * display exist, otherwise headless (`npm run serve`) with a line saying why. Arguments after `--` go to
 * whichever runs. The desktop app is told which Node ran npm: in development its services run with that
 * Node, as `npm run serve` and the tests do (main/supervisor/service-runtime.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { build, buildErrors } from './build/build.ts';
import { electronBinary, hasDisplay, whyNoDesktop } from './electron/binary.ts';
import { refuseOtherNodeLine } from './node-line.ts';
import { PROJECT_ROOT } from './supervisor/launcher.ts';
import { SERVICES_NODE_VARIABLE } from './supervisor/service-runtime.ts';

refuseOtherNodeLine();
let reason = whyNoDesktop();
// Electron's package fetches its binary at first use, not at `npm ci`: fetch it here, where a window can open.
if (reason && hasDisplay() && !electronBinary() && !process.env.ELECTRON_OVERRIDE_DIST_PATH) {
  process.stdout.write('Downloading Electron\u2019s binary, once (about 100 MB)...\n');
  const fetched = spawnSync(process.execPath, [join(PROJECT_ROOT, 'node_modules', 'electron', 'install.js')], {
    cwd: PROJECT_ROOT,
    stdio: 'inherit',
  });
  reason =
    fetched.status === 0
      ? whyNoDesktop()
      : 'Electron\u2019s binary could not be downloaded (see above); run `npx install-electron` once the network is there, then `npm start` again';
}
if (reason) {
  process.stdout.write(`Running headless: ${reason}. The console opens in your browser from the URL printed below.\n`);
  await import('./headless.ts');
} else {
  const built = await build();
  if (built.main?.error !== undefined || built.console?.error !== undefined) {
    process.stderr.write(`The build failed, so the desktop app cannot start:\n${buildErrors(built)}\n`);
    process.exit(1);
  }
  const errors = buildErrors(built);
  if (errors)
    process.stderr.write(`The build failed:\n${errors}\nServices whose bundles are out of date run from source.\n`);
  const child = spawn(electronBinary()!, [PROJECT_ROOT, ...process.argv.slice(2)], {
    stdio: 'inherit',
    cwd: PROJECT_ROOT,
    env: { ...process.env, [SERVICES_NODE_VARIABLE]: process.execPath },
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
