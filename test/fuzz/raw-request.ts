/**
 * One HTTP request exactly as given: the path goes on the wire untouched (fetch would resolve `..` and
 * re-encode), the body as bytes, any Content-Type or none. Keep-alive, one request at a time.
 */
import { Agent, request } from 'node:http';

export interface RawRequest {
  method: string;
  /** Path and query as sent, e.g. `/v1/personas/%ed%a0%80?limit=1e309`. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The Content-Type to claim; undefined sends none. */
  contentType?: string;
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** Sends `req` to `base` (http://127.0.0.1:port); rejects only when no answer comes (the backstop is generous: a loaded machine). */
export function send(base: string, req: RawRequest, timeoutMs = 120_000): Promise<RawAnswer> {
  const url = new URL(base);
  const body =
    req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        method: req.method,
        path: req.path,
        headers: {
          ...req.headers,
          ...(req.contentType === undefined ? {} : { 'content-type': req.contentType }),
          ...(body === undefined ? {} : { 'content-length': String(body.length) }),
        },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** What a failure report shows of a request: method, path (long runs shortened), headers, body start. */
export function describeRequest(base: string, req: RawRequest): string {
  const shorten = (s: string) => s.replace(/(.)\1{40,}/g, (run, c: string) => `${c}{×${run.length}}`).slice(0, 400);
  const body =
    req.body === undefined
      ? ''
      : Buffer.isBuffer(req.body)
        ? ` body=<${req.body.length} bytes: ${req.body.subarray(0, 24).toString('hex')}…>`
        : ` body=${shorten(req.body)}`;
  const auth = req.headers?.authorization
    ? ` authorization=${req.headers.authorization.startsWith('Bearer ey') ? '<valid token>' : shorten(req.headers.authorization)}`
    : '';
  const others = Object.entries(req.headers ?? {})
    .filter(([k]) => k !== 'authorization')
    .map(([k, v]) => ` ${k}=${shorten(v)}`)
    .join('');
  return `${req.method} ${base}${shorten(req.path)}${req.contentType ? ` content-type=${req.contentType}` : ''}${auth}${others}${body}`;
}
