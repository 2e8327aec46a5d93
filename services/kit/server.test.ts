import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from './app.ts';
import { createLogger } from './logger.ts';
import { listen, type ListenOptions, type RunningService } from './server.ts';

const logger = createLogger('server-test', 'silent');
const running: RunningService[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

/** A service whose /answer route answers when the test releases it. */
async function serve(timeouts: Partial<ListenOptions>) {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  const app = createApp({
    logger,
    extraRoutes: (a) => {
      a.get('/healthy', (_req, res) => void res.json({ status: 'ok' }));
      a.post('/answer', async (req, res) => {
        entered();
        await released;
        res.json({ got: req.body as unknown });
      });
    },
  });
  const service = await listen({ app, host: '127.0.0.1', port: 0, logger, ...timeouts });
  running.push(service);
  return { service, release, inside };
}

/** A raw connection that sends `text` and never more; resolves, when the server closes it, with what the server sent. */
function sendAndHold(port: number, text: string): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('utf8').on('data', (d: string) => (received += d));
  socket.on('error', () => undefined);
  socket.write(text);
  return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve(received))) };
}

/** The problem in a raw HTTP answer. */
function problemOf(answer: string): Record<string, unknown> {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
}

describe('the server\u2019s timeouts (slow clients)', () => {
  it('closes a connection whose headers never finish (Slowloris) with 408, and keeps answering others', async () => {
    const { service } = await serve({ headersTimeoutMs: 150, requestTimeoutMs: 10_000 });
    const slow = sendAndHold(service.port, 'GET /healthy HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a');
    const answer = await slow.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(problemOf(answer)).toMatchObject({
      status: 408,
      title: 'Request Timeout',
      detail:
        "The request did not arrive in time: this service waits at most 150 ms for a request's headers and 10 s for the whole request; send its headers and body at once, without pauses.",
    });
    expect((await fetch(`${service.url}/healthy`)).status).toBe(200);
  });

  it('closes a connection whose body never finishes with 408', async () => {
    const { service } = await serve({ headersTimeoutMs: 150, requestTimeoutMs: 300 });
    const slow = sendAndHold(
      service.port,
      'POST /answer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a"',
    );
    expect(await slow.closed).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('does not cut an answer that takes longer than the request timeout once the request has arrived', async () => {
    const { service, release, inside } = await serve({ headersTimeoutMs: 200, requestTimeoutMs: 200 });
    const answer = fetch(`${service.url}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"n":1}',
    });
    await inside;
    // A slow client that connects after the request arrived is cut at its own deadline, which is later than the request's.
    const later = sendAndHold(service.port, 'GET /healthy HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    expect(await later.closed).toMatch(/^HTTP\/1\.1 408 /);
    release();
    const res = await answer;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ got: { n: 1 } });
  });

  it('answers what Node refuses before any route (not HTTP, headers over 16 KB) with a problem that says what to change', async () => {
    const { service } = await serve({});
    const cases: [string, number, RegExp][] = [
      ['GET /\u0001 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 400, /not valid HTTP\/1\.1/],
      ['NONSENSE\r\n\r\n', 400, /not valid HTTP\/1\.1/],
      [
        'POST /answer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n',
        400,
        /body framing/,
      ],
      [`GET /healthy?${'q'.repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, 431, /shorter URL/],
      [
        `GET /healthy HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`,
        431,
        /fewer or smaller headers/,
      ],
    ];
    for (const [text, status, detail] of cases) {
      const answer = await sendAndHold(service.port, text).closed;
      expect(answer, text.slice(0, 40)).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(answer).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/i);
      expect(problemOf(answer)).toMatchObject({ status, detail: expect.stringMatching(detail) });
    }
  });

  it('answers such a refusal on a kept-alive connection that has already carried an answer', async () => {
    const { service } = await serve({});
    const first = 'GET /healthy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const second = `GET /healthy HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`;
    const held = sendAndHold(service.port, first);
    // The second request goes once the first is answered, as a keep-alive client sends it.
    held.socket.on('data', (d: string) => {
      if (d.includes('{"status":"ok"}')) held.socket.write(second);
    });
    const answer = await held.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\n\{"status":"ok"\}HTTP\/1\.1 431 /);
    expect(JSON.parse(answer.slice(answer.lastIndexOf('\r\n\r\n') + 4))).toMatchObject({
      status: 431,
      detail: expect.stringContaining('shorter URL'),
    });
  });

  it('refuses a headers timeout longer than the request timeout', async () => {
    await expect(serve({ headersTimeoutMs: 2_000, requestTimeoutMs: 1_000 })).rejects.toThrow(
      /headersTimeoutMs must not exceed requestTimeoutMs/,
    );
  });
});
