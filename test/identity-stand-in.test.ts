/**
 * Another program takes identity's port while identity is stopped (a person pressed Stop, a restart,
 * before the app starts): it serves its own key set, says every token is active and every credential
 * current, and records what it receives. The persona store, the gateway and the console must neither
 * take its tokens nor send it anything (the gateway's service token, a hub's token, a session
 * credential), and their /ready must say that identity is missing. Everything here is real: identity,
 * the persona store, the gateway on the GitHub double, the supervisor's child processes, and a second
 * HTTP listener on identity's own port.
 */
import { rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleError, ServiceClient } from '../main/console/service-client.ts';
import { ServiceSupervisor } from '../main/supervisor/supervisor.ts';
import { startPersonaStore, type PersonaStore } from '../services/persona-store/service.ts';
import { startWorld, type World } from './github-double/world.ts';
import { tempDir } from './support/identity.ts';
import { freePort } from './support/process.ts';

interface Heard {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface StandIn {
  /** Every request it received, headers and body whole. */
  heard: Heard[];
  /** A token it signs: `kid` its own unless given (a real key's id, to look like identity's). */
  sign(claims: { sub: string; aud: string }, kid?: string): Promise<string>;
  close(): Promise<void>;
}

/** What a program on identity's port would answer to look like identity: its own keys, "active", "current", a credential. */
async function standIn(port: number, issuer: string): Promise<StandIn> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'stand-in', alg: 'ES256', use: 'sig' };
  const heard: Heard[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      heard.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const json = (body: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const answers: Record<string, unknown> = {
        '/.well-known/jwks.json': { keys: [jwk] },
        '/v1/auth/token-status': { active: true },
        '/v1/credentials/check': { current: true },
        '/v1/credentials/resolve': {
          profile: 'work',
          kind: 'token',
          token: `github_pat_${'e'.repeat(40)}`,
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          revision: 'stand-in',
        },
        '/healthy': { status: 'ok' },
        '/ready': { status: 'ready', checks: {} },
      };
      const answer = answers[(req.url ?? '').split('?')[0]!];
      if (answer === undefined) res.writeHead(404).end();
      else json(answer);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    heard,
    sign: ({ sub, aud }, kid = 'stand-in') =>
      new SignJWT({ sid: 'ses_standin' })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience(aud)
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(privateKey),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const PAT = `github_pat_${'b2'.repeat(20)}`;

describe('a program on identity\u2019s port while identity is stopped', () => {
  let world: World;
  let store: PersonaStore;
  let storeDir: string;
  let impostor: StandIn;
  let local: string;
  let realPersona: string;
  let realGateway: string;
  let realKid: string;

  const persona = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${store.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { detail?: string } };
  };
  const ready = async (url: string) => {
    const res = await fetch(`${url}/ready`);
    return { status: res.status, body: (await res.json()) as { detail?: string; checks: Record<string, string> } };
  };

  beforeAll(async () => {
    // Every use of a held platform credential is confirmed with identity: no window in which a held one serves.
    world = await startWorld({ REPOHOST_CREDENTIAL_RECHECK_MS: '0' });
    world.double.addToken(PAT, 'alice', 'all');
    await world.connect('work', { kind: 'token', token: PAT });
    storeDir = tempDir('stand-in-persona');
    const storeEnv = {
      ...world.identity.trust('PERSONA_'),
      PERSONA_DATA_DIR: storeDir,
      PERSONA_PORT: '0',
      PERSONA_LOG_LEVEL: 'silent',
      // Every request asks identity whether the session stands: no remembered answer covers the attack.
      PERSONA_SESSION_RECHECK_MS: '0',
    };
    store = await startPersonaStore(storeEnv);
    local = decodeJwt(await world.token()).sub!;
    realPersona = await world.identity.mint(world.identity.localCredential, 'persona');
    realGateway = await world.token();
    realKid = decodeProtectedHeader(realGateway).kid!;
    expect((await persona('GET', '/v1/personas', realPersona)).status).toBe(200);
    expect((await world.call('GET', '/v1/me', { token: realGateway })).status).toBe(200);

    await world.identity.stop();
    impostor = await standIn(world.identity.service.port, world.identity.url);
    // Both restart while the stand-in holds the port (after a crash, or the app starting before identity):
    // nothing of the real identity is in their memory, only what they take at start.
    await store.close();
    store = await startPersonaStore(storeEnv);
    await world.restartGateway();
  });

  afterAll(async () => {
    await impostor?.close();
    await store?.close();
    await world?.close();
    rmSync(storeDir, { recursive: true, force: true });
  });

  it('the persona store refuses its tokens with 401, for the local account and an invented one, reads and writes alike', async () => {
    for (const sub of [local, 'mallory']) {
      for (const kid of ['stand-in', realKid]) {
        const token = await impostor.sign({ sub, aud: 'persona' }, kid);
        const read = await persona('GET', '/v1/personas', token);
        expect(read.status, `read as ${sub} with kid ${kid}`).toBe(401);
        const write = await persona('POST', '/v1/personas', token, { profile: 'taken', display_name: 'Taken' });
        expect(write.status, `write as ${sub} with kid ${kid}`).toBe(401);
      }
    }
  });

  it('the gateway refuses its tokens with 401', async () => {
    for (const sub of [local, 'mallory']) {
      for (const kid of ['stand-in', realKid]) {
        const token = await impostor.sign({ sub, aud: 'repohost-api' }, kid);
        expect((await world.call('GET', '/v1/me', { token })).status, `as ${sub} with kid ${kid}`).toBe(401);
      }
    }
  });

  it('tokens the real identity signed are refused with 503 while it is stopped, whatever the stand-in says of them', async () => {
    const refused = await persona('GET', '/v1/personas', realPersona);
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toMatch(/identity service/);
    const gateway = await world.call('GET', '/v1/me', { token: realGateway });
    expect(gateway.status).toBe(503);
    expect(gateway.body.detail).toMatch(/identity service/);
  });

  it('/ready of both answers 503 naming identity', async () => {
    for (const url of [store.url, world.gateway.url]) {
      const answer = await ready(url);
      expect(answer.status, url).toBe(503);
      expect(answer.body.checks.identity, url).toBe('failing');
      expect(answer.body.checks.identity_keys, url).toBe('ok');
      expect(answer.body.detail, url).toMatch(/identity service does not answer on its socket/);
    }
  });

  it('the services send it nothing: no service token, no hub token, no session credential, not one request', () => {
    const secrets = [world.serviceToken, realPersona, realGateway, world.identity.localCredential];
    const leaked = impostor.heard.filter((h) => secrets.some((s) => JSON.stringify(h).includes(s)));
    expect(leaked).toEqual([]);
    expect(impostor.heard.map((h) => `${h.method} ${h.path}`)).toEqual([]);
  });

  it('once the real identity is back on its port, its tokens work again, /ready says so, and the stand-in\u2019s stay refused', async () => {
    await impostor.close();
    await world.identity.start();
    expect((await persona('GET', '/v1/personas', realPersona)).status).toBe(200);
    expect((await world.call('GET', '/v1/me', { token: realGateway })).status).toBe(200);
    for (const url of [store.url, world.gateway.url]) expect((await ready(url)).status, url).toBe(200);
    const forged = await impostor.sign({ sub: local, aud: 'persona' }, realKid);
    expect((await persona('GET', '/v1/personas', forged)).status).toBe(401);
  });
});

describe('the console with identity stopped and a program on its port', () => {
  let supervisor: ServiceSupervisor;
  let dir: string;

  beforeAll(async () => {
    dir = tempDir('stand-in-console');
    supervisor = new ServiceSupervisor({
      dataDir: join(dir, 'data'),
      services: ['identity', 'persona-store'],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        IDENTITY_PORT: String(await freePort()),
        PERSONA_PORT: String(await freePort()),
      },
      startTimeoutMs: 150_000,
      probeTimeoutMs: 15_000,
    });
    await supervisor.startAll();
    await supervisor.waitUntilSettled(undefined, 180_000);
  }, 200_000);

  afterAll(async () => {
    await supervisor?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps identity\u2019s port from another program while identity is stopped, and says identity is stopped', async () => {
    expect((await new ServiceClient(supervisor).call('persona-store', { path: '/v1/personas' })).status).toBe(200);
    await supervisor.stop('identity');
    const url = new URL(supervisor.url('identity'));
    // The supervisor keeps identity's port while identity is stopped: no other program can take it.
    const taken = await standIn(Number(url.port), url.origin).catch((err: unknown) => err);
    expect((taken as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
    // A client with no token yet must mint one: identity is asked on its socket, which is gone with it.
    const client = new ServiceClient(supervisor);
    const minting = await client.call('persona-store', { path: '/v1/personas' }).catch((err: unknown) => err);
    expect(minting).toBeInstanceOf(ConsoleError);
    expect((minting as ConsoleError).message).toMatch(/identity service is not answering \(it is stopped\)/);
    const listing = await client.call('identity', { path: '/v1/connections' }).catch((err: unknown) => err);
    expect(listing).toBeInstanceOf(ConsoleError);
  });
});
