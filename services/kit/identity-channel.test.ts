/**
 * How a service calls identity (identity-channel.ts), rule by rule, against real servers: an HTTP server on
 * a Unix socket in an owner-only folder (as identity listens), and one on a loopback port standing for an
 * identity elsewhere (the https channel; tests have no certificate authority, and the channel's rules are
 * the same over plain http). Each server records what it was sent.
 */
import { chmodSync, chownSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerOnlyFolder } from '../../test/support/signing-keys.ts';
import {
  IdentityUnreachable,
  MAX_SOCKET_PATH_BYTES,
  notOursBecause,
  overHttps,
  overSocket,
  type IdentityChannel,
} from './identity-channel.ts';

interface Heard {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A server that answers each path as `routes` says, recording every request. */
function recordingServer(routes: Record<string, (res: ServerResponse) => void>) {
  const heard: Heard[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      heard.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const route = routes[req.url!.split('?')[0]!];
      if (route) route(res);
      else res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":404}');
    });
  });
  return { server, heard };
}

const json = (status: number, body: unknown) => (res: ServerResponse) =>
  res.writeHead(status, { 'content-type': 'application/json', 'x-echo': 'yes' }).end(JSON.stringify(body));

const ROUTES: Record<string, (res: ServerResponse) => void> = {
  '/healthy': json(200, { status: 'ok' }),
  '/v1/auth/token-status': json(200, { active: true }),
  '/empty': (res) => res.writeHead(204).end(),
  '/text': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('not json'),
  '/four-mib': (res) => res.writeHead(200).end(`"${'x'.repeat(4 * 1024 * 1024 - 2)}"`),
  '/over-four-mib': (res) => res.writeHead(200).end(`"${'x'.repeat(4 * 1024 * 1024 - 1)}"`),
  '/cut': (res) => {
    res.writeHead(200, { 'content-length': '100' }).write('{"a":');
    res.socket?.destroy();
  },
  '/silent': () => undefined,
  '/moved': (res) => res.writeHead(302, { location: '/healthy' }).end(),
};

