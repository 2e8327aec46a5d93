/**
 * `npm start`: the desktop app where Electron's binary and a display exist, otherwise headless
 * (`npm run serve`) with a line saying why. Arguments after `--` go to whichever runs.
 */
import { spawn } from 'node:child_process';
import { electronBinary, whyNoDesktop } from './electron/binary.ts';
import { PROJECT_ROOT } from './supervisor/launcher.ts';

const reason = whyNoDesktop();
if (reason) {
  process.stdout.write(`Running headless: ${reason}. The console opens in your browser from the URL printed below.\n`);
  await import('./headless.ts');
} else {
  const child = spawn(electronBinary()!, [PROJECT_ROOT, ...process.argv.slice(2)], { stdio: 'inherit', cwd: PROJECT_ROOT });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
