import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe } from 'vitest';
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../../test/support/postgres.ts';
import { startTestIdentity, tempDir, type TestIdentity } from '../../../test/support/identity.ts';
import type { Logger } from '../../kit/logger.ts';
import { startPersonaStore, type PersonaStore } from '../service.ts';

export interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

/** A caller of the persona store holding one account's token. */
export class Client {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer<T>> {
    return this.send<T>(method, path, body === undefined ? undefined : JSON.stringify(body), headers);
  }

  /** Sends `json` as the body exactly as written: for bodies the test process could not build or stringify (nested 100,000 deep). */
  async send<T = Record<string, unknown>>(
    method: string,
    path: string,
    json: string | undefined,
    headers: Record<string, string> = {},
  ): Promise<Answer<T>> {
    const res = await fetch(this.url + path, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: json,
    });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed as T, text, headers: res.headers };
  }
}

/**
 * The store's clock in tests: real time plus an offset the test moves forward, so that times it must
 * tell apart differ (advance between two writes) and grace periods end when the test says (advance
 * past them, then sweep), without waiting for the wall clock.
 */
export class TestClock {
  private offsetMs = 0;
  readonly now = (): Date => new Date(Date.now() + this.offsetMs);
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/** An engine the store's tests run on; `skip` says why it cannot run here (never in CI: see postgresUnavailable). */
export interface EngineUnderTest {
  name: 'sqlite' | 'postgres';
  skip?: string;
}

export const ENGINES: EngineUnderTest[] = [{ name: 'sqlite' }, { name: 'postgres', skip: postgresUnavailable() }];

let current: EngineUnderTest = ENGINES[0]!;
let server: Promise<PostgresServer> | undefined;

/** This test file's PostgreSQL server, started on first use, stopped after the file (see forEachEngine). */
export function postgresServer(): Promise<PostgresServer> {
  server ??= startPostgres();
  return server;
}

/** The settings that put a new testbed on the current engine: nothing for SQLite, a new database of the file's server for PostgreSQL. */
async function engineEnv(): Promise<Record<string, string>> {
  if (current.name === 'sqlite') return {};
  return { PERSONA_DATABASE_URL: await (await postgresServer()).createDatabase() };
}

/**
 * Runs `body` once per engine, in a describe named after it; testbeds started inside it use that
 * engine. An engine that cannot run here is skipped with the reason in the suite's name.
 */
export function forEachEngine(body: (engine: EngineUnderTest) => void): void {
  afterAll(async () => {
    const started = server;
    server = undefined;
    if (started) await (await started).stop();
  });
  for (const engine of ENGINES) {
    if (engine.skip) {
      console.warn(`persona store tests on ${engine.name} skipped: ${engine.skip}`);
      describe.skip(`on ${engine.name} (skipped: ${engine.skip})`, () => body(engine));
      continue;
    }
    describe(`on ${engine.name}`, () => {
      beforeAll(() => {
        current = engine;
      });
      body(engine);
    });
  }
}

export interface Testbed {
  identity: TestIdentity;
  /** The engine this testbed's store keeps its data in. */
  engine: EngineUnderTest['name'];
  /** The PostgreSQL database's URL, when the engine is PostgreSQL. */
  databaseUrl?: string;
  store: PersonaStore;
  /** The clock the store writes with (entries, change log, grace periods, the sweeper). */
  clock: TestClock;
  dataDir: string;
  /** A client for the local account (the identity service's first account). */
  owner: Client;
  /** A client for a new account with this name. */
  account(name: string): Promise<Client>;
  restart(env?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

/** A real identity service and a real persona store on ephemeral ports, each with a temp folder. */
export async function startTestbed(
  env: Record<string, string> = {},
  identity?: TestIdentity,
  logger?: Logger,
): Promise<Testbed> {
  const id = identity ?? (await startTestIdentity());
  const dataDir = tempDir('persona-store');
  const clock = new TestClock();
  const database = await engineEnv();
  const storeEnv = () => ({
    PERSONA_DATA_DIR: dataDir,
    PERSONA_PORT: '0',
    ...id.trust('PERSONA_'),
    PERSONA_LOG_LEVEL: 'silent',
    ...database,
    ...env,
  });
  const bed: Testbed = {
    identity: id,
    engine: current.name,
    databaseUrl: database.PERSONA_DATABASE_URL,
    store: await startPersonaStore(storeEnv(), logger, { clock: clock.now }),
    clock,
    dataDir,
    owner: undefined as unknown as Client,
    async account(name) {
      const credential = await id.addAccount(name);
      return new Client(bed.store.url, await id.mint(credential, 'persona'));
    },
    async restart(more = {}) {
      await bed.store.close();
      Object.assign(env, more);
      bed.store = await startPersonaStore(storeEnv(), logger, { clock: clock.now });
      bed.owner = new Client(bed.store.url, bed.owner.token);
    },
    async close() {
      await bed.store.close();
      if (!identity) await id.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  bed.owner = new Client(bed.store.url, await id.mint(id.localCredential, 'persona'));
  return bed;
}

export const field = (value: unknown, extra: Record<string, unknown> = {}) => ({
  description: 'a test field',
  value,
  source: 'assistant',
  ...extra,
});
export const note = (content: string, extra: Record<string, unknown> = {}) => ({
  content,
  kind: 'observation',
  source: 'assistant',
  ...extra,
});
