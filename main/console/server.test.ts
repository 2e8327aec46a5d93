/**
 * The headless console server's edges over real HTTP, with a supervisor that runs nothing: paths that
 * name an object's own properties are missing pages (404, never a 500), and clients too slow to send a
 * request are cut with 408 in the API's shape. The secret, Host and Origin checks are in
 * test/console-server.test.ts.
 */
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../test/support/identity.ts';
import { ServiceSupervisor } from '../supervisor/supervisor.ts';
import type { ConsoleServer } from './server-parts.ts';
import { startConsoleServer, type ConsoleTimeouts } from './server.ts';

const running: Array<{ server: ConsoleServer; supervisor: ServiceSupervisor; dataDir: string }> = [];

afterEach(async () => {
  for (const { server, supervisor, dataDir } of running.splice(0)) {
    await server.close();
    await supervisor.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

async function start(timeouts: ConsoleTimeouts = {}) {
  const dataDir = tempDir('console-server-edges');
  const supervisor = new ServiceSupervisor({ dataDir, services: [], env: {} });
  const server = await startConsoleServer({ supervisor, host: '127.0.0.1', port: 0, ...timeouts });
  running.push({ server, supervisor, dataDir });
  const url = new URL(server.url);
  return { port: Number(url.port), secret: new URLSearchParams(url.hash.slice(1)).get('secret')! };
}

/** Writes raw bytes and resolves with everything the server sent once it closed the connection. */
function rawExchange(port: number, text: string, options: { end?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = '';
    const socket = connect(port, '127.0.0.1');
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.once('error', reject);
    socket.once('close', () => resolve(received));
    socket.write(text);
    if (options.end) socket.end();
  });
}

function bodyOf(answer: string): unknown {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
}

describe('console paths that name an object\u2019s own property', () => {
  it('are pages that do not exist: 404 with a sentence, never a 500 or a file', async () => {
    const { port, secret } = await start();
    const names = [
      'constructor',
      '__proto__',
      'hasOwnProperty',
      'toString',
      'valueOf',
      'isPrototypeOf',
      'propertyIsEnumerable',
      'toLocaleString',
      '__defineGetter__',
      '__lookupSetter__',
      'prototype',
    ];
    for (const name of names) {
      for (const method of ['GET', 'HEAD']) {
        const res = await fetch(`http://127.0.0.1:${port}/${name}`, {
          method,
          headers: { 'x-console-secret': secret },
        });
        expect(res.status, `${method} /${name}`).toBe(404);
        if (method === 'GET')
          expect(await res.json()).toEqual({
            ok: false,
            error: { status: 404, message: `There is no console page /${name}; open / instead.` },
          });
      }
    }
    // The real pages are still there.
    expect((await fetch(`http://127.0.0.1:${port}/app.js`, { headers: { 'x-console-secret': secret } })).status).toBe(
      200,
    );
  });
});

describe('the console server\u2019s timeouts (slow clients)', () => {
  it('answers a request without Host with 421 in the API\u2019s shape, saying where the console answers (not Node\u2019s bare 400)', async () => {
    const { port } = await start();
    const answer = await rawExchange(port, 'GET / HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 421 /);
    // Sent chunked (no Content-Length): the JSON is the one chunk.
    expect(answer).toContain(
      JSON.stringify({
        ok: false,
        error: {
          message: `The console answers only at http://127.0.0.1:${port}; open the URL that was printed when it started.`,
          status: 421,
        },
      }),
    );
  });

  it('cuts a client whose headers never finish (Slowloris) with 408 in the API\u2019s shape, and keeps answering others', async () => {
    const { port, secret } = await start({ headersTimeoutMs: 150, requestTimeoutMs: 10_000 });
    const answer = await rawExchange(port, `GET /app.js HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: a`);
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(bodyOf(answer)).toEqual({
      ok: false,
      error: {
        status: 408,
        message:
          "The request did not arrive in time: the console waits at most 150 ms for a request's headers and 10 s for the whole request; send its headers and body at once, without pauses.",
      },
    });
    expect((await fetch(`http://127.0.0.1:${port}/app.js`, { headers: { 'x-console-secret': secret } })).status).toBe(
      200,
    );
  });

  it('cuts a client whose body never finishes with 408', async () => {
    const { port, secret } = await start({ headersTimeoutMs: 150, requestTimeoutMs: 300 });
    const head = `POST /api/call HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Console-Secret: ${secret}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"method"`;
    expect(await rawExchange(port, head)).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('answers a request that is not HTTP with 400 in the API\u2019s shape', async () => {
    const { port } = await start();
    const answer = await rawExchange(port, 'HELLO\r\n\r\n', { end: true });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(answer)).toMatchObject({ ok: false, error: { status: 400 } });
  });

  it('refuses timeouts that cannot hold together (headers longer than the whole request)', async () => {
    await expect(start({ headersTimeoutMs: 2_000, requestTimeoutMs: 1_000 })).rejects.toThrow(
      /headersTimeoutMs must not exceed requestTimeoutMs/,
    );
  });
});

describe('the console server\u2019s connection bound', () => {
  it('closes the longest-idle connections to let a newcomer in, and keeps no more than its bound', async () => {
    // Idle connections would stay two minutes: only the bound closes them here.
    const { port } = await start({ maxConnections: 4, keepAliveTimeoutMs: 120_000 });
    const idle = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
        const answered = new Promise<string>((resolve) =>
          socket.setEncoding('utf8').once('data', (d: string) => resolve(d)),
        );
        socket.write(`GET /app.js HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
        expect(await answered).toMatch(/^HTTP\/1\.1 200 /);
        return { socket, closed };
      }),
    );
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(res.status).toBe(200);
    await res.text();
    // Six idle connections and a newcomer under a bound of four: at least three of the idle ones are closed.
    let closed = 0;
    await new Promise<void>((resolve) => {
      for (const c of idle) void c.closed.then(() => ++closed >= 3 && resolve());
    });
    for (const c of idle) c.socket.destroy();
  });
});
