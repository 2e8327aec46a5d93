import { rmSync } from 'node:fs';
import { startTestIdentity, tempDir, type TestIdentity } from '../../../test/support/identity.ts';
import type { Logger } from '../../kit/logger.ts';
import type { RunningService } from '../../kit/server.ts';
import { startPersonaStore } from '../service.ts';

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

  async call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
    const res = await fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
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

export interface Testbed {
  identity: TestIdentity;
  store: RunningService;
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
  const storeEnv = () => ({ PERSONA_DATA_DIR: dataDir, PERSONA_PORT: '0', PERSONA_IDENTITY_URL: id.url, PERSONA_LOG_LEVEL: 'silent', ...env });
  const bed: Testbed = {
    identity: id,
    store: await startPersonaStore(storeEnv(), logger),
    dataDir,
    owner: undefined as unknown as Client,
    async account(name) {
      const credential = await id.addAccount(name);
      return new Client(bed.store.url, await id.mint(credential, 'persona'));
    },
    async restart(more = {}) {
      await bed.store.close();
      Object.assign(env, more);
      bed.store = await startPersonaStore(storeEnv(), logger);
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
