import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { freePort, ROOT } from '../../test/support/process.ts';
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test/support/postgres.ts';

/**
 * What the service does at start when PERSONA_DATABASE_URL cannot be used, as a real child process: a
 * setting a person must change exits 78 (the supervisor does not restart it) naming the setting and the
 * server, never the password; a server that does not answer exits 1 saying so (the supervisor retries).
 */

vi.setConfig({ testTimeout: 300_000 });
const skip = postgresUnavailable();
if (skip) console.warn(`PERSONA_DATABASE_URL start tests skipped: ${skip}`);

let server: PostgresServer;
let goodUrl: string;
const dataDir = tempDir('persona-database-url');

/** Starts the service's program with this database URL and waits for it to exit (each case below exits at start). */
async function start(databaseUrl: string): Promise<{ code: number | undefined; stderr: string; stdout: string }> {
  const r = await execa(process.execPath, ['--import', 'tsx', join(ROOT, 'services', 'run.ts'), 'persona-store'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      PERSONA_PORT: String(await freePort()),
      PERSONA_DATA_DIR: dataDir,
      PERSONA_LOG_LEVEL: 'warn',
      PERSONA_DATABASE_URL: databaseUrl,
    },
    extendEnv: false,
    reject: false,
  });
  return { code: r.exitCode, stderr: r.stderr, stdout: r.stdout };
}

const passwordOf = (url: string) => decodeURIComponent(new URL(url).password);
const withPassword = (url: string, password: string) =>
  Object.assign(new URL(url), { password: encodeURIComponent(password) }).href;

describe.skipIf(skip)('PERSONA_DATABASE_URL that cannot be used at start', () => {
  beforeAll(async () => {
    server = await startPostgres();
    goodUrl = await server.createDatabase();
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a wrong password exits 78 naming the setting, the server and the login, never the password', async () => {
    const wrong = 'Wr0ng-pass-' + 'q'.repeat(12);
    const url = withPassword(goodUrl, wrong);
    const r = await start(url);
    expect(r.code, r.stderr).toBe(78);
    expect(r.stderr).toContain('PERSONA_DATABASE_URL');
    expect(r.stderr).toContain(`127.0.0.1:${server.port}/${new URL(goodUrl).pathname.slice(1)}`);
    expect(r.stderr).toContain(new URL(goodUrl).username);
    expect(r.stderr).toMatch(/password/i);
    for (const out of [r.stderr, r.stdout]) {
      expect(out).not.toContain(wrong);
      expect(out).not.toContain(passwordOf(goodUrl));
    }
  });

  it('a database that does not exist exits 78 naming it', async () => {
    const url = Object.assign(new URL(goodUrl), { pathname: '/no_such_database' }).href;
    const r = await start(url);
    expect(r.code, r.stderr).toBe(78);
    expect(r.stderr).toContain('PERSONA_DATABASE_URL');
    expect(r.stderr).toContain('no_such_database');
    expect(r.stderr).not.toContain(passwordOf(goodUrl));
  });

  it('a login that may not create its schema exits 78 saying what the operator must grant', async () => {
    const role = `no_create_${process.pid}`;
    const admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE "${role}" LOGIN PASSWORD 'only-connect-1'`);
    } finally {
      await admin.end();
    }
    const url = Object.assign(new URL(goodUrl), { username: role, password: 'only-connect-1' }).href;
    const r = await start(url);
    expect(r.code, r.stderr).toBe(78);
    expect(r.stderr).toContain('PERSONA_DATABASE_URL');
    expect(r.stderr).toContain(`CREATE SCHEMA "${role}" AUTHORIZATION "${role}"`);
    expect(r.stderr).not.toContain('only-connect-1');
  });

  it('a server that does not answer exits 1 naming the setting and the server, so the app retries it', async () => {
    const closed = await freePort();
    const url = Object.assign(new URL(goodUrl), { port: String(closed) }).href;
    const r = await start(url);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('PERSONA_DATABASE_URL');
    expect(r.stderr).toContain(`127.0.0.1:${closed}`);
    expect(r.stderr).toMatch(/does not answer/);
    expect(r.stderr).not.toContain(passwordOf(goodUrl));
  });
});

/** No server is needed to see that a URL cannot be read: these run wherever PostgreSQL is missing too. */
describe('PERSONA_DATABASE_URL whose escapes do not decode', () => {
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const secret = 'Xk9vQ2mZ-pass';
  it.each([
    ['password', '%ZZ', `postgres://ada:${secret}%ZZ@127.0.0.1:5432/personas`],
    ['password', 'half a UTF-8 character', `postgres://ada:${secret}%C3@127.0.0.1:5432/personas`],
    ['login', '%ZZ', `postgres://ada%ZZ:${secret}@127.0.0.1:5432/personas`],
    ['database name', '%ZZ', `postgres://ada:${secret}@127.0.0.1:5432/per%ZZsonas`],
  ])('exits 78 naming the setting and its %s (%s), never the password', async (part, _how, url) => {
    const r = await start(url);
    expect(r.code, r.stderr).toBe(78);
    expect(r.stderr).toContain('PERSONA_DATABASE_URL');
    expect(r.stderr).toContain(`its ${part} holds a %`);
    expect(r.stderr).toContain('%25');
    expect(r.stderr).not.toMatch(/URI malformed/);
    for (const out of [r.stderr, r.stdout]) {
      expect(out).not.toContain(secret);
      expect(out).not.toContain('Xk9vQ2mZ');
    }
  });

  it('as --to of the command line: a usage error naming the part, never the password', async () => {
    const r = await execa(
      process.execPath,
      [
        '--import',
        'tsx',
        join(ROOT, 'services', 'persona-store', 'cli.ts'),
        'move-in',
        '--from',
        dataDir,
        '--to',
        `postgres://ada:${secret}%ZZ@127.0.0.1:5432/personas`,
      ],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
        extendEnv: false,
        reject: false,
      },
    );
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toContain('its password holds a %');
    expect(r.stdout + r.stderr).not.toContain(secret);
  });
});
