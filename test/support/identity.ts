import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IDENTITY_PLACES } from '../../common/services.ts';
import type { RunningService } from '../../services/kit/server.ts';
import { overSocket, type IdentityChannel } from '../../services/kit/identity-channel.ts';
import { openIdentityStore, startIdentity, LOCAL_SESSION_FILE } from '../../services/identity/service.ts';

export interface TestIdentity {
  readonly url: string;
  readonly dataDir: string;
  /** The public key set identity writes into its data folder, what the services check tokens with. */
  readonly keysFile: string;
  /** Identity's socket in its data folder: the one way the services call it. */
  readonly socket: string;
  /** A channel to identity over its socket, as a service makes one. */
  readonly channel: IdentityChannel;
  /** `<prefix>IDENTITY_URL`, `…_KEYS_FILE` and `…_SOCKET` pointing a service at this identity, as the supervisor wires them. */
  trust(prefix: 'PERSONA_' | 'REPOHOST_'): Record<string, string>;
  /** Session credential of the local account made on first run. */
  readonly localCredential: string;
  /** Creates an account through the identity store and returns its session credential. */
  addAccount(name: string): Promise<string>;
  /** A token for `audience` minted over HTTP with a session credential. */
  mint(credential: string, audience: string): Promise<string>;
  readonly service: RunningService;
  /** Stops the service as a person pressing Stop would: its data folder (and the keys file in it) stays, its port and socket go. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data folder. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `${prefix}-`));
}

/** A real identity service on an ephemeral loopback port with its own data folder. */
export async function startTestIdentity(extraEnv: Record<string, string> = {}): Promise<TestIdentity> {
  const dataDir = tempDir('identity');
  const env = { IDENTITY_DATA_DIR: dataDir, IDENTITY_PORT: '0', IDENTITY_LOG_LEVEL: 'silent', ...extraEnv };
  let service = await startIdentity(env);
  const again = { ...env, IDENTITY_PORT: String(service.port) };
  const localCredential = readFileSync(join(dataDir, LOCAL_SESSION_FILE), 'utf8').trim();
  const keysFile = join(dataDir, IDENTITY_PLACES.keysFile);
  const socket = join(dataDir, IDENTITY_PLACES.socket);
  return {
    url: service.url,
    dataDir,
    keysFile,
    socket,
    channel: overSocket(service.url, socket),
    trust: (prefix) => ({
      [`${prefix}IDENTITY_URL`]: service.url,
      [`${prefix}IDENTITY_KEYS_FILE`]: keysFile,
      [`${prefix}IDENTITY_SOCKET`]: socket,
    }),
    localCredential,
    get service() {
      return service;
    },
    stop: () => service.close(),
    async start() {
      service = await startIdentity(again);
    },
    async addAccount(name) {
      const store = openIdentityStore(dataDir, {
        tokenTtlSeconds: 600,
        keyRotationDays: 30,
        platformUrl: 'http://127.0.0.1:9',
      });
      try {
        return (await store.accounts.add(name)).credential;
      } finally {
        await store.database.close();
      }
    },
    async mint(credential, audience) {
      const res = await fetch(`${service.url}/v1/auth/service-token`, {
        method: 'POST',
        headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ audience }),
      });
      if (res.status !== 200) throw new Error(`mint failed: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { token: string }).token;
    },
    async close() {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
