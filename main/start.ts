/**
 * `npm start`: builds what changed (main/build/), then the desktop app where Electron's binary and a
 * display exist, otherwise headless (`npm run serve`) with a line saying why. Arguments after `--` go to
 * whichever runs. The desktop app is told which Node ran npm: in development its services run with that
 * Node, as `npm run serve` and the tests do (main/supervisor/service-runtime.ts).
 */
import { spawn } from 'node:child_process';
import { build, buildErrors } from './build/build.ts';
import { electronBinary, whyNoDesktop } from './electron/binary.ts';
import { refuseOtherNodeLine } from './node-line.ts';
import { PROJECT_ROOT } from './supervisor/launcher.ts';
import { SERVICES_NODE_VARIABLE } from './supervisor/service-runtime.ts';

refuseOtherNodeLine();
const reason = whyNoDesktop();
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