describe('the channel over identity\u2019s socket', () => {
  let folder: string;
  let path: string;
  let server: Server;
  let heard: Heard[];
  let channel: IdentityChannel;

  beforeAll(async () => {
    folder = ownerOnlyFolder('channel');
    path = join(folder, 'identity.sock');
    ({ server, heard } = recordingServer(ROUTES));
    await new Promise<void>((resolve) => server.listen(path, resolve));
    channel = overSocket('http://127.0.0.1:8001', path);
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('names identity\u2019s URL and where it calls it', () => {
    expect(channel.url).toBe('http://127.0.0.1:8001');
    expect(channel.where).toBe(`its socket ${path}`);
  });

  it('sends a GET by default, asking for JSON as localhost, and answers the status, headers and parsed body', async () => {
    const answer = await channel.call({ path: '/v1/auth/token-status?x=1' });
    expect(answer).toEqual({
      status: 200,
      headers: expect.objectContaining({ 'x-echo': 'yes' }),
      body: { active: true },
    });
    const last = heard.at(-1)!;
    expect(last).toMatchObject({ method: 'GET', url: '/v1/auth/token-status?x=1', body: '' });
    expect(last.headers).toMatchObject({ host: 'localhost', accept: 'application/json' });
    expect(last.headers['content-type']).toBeUndefined();
  });

  it('sends a body as JSON with its type and length, and the caller\u2019s headers over the defaults', async () => {
    await channel.call({
      method: 'POST',
      path: '/v1/auth/token-status',
      body: { token: 'é' },
      headers: { authorization: 'Bearer t', accept: 'application/problem+json' },
    });
    const last = heard.at(-1)!;
    expect(last.method).toBe('POST');
    expect(JSON.parse(last.body)).toEqual({ token: 'é' });
    expect(last.headers).toMatchObject({
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength('{"token":"é"}')),
      authorization: 'Bearer t',
      accept: 'application/problem+json',
    });
  });

  it('answers no body for an empty or non-JSON answer, and takes an answer of 4 MiB but not more', async () => {
    expect(await channel.call({ path: '/empty' })).toMatchObject({ status: 204, body: undefined });
    expect(await channel.call({ path: '/text' })).toMatchObject({ status: 200, body: undefined });
    expect(((await channel.call({ path: '/four-mib' })).body as string).length).toBe(4 * 1024 * 1024 - 2);
    await expect(channel.call({ path: '/over-four-mib' })).rejects.toMatchObject({ name: 'IdentityUnreachable' });
    await expect(channel.call({ path: '/over-four-mib' })).rejects.toThrow(
      new IdentityUnreachable(`the identity service does not answer on its socket ${path}`),
    );
  });

  it('says identity does not answer when the answer is cut short or does not come in time', async () => {
    await expect(channel.call({ path: '/cut' })).rejects.toBeInstanceOf(IdentityUnreachable);
    await expect(channel.call({ path: '/silent', timeoutMs: 50 })).rejects.toThrow(
      `the identity service does not answer on its socket ${path}`,
    );
  });

  it('keeps one connection open for the calls that follow one another', async () => {
    const keeping = ownerOnlyFolder('channel-keep');
    const kept = recordingServer(ROUTES);
    let connections = 0;
    kept.server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => kept.server.listen(join(keeping, 'identity.sock'), resolve));
    try {
      const reused = overSocket('http://127.0.0.1:8001', join(keeping, 'identity.sock'));
      for (let i = 0; i < 3; i++) expect((await reused.call({ path: '/healthy' })).status).toBe(200);
      expect(connections).toBe(1);
    } finally {
      kept.server.closeAllConnections();
      await new Promise((resolve) => kept.server.close(resolve));
    }
  });

  it('answers() is whether /healthy answers 200', async () => {
    expect(await channel.answers()).toBe(true);
    expect(heard.at(-1)!.url).toBe('/healthy');
    const elsewhere = ownerOnlyFolder('channel-503');
    const sick = recordingServer({ '/healthy': json(503, { status: 'starting' }) });
    await new Promise<void>((resolve) => sick.server.listen(join(elsewhere, 'identity.sock'), resolve));
    try {
      expect(await overSocket('http://127.0.0.1:8001', join(elsewhere, 'identity.sock')).answers()).toBe(false);
    } finally {
      await new Promise((resolve) => sick.server.close(resolve));
    }
    const silentHealth = recordingServer({ '/healthy': () => undefined });
    const third = ownerOnlyFolder('channel-silent');
    await new Promise<void>((resolve) => silentHealth.server.listen(join(third, 'identity.sock'), resolve));
    try {
      expect(await overSocket('http://127.0.0.1:8001', join(third, 'identity.sock')).answers(50)).toBe(false);
    } finally {
      silentHealth.server.closeAllConnections();
      await new Promise((resolve) => silentHealth.server.close(resolve));
    }
  });

  it('calls nothing where no socket is, and says so', async () => {
    const missing = join(folder, 'nothing.sock');
    const none = overSocket('http://127.0.0.1:8001', missing);
    await expect(none.call({ path: '/healthy' })).rejects.toThrow(
      new IdentityUnreachable(`the identity service cannot be reached: there is no socket at ${missing}`),
    );
    expect(await none.answers()).toBe(false);
    // A file that is ours but no socket: nothing answers there.
    writeFileSync(join(folder, 'plain.sock'), '');
    await expect(
      overSocket('http://127.0.0.1:8001', join(folder, 'plain.sock')).call({ path: '/healthy' }),
    ).rejects.toThrow(`the identity service does not answer on its socket ${join(folder, 'plain.sock')}`);
  });

  it('on Windows, reads the pipe\u2019s name from the file in identity\u2019s folder (checked here with a socket\u2019s path as the name)', async () => {
    const pipeFile = join(folder, 'identity.pipe');
    writeFileSync(pipeFile, `${path}\n`);
    const platform = Object.getOwnPropertyDescriptor(process, 'platform')!;
    Object.defineProperty(process, 'platform', { ...platform, value: 'win32' });
    try {
      const windows = overSocket('http://127.0.0.1:8001', pipeFile);
      expect(await windows.call({ path: '/healthy' })).toMatchObject({ status: 200, body: { status: 'ok' } });
      const unnamed = join(folder, 'no-such.pipe');
      await expect(overSocket('http://127.0.0.1:8001', unnamed).call({ path: '/healthy' })).rejects.toThrow(
        new IdentityUnreachable(`the identity service cannot be reached: ${unnamed} (its pipe's name) cannot be read`),
      );
      // Windows has no modes to check: the user's own data folder is trusted as it is.
      expect(notOursBecause(join(folder, 'anything'), 'socket')).toBeUndefined();
    } finally {
      Object.defineProperty(process, 'platform', platform);
    }
  });
});

