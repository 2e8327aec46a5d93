/**
 * The kit's logger in a real child process whose log reader goes away, as a service's does when the
 * supervisor is killed: the service must still exit. (pino's default asynchronous stdout flushed its
 * buffer on exit in a loop that retried the broken pipe forever: the supervisor test found providers
 * left running for hours.)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../test/support/process.ts';

const dir = mkdtempSync(join(tmpdir(), 'kit-logger-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('createLogger', () => {
  it('lets a process exit after its stdout reader is gone, with lines logged just before the exit', async () => {
    const script = join(dir, 'child.ts');
    writeFileSync(
      script,
      [
        `import { createLogger } from ${JSON.stringify(pathToFileURL(join(ROOT, 'services', 'kit', 'logger.ts')).href)};`,
        `const log = createLogger('child', 'info');`,
        `log.info('started');`,
        `process.on('disconnect', () => {`,
        `  for (let i = 0; i < 1000; i++) log.info({ i }, 'stopping');`,
        `  process.exit(0);`,
        `});`,
      ].join('\n'),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // The first line says the logger is in place; then the reader goes, and the parent with it (the channel closes).
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    child.stdout!.destroy();
    child.disconnect();
    const code = await exited;
    expect(code, stderr).toBe(0);
  });
});
