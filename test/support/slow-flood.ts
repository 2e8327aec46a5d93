/**
 * Slow requests as another program on the same computer sends them (issue 30's finding): `count`
 * connections to one port, each a POST whose headers arrive at once and whose body announces a megabyte,
 * then sends one byte every `byteEveryMs` and never finishes. A connection the server closes is opened
 * again after `reopenAfterMs`, so the count stays up for as long as the flood runs. Shared by the test
 * (test/slow-requests.test.ts) and the benchmark (bench/desktop/slow-requests.ts).
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface SlowFloodOptions {
  port: number;
  host?: string;
  path: string;
  /** Headers besides Host, Content-Type and Content-Length (a token, for a route that takes one). */
  headers?: Record<string, string>;
  count: number;
  byteEveryMs?: number;
  reopenAfterMs?: number;
}

export class SlowFlood {
  private readonly sockets = new Set<Socket>();
  private readonly host: string;
  private running = true;
  private ticker?: NodeJS.Timeout;
  private started = 0;
  private onStarted?: () => void;
  /** Connections the server closed (made room, 408, refused), and what it answered first on them, by status. */
  closedByServer = 0;
  readonly answers = new Map<number, number>();

  constructor(private readonly options: SlowFloodOptions) {
    this.host = options.host ?? '127.0.0.1';
  }

  /** Opens every connection; resolves once each has sent its headers and the first byte of its body. */
  start(): Promise<void> {
    const sent = new Promise<void>((resolve) => (this.onStarted = resolve));
    for (let i = 0; i < this.options.count; i++) this.connectOne();
    this.ticker = setInterval(() => {
      for (const socket of this.sockets) if (socket.writable) socket.write('x');
    }, this.options.byteEveryMs ?? 5_000);
    return sent;
  }

  /** Connections open now. */
  get open(): number {
    return this.sockets.size;
  }

  stop(): void {
    this.running = false;
    clearInterval(this.ticker);
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  private connectOne(): void {
    const socket = connect(this.options.port, this.host);
    this.sockets.add(socket);
    let first = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      if (first.length < 16) first += d;
    });
    socket.on('error', () => undefined);
    socket.once('close', () => {
      this.sockets.delete(socket);
      if (!this.running) return;
      this.closedByServer += 1;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(first)?.[1] ?? 0);
      this.answers.set(status, (this.answers.get(status) ?? 0) + 1);
      setTimeout(() => this.running && this.connectOne(), this.options.reopenAfterMs ?? 1_000).unref();
    });
    const headers = Object.entries(this.options.headers ?? {})
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(
      `POST ${this.options.path} HTTP/1.1\r\nHost: ${this.host}:${this.options.port}\r\n${headers}` +
        `Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{`,
      () => {
        if (++this.started === this.options.count) this.onStarted?.();
      },
    );
  }
}

/** One request of a real client on a connection of its own (as a client whose pooled connection was closed opens one): status and time. */
export function realRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; ms: number; body: string }> {
  const started = process.hrtime.bigint();
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        agent: false,
        headers: {
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - started) / 1e6, body: text }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