const windows = process.platform === 'win32';
describe.skipIf(windows)(
  `whose files are trusted to be identity\u2019s${windows ? ' (skipped: Windows has no such modes)' : ''}`,
  () => {
    const uid = process.getuid!();

    it('a file of the user\u2019s in a folder only the user may write', () => {
      const folder = ownerOnlyFolder('ours');
      writeFileSync(join(folder, 'keys.json'), '{}');
      expect(notOursBecause(join(folder, 'keys.json'), 'keys file')).toBeUndefined();
      // Others may read and enter the folder: only writing it would let them put a file there.
      chmodSync(folder, 0o755);
      expect(notOursBecause(join(folder, 'keys.json'), 'keys file')).toBeUndefined();
    });

    it('nothing in a folder the group or others may write, saying how to fix it', () => {
      for (const mode of [0o720, 0o702, 0o777]) {
        const folder = ownerOnlyFolder('open');
        writeFileSync(join(folder, 'keys.json'), '{}');
        chmodSync(folder, mode);
        expect(notOursBecause(join(folder, 'keys.json'), 'keys file'), mode.toString(8)).toBe(
          `the folder of ${join(folder, 'keys.json')} is not yours alone (other users may write it), so nothing in it proves it is identity's; make it owner-only (chmod 700 ${folder})`,
        );
      }
    });

    it('nothing missing, nothing that is a symbolic link', () => {
      const folder = ownerOnlyFolder('links');
      expect(notOursBecause(join(folder, 'identity.sock'), 'socket')).toBe(
        `there is no socket at ${join(folder, 'identity.sock')}`,
      );
      expect(notOursBecause(join(folder, 'no-folder', 'identity.sock'), 'socket')).toBe(
        `there is no socket at ${join(folder, 'no-folder', 'identity.sock')}`,
      );
      writeFileSync(join(folder, 'real'), '');
      symlinkSync(join(folder, 'real'), join(folder, 'identity.sock'));
      expect(notOursBecause(join(folder, 'identity.sock'), 'socket')).toBe(
        `${join(folder, 'identity.sock')} is a symbolic link, not identity's socket`,
      );
    });

    it.skipIf(uid !== 0)(
      `nothing that belongs to another user, nor in another user\u2019s folder${uid !== 0 ? ' (skipped: only root can give a file away)' : ''}`,
      () => {
        const folder = ownerOnlyFolder('theirs');
        writeFileSync(join(folder, 'keys.json'), '{}');
        chownSync(join(folder, 'keys.json'), uid + 4242, uid + 4242);
        expect(notOursBecause(join(folder, 'keys.json'), 'keys file')).toBe(
          `${join(folder, 'keys.json')} does not belong to you, so it is not identity's keys file`,
        );
        const theirs = join(ownerOnlyFolder('their-folder'), 'sub');
        mkdirSync(theirs, { mode: 0o700 });
        writeFileSync(join(theirs, 'keys.json'), '{}');
        chownSync(theirs, uid + 4242, uid + 4242);
        expect(notOursBecause(join(theirs, 'keys.json'), 'keys file')).toMatch(/is not yours alone/);
      },
    );
  },
);

describe('the channel to an identity elsewhere (https, over plain http here)', () => {
  let server: Server;
  let heard: Heard[];
  let base: string;

  beforeAll(async () => {
    ({ server, heard } = recordingServer(
      Object.fromEntries(Object.entries(ROUTES).map(([p, route]) => [`/identity${p}`, route])),
    ));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('appends the path to the URL, its trailing slashes dropped, and says where it calls', async () => {
    const channel = overHttps(`${base}/identity//`);
    expect(channel.url).toBe(`${base}/identity//`);
    expect(channel.where).toBe(`${base}/identity//`);
    const answer = await channel.call({ path: '/v1/auth/token-status' });
    expect(answer).toEqual({
      status: 200,
      headers: expect.objectContaining({ 'x-echo': 'yes' }),
      body: { active: true },
    });
    const last = heard.at(-1)!;
    expect(last).toMatchObject({ method: 'GET', url: '/identity/v1/auth/token-status', body: '' });
    expect(last.headers.accept).toBe('application/json');
    expect(last.headers['content-type']).toBeUndefined();
  });

  it('sends a body as JSON with its type, and the caller\u2019s headers over the defaults', async () => {
    const channel = overHttps(`${base}/identity`);
    await channel.call({
      method: 'PUT',
      path: '/v1/auth/token-status',
      body: { token: 't' },
      headers: { authorization: 'Bearer t', accept: 'text/plain' },
    });
    const last = heard.at(-1)!;
    expect(last.method).toBe('PUT');
    expect(last.body).toBe('{"token":"t"}');
    expect(last.headers).toMatchObject({
      'content-type': 'application/json',
      authorization: 'Bearer t',
      accept: 'text/plain',
    });
  });

  it('answers no body for an empty or non-JSON answer, and follows no redirect', async () => {
    const channel = overHttps(`${base}/identity`);
    expect(await channel.call({ path: '/empty' })).toMatchObject({ status: 204, body: undefined });
    expect(await channel.call({ path: '/text' })).toMatchObject({ status: 200, body: undefined });
    await expect(channel.call({ path: '/moved' })).rejects.toThrow(
      new IdentityUnreachable(`the identity service at ${base}/identity does not answer`),
    );
  });

  it('says identity does not answer when nothing answers in time, and answers() says whether /healthy is 200', async () => {
    const channel = overHttps(`${base}/identity`);
    await expect(channel.call({ path: '/silent', timeoutMs: 50 })).rejects.toBeInstanceOf(IdentityUnreachable);
    expect(await channel.answers()).toBe(true);
    expect(heard.at(-1)!.url).toBe('/identity/healthy');
    expect(await overHttps(base).answers()).toBe(false);
  });

  it('the longest socket path the systems take is 103 bytes', () => {
    expect(MAX_SOCKET_PATH_BYTES).toBe(103);
  });
});
