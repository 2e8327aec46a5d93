import { rmSync } from 'node:fs';
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

  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
    return this.send<T>(method, path, body === undefined ? undefined : JSON.stringify(body), headers);
  }

  /** Sends `json` as the body exactly as written: for bodies the test process could not build or stringify (nested 100,000 deep). */
  async send<T = Record<string, unknown>>(method: string, path: string, json: string | undefined, headers: Record<string, string> = {}): Promise<Answer<T>> {
    const res = await fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
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

export interface Testbed {
  identity: TestIdentity;
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
export async function startTestbed(env: Record<string, string> = {}, identity?: TestIdentity, logger?: Logger): Promise<Testbed> {
  const id = identity ?? (await startTestIdentity());
  const dataDir = tempDir('persona-store');
  const clock = new TestClock();
  const storeEnv = () => ({ PERSONA_DATA_DIR: dataDir, PERSONA_PORT: '0', PERSONA_IDENTITY_URL: id.url, PERSONA_LOG_LEVEL: 'silent', ...env });
  const bed: Testbed = {
    identity: id,
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

export const field = (value: unknown, extra: Record<string, unknown> = {}) => ({ description: 'a test field', value, source: 'assistant', ...extra });
export const note = (content: string, extra: Record<string, unknown> = {}) => ({ content, kind: 'observation', source: 'assistant', ...extra });
