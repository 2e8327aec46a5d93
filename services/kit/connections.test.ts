/**
 * The bound on open connections, over real sockets: idle keep-alive connections no longer shut new
 * clients out (the finding: 1,050 of them under a 1,024-descriptor limit), idle ones are closed first,
 * a request in flight is never cut, and a newcomer when every connection is busy gets 503 saying so.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ROOT } from '../../test/support/process.ts';
import { createApp } from './app.ts';
import { DEFAULT_MAX_CONNECTIONS } from './connections.ts';
import { createLogger } from './logger.ts';
import { listen, type RunningService } from './server.ts';

vi.setConfig({ testTimeout: 120_000 });

const dir = mkdtempSync(join(tmpdir(), 'kit-connections-'));
const logger = createLogger('connections-test', 'silent');
const running: RunningService[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(running.splice(0).map((s) => s.close()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Raw {
  socket: Socket;
  /** What the server sent first (an answer), or '' when it closed the connection without one. */
  answer: Promise<string>;
  closed: Promise<void>;
}

/** A keep-alive client that sends one request and keeps its connection open afterwards. */
function request(port: number, path: string): Raw {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  let received = '';
  const answer = new Promise<string>((resolve) => {
    socket.setEncoding('utf8').on('data', (d: string) => {
      received += d;
      if (received.includes('\r\n\r\n')) resolve(received);
    });
    socket.once('close', () => resolve(received));
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  return { socket, answer, closed };
}

async function serve(maxConnections: number) {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let entered = 0;
  let onEnter = () => undefined as void;
  const app = createApp({
    logger,
    extraRoutes: (a) => {
      a.get('/hello', (_req, res) => void res.json({ hello: true }));
      // An upload the handler reads as it comes (not JSON, so the body parser leaves it alone).
      a.post('/upload', (req, res) => {
        entered += 1;
        onEnter();
        let bytes = 0;
        req.on('data', (d: Buffer) => (bytes += d.length));
        req.on('end', () => void res.json({ bytes }));
      });
      a.get('/hold', async (_req, res) => {
        entered += 1;
        onEnter();
        await released;
        res.json({ held: true });
      });
    },
  });
  const service = await listen({ app, host: '127.0.0.1', port: 0, logger, maxConnections });
  running.push(service);
  const inside = (n: number) =>
    new Promise<void>((resolve) => {
      onEnter = () => void (entered >= n && resolve());
      onEnter();
    });
  return { service, release, inside };
}

/** An upload whose body announces `length` bytes and sends `first` of them now; `rest` sends what is left. */
function upload(port: number, length: number, first: number): Raw & { rest(): void } {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  let received = '';
  const answer = new Promise<string>((resolve) => {
    socket.setEncoding('utf8').on('data', (d: string) => {
      received += d;
      if (received.includes('\r\n\r\n')) resolve(received);
    });
    socket.once('close', () => resolve(received));
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n${'x'.repeat(first)}`,
  );
  return { socket, answer, closed, rest: () => void socket.write('x'.repeat(length - first)) };
}

describe('the connection bound', () => {
  it(`lets a new client in past 1,050 idle keep-alive connections under a 1,024-descriptor limit (${DEFAULT_MAX_CONNECTIONS} kept)`, async () => {
    const script = join(dir, 'service.mts');
    const kit = (file: string) => JSON.stringify(pathToFileURL(join(ROOT, 'services', 'kit', file)).href);
    writeFileSync(
      script,
      [
        `import { createApp } from ${kit('app.ts')};`,
        `import { createLogger } from ${kit('logger.ts')};`,
        `import { listen } from ${kit('server.ts')};`,
        `const logger = createLogger('child', 'silent');`,
        `const app = createApp({ logger, extraRoutes: (a) => a.get('/hello', (_q, r) => void r.json({ hello: true })) });`,
        `const s = await listen({ app, host: '127.0.0.1', port: 0, logger });`,
        `process.stdout.write(s.port + '\\n');`,
      ].join('\n'),
    );
    const child = spawn('sh', ['-c', 'ulimit -n 1024 && exec "$0" --import tsx "$1"', process.execPath, script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const port = await new Promise<number>((resolve, reject) => {
        child.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
        child.once('exit', (code) => reject(new Error(`the service exited (${code}): ${stderr}`)));
      });
      const idle: Raw[] = [];
      for (let batch = 0; batch < 21; batch++) {
        const made = Array.from({ length: 50 }, () => request(port, '/hello'));
        await Promise.all(made.map((r) => r.answer));
        idle.push(...made);
      }
      expect(idle).toHaveLength(1_050);
      const res = await fetch(`http://127.0.0.1:${port}/hello`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ hello: true });
      // The oldest idle ones were closed to make room: at most the bound stays open.
      let closed = 0;
      await new Promise<void>((resolve) => {
        for (const r of idle) void r.closed.then(() => ++closed >= idle.length - DEFAULT_MAX_CONNECTIONS && resolve());
      });
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('closes the longest-idle connection first and never one with a request in flight', async () => {
    const { service, release, inside } = await serve(8);
    const held = request(service.port, '/hold');
    await inside(1);
    const idle: Raw[] = [];
    for (let i = 0; i < 7; i++) {
      const r = request(service.port, '/hello');
      expect(await r.answer).toContain('200 OK');
      idle.push(r);
    }
    const newcomer = request(service.port, '/hello');
    expect(await newcomer.answer).toContain('200 OK');
    await idle[0]!.closed;
    expect(held.socket.destroyed).toBe(false);
    release();
    const answer = await held.answer;
    expect(answer).toContain('200 OK');
    expect(answer).toContain('"held":true');
  });

  it('answers a newcomer 503 with a sentence when every connection is busy, and lets it in once one is free', async () => {
    const { service, release, inside } = await serve(2);
    const first = request(service.port, '/hold');
    const second = request(service.port, '/hold');
    await inside(2);
    const newcomer = request(service.port, '/hello');
    const refused = await newcomer.answer;
    expect(refused).toMatch(/^HTTP\/1\.1 503 /);
    expect(refused.toLowerCase()).toContain('connection: close');
    expect(refused).toContain('try again in a moment');
    await newcomer.closed;
    release();
    expect(await first.answer).toContain('200 OK');
    expect(await second.answer).toContain('200 OK');
    const later = await fetch(`${service.url}/hello`);
    expect(later.status).toBe(200);
  });

  it('closes the slowest upload with a 408 that says why, rather than refuse a newcomer, and keeps a faster one', async () => {
    const { service, inside } = await serve(4);
    // Three uploads that sent one byte of a body that never finishes, and one that sent 64 KB of its body.
    const slow = [0, 1, 2].map(() => upload(service.port, 1_000_000, 1));
    const faster = upload(service.port, 1_000_000, 65_536);
    await inside(4);
    const newcomer = request(service.port, '/hello');
    expect(await newcomer.answer).toContain('200 OK');
    const cut = await Promise.race(slow.map((u) => u.closed.then(() => u)));
    const answer = await cut.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer).toContain('short of connections');
    expect(answer).toContain('body was arriving slower than any other');
    expect(faster.socket.destroyed).toBe(false);
    faster.rest();
    expect(await faster.answer).toContain('"bytes":1000000');
  });

  it('never closes a client that connected a moment ago and is still sending its headers: an upload goes first', async () => {
    const { service, inside } = await serve(3);
    const slow = [0, 1].map(() => upload(service.port, 1_000_000, 1));
    await inside(2);
    // Connected, its headers not sent yet (a real client a moment before it writes).
    const quiet = connect(service.port, '127.0.0.1');
    sockets.push(quiet);
    quiet.on('error', () => undefined);
    await new Promise<void>((resolve) => quiet.once('connect', () => resolve()));
    const newcomer = request(service.port, '/hello');
    expect(await newcomer.answer).toContain('200 OK');
    await Promise.race(slow.map((u) => u.closed));
    let received = '';
    quiet.setEncoding('utf8').on('data', (d: string) => (received += d));
    const answered = new Promise<void>((resolve) => quiet.on('data', () => received.includes('\r\n\r\n') && resolve()));
    quiet.write('GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await answered;
    expect(received).toContain('200 OK');
  });
});
