import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { execa } from 'execa';
import pg from 'pg';
import { freePort } from './process.ts';

/**
 * A PostgreSQL server of the test's own: `initdb` in a temporary folder, `pg_ctl` on a loopback port and a
 * private socket folder, password authentication, torn down by `stop()`. Needs Debian's `postgresql` package
 * (the server programs); run as root, the server runs as the `postgres` user, as PostgreSQL refuses root.
 */
export interface PostgresServer {
  /** The superuser's URL of the `postgres` database. */
  readonly adminUrl: string;
  /** The server's data folder (the cluster's files), for tests that read the bytes at rest. */
  readonly dataDir: string;
  readonly port: number;
  /** A new empty database owned by a new role; its URL. */
  createDatabase(name?: string): Promise<string>;
  /**
   * A new login (role) in the database at `databaseUrl`, allowed to connect and to create its own schema
   * there, as an operator would set up a second person on a shared server; its URL for that database.
   */
  createLogin(databaseUrl: string): Promise<string>;
  /** Writes every dirty page to the data folder (so the files hold what the tables hold). */
  checkpoint(): Promise<void>;
  stop(): Promise<void>;
}

const SERVER_PROGRAMS = ['initdb', 'pg_ctl'];

/** The folder with initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/<version>/bin (newest). */
export function postgresBinDir(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && SERVER_PROGRAMS.every((p) => existsSync(join(dir, p)))) return dir;
  }
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const dir = join(debian, v, 'bin');
    if (SERVER_PROGRAMS.every((p) => existsSync(join(dir, p)))) return dir;
  }
  return undefined;
}

/** Whether this run is CI's (CI set to anything but empty, 0 or false, as CI services set it). */
export const inCi = (): boolean => !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());

/**
 * Why PostgreSQL tests cannot run here, or undefined when they can. In CI they must run: a missing server
 * is then a failure, never a skip (see `.ci/run`, which installs it).
 */
export function postgresUnavailable(): string | undefined {
  if (postgresBinDir()) return undefined;
  const reason =
    "PostgreSQL's server programs (initdb, pg_ctl) are not installed; `apt-get install postgresql` to run the PostgreSQL engine's tests";
  if (inCi())
    throw new Error(`${reason}. In CI they must run (CI=${process.env.CI}), so this is a failure, not a skip.`);
  return reason;
}

async function postgresUid(): Promise<{ uid: number; gid: number }> {
  const uid = Number((await execa('id', ['-u', 'postgres'])).stdout.trim());
  const gid = Number((await execa('id', ['-g', 'postgres'])).stdout.trim());
  return { uid, gid };
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (!bin) throw new Error(postgresUnavailable() ?? 'PostgreSQL is not installed.');
  const asRoot = process.getuid?.() === 0;
  const root = mkdtempSync(join(tmpdir(), 'hub-pg-'));
  const dataDir = join(root, 'data');
  const socketDir = join(root, 'socket');
  const password = randomBytes(18).toString('base64url');
  const pwFile = join(root, 'pw');
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  const owner = asRoot ? await postgresUid() : undefined;
  if (owner) {
    chownSync(root, owner.uid, owner.gid);
    chownSync(pwFile, owner.uid, owner.gid);
  }
  const run = (program: string, args: string[]) =>
    owner
      ? execa('runuser', ['-u', 'postgres', '--', join(bin, program), ...args], { cwd: root })
      : execa(join(bin, program), args, { cwd: root });

  await run('initdb', [
    '-D',
    dataDir,
    '-U',
    'postgres',
    `--pwfile=${pwFile}`,
    '--auth=scram-sha-256',
    '--encoding=UTF8',
    '--locale=C.UTF-8',
    '--no-instructions',
  ]);
  rmSync(pwFile);
  await execa('mkdir', ['-m', '0700', socketDir]);
  if (owner) chownSync(socketDir, owner.uid, owner.gid);

  let port = 0;
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    const options = `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=60`;
    try {
      await run('pg_ctl', ['-D', dataDir, '-l', join(root, 'server.log'), '-o', options, '-w', '-t', '120', 'start']);
      break;
    } catch (err) {
      // Another test may take the port between the draw and the bind; try another.
      if (attempt >= 4) throw err;
    }
  }
  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  let made = 0;
  return {
    adminUrl,
    dataDir,
    port,
    async createDatabase(name) {
      const db = name ?? `persona_${process.pid}_${++made}`;
      const role = `${db}_owner`;
      const rolePassword = randomBytes(18).toString('base64url');
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${rolePassword}'`);
        await client.query(`CREATE DATABASE "${db}" OWNER "${role}"`);
      } finally {
        await client.end();
      }
      return `postgres://${role}:${encodeURIComponent(rolePassword)}@127.0.0.1:${port}/${db}`;
    },
    async createLogin(databaseUrl) {
      const database = new URL(databaseUrl).pathname.slice(1);
      const role = `${database}_login_${++made}`;
      const rolePassword = randomBytes(18).toString('base64url');
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE ROLE "${role}" LOGIN PASSWORD '${rolePassword}'`);
        await client.query(`GRANT CONNECT, CREATE ON DATABASE "${database}" TO "${role}"`);
      } finally {
        await client.end();
      }
      return `postgres://${role}:${encodeURIComponent(rolePassword)}@127.0.0.1:${port}/${database}`;
    },
    async checkpoint() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query('CHECKPOINT');
      } finally {
        await client.end();
      }
    },
    async stop() {
      try {
        await run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '120', 'stop']);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}
