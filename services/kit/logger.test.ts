/**
 * The kit's logger in a real child process whose log reader goes away, as a service's does when the
 * supervisor is killed: the service must still exit. (pino's default asynchronous stdout flushed its
 * buffer on exit in a loop that retried the broken pipe forever: the supervisor test found providers
 * left running for hours.)
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../test/support/process.ts';
import { createApp } from './app.ts';
import { createLogger, errorSummary } from './logger.ts';
import { listen } from './server.ts';

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
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
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

describe('a logged error', () => {
  class StoreUnavailable extends Error {}
  const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

  function capture(secretPrefixes?: string[]): {
    logger: ReturnType<typeof createLogger>;
    lines: Record<string, unknown>[];
  } {
    const lines: Record<string, unknown>[] = [];
    return {
      lines,
      logger: createLogger(
        'err-test',
        'info',
        { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
        { secretPrefixes },
      ),
    };
  }

  it('keeps its class, message and cause, whether a call site summarised it first or not', () => {
    const { logger, lines } = capture();
    const err = new StoreUnavailable('the store could not be reached', { cause: refused() });
    logger.error({ err }, 'as it is');
    logger.error({ err: errorSummary(err) }, 'summarised first');
    const expected = {
      name: 'Error',
      class: 'StoreUnavailable',
      message: 'the store could not be reached',
      cause: { name: 'Error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
    };
    expect(lines.map((l) => l.err)).toEqual([expected, expected]);
    expect(JSON.stringify(lines)).not.toContain('stack');
    expect(JSON.stringify(lines)).not.toContain('    at ');
  });

  it('of a signal that found no receiver says fetch failed and why (its cause), as the gateway logs it', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const failure = await fetch(`http://127.0.0.1:${port}/hub`, { method: 'POST', body: '{}' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    const { logger, lines } = capture();
    logger.warn({ subscription: 'sub_1', err: errorSummary(failure) }, 'signal not delivered');
    expect(lines[0]!.err).toMatchObject({
      name: 'TypeError',
      message: 'fetch failed',
      cause: { code: 'ECONNREFUSED' },
    });
  });

  it('never carries a credential its message happened to hold, nor more than a few causes', () => {
    const { logger, lines } = capture(['hubs_', 'whsec_']);
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhY2N0In0.c2lnbmF0dXJlc2lnbmF0dXJl';
    const credential = `hubs_${'A'.repeat(43)}`;
    const signing = `whsec_${'B'.repeat(32)}`;
    let err: Error = new Error(
      `Authorization: Bearer ${jwt} for ${credential} signed with ${signing} at http://user:pw-7731@127.0.0.1:9/`,
    );
    for (let i = 0; i < 20; i++) err = new Error(`wrapped ${i}`, { cause: err });
    logger.error({ err }, 'deep');
    const line = JSON.stringify(lines[0]);
    for (const leak of [jwt, credential, signing, 'pw-7731']) expect(line).not.toContain(leak);
    expect(line.match(/"cause"/g)!.length).toBeLessThanOrEqual(5);
  });

  it('masks whatever follows a prefix of the service\u2019s secrets, summarised first or not, in its causes too', () => {
    const { logger, lines } = capture(['hubs_', 'hubsvc_', 'hubcon_']);
    const token = `hubsvc_${'Qx3'.repeat(14)}A`;
    const secret = `hubcon_${'Zq7'.repeat(14)}B`;
    // Cut short (a message sliced by its thrower) still masks what is left of it.
    const err = new Error(`the gateway sent ${token} and the console ${secret.slice(0, 12)}`, {
      cause: new Error(`REPOHOST_IDENTITY_SERVICE_TOKEN=${token}`),
    });
    logger.error({ err }, 'as it is');
    logger.error({ err: errorSummary(err) }, 'summarised first');
    const logged = JSON.stringify(lines);
    expect(logged).not.toContain(token.slice('hubsvc_'.length, 20));
    expect(logged).not.toContain(secret.slice('hubcon_'.length, 12));
    expect(lines[0]!.err).toMatchObject({
      message: 'the gateway sent [redacted hubsvc_] and the console [redacted hubcon_]',
      cause: { message: 'REPOHOST_IDENTITY_SERVICE_TOKEN=[redacted hubsvc_]' },
    });
    expect(lines[1]!.err).toEqual(lines[0]!.err);
    // A prefix the service did not give is not the kit's to know.
    const { logger: bare, lines: bareLines } = capture();
    bare.error({ err }, 'no list');
    expect(JSON.stringify(bareLines)).toContain(token);
  });

  it('that is not an Error is named for what was thrown, never "[object Object]"', () => {
    const { logger, lines } = capture();
    logger.error({ err: { code: 'E_BUSY', message: 'database is locked' } }, 'object');
    logger.error({ err: { unexpected: true } }, 'object without a message');
    logger.error({ err: 'a string' }, 'string');
    expect(lines.map((l) => l.err)).toEqual([
      { name: 'NonError', code: 'E_BUSY', message: 'database is locked' },
      { name: 'NonError', message: 'a thrown object' },
      { name: 'NonError', message: 'a string' },
    ]);
  });

  it('of an unexpected 500 over real HTTP keeps its class, message and cause in the log and none of it in the answer', async () => {
    const { logger, lines } = capture();
    const app = createApp({
      logger,
      extraRoutes: (a) =>
        a.get('/boom', () => {
          throw new StoreUnavailable('the store could not be reached', { cause: refused() });
        }),
    });
    const running = await listen({ app, host: '127.0.0.1', port: 0, logger: createLogger('err-test', 'silent') });
    try {
      const res = await fetch(`${running.url}/boom`);
      expect(res.status).toBe(500);
      const body = await res.text();
      for (const leak of ['StoreUnavailable', 'ECONNREFUSED', 'could not be reached', 'stack'])
        expect(body).not.toContain(leak);
      const logged = lines.find((l) => l.msg === 'unexpected error');
      expect(logged?.err).toEqual({
        name: 'Error',
        class: 'StoreUnavailable',
        message: 'the store could not be reached',
        cause: { name: 'Error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' },
      });
    } finally {
      await running.close();
    }
  });
});
