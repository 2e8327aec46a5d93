import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { createLogger } from '../../services/kit/logger.ts';
import { startRepohostGateway, type RunningGateway } from '../../services/repohost-gateway/service.ts';
import { startTestIdentity, tempDir, type TestIdentity } from '../support/identity.ts';
import { startGitHubDouble, type GitHubDouble } from './double.ts';

/**
 * Everything the gateway's tests run against, all real: the GitHub double, the embedded identity
 * service (with the gateway registered as repohost-api and its platform URL pointing at the double),
 * the gateway itself on a temp data folder, and a receiver for signals.
 */

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { detail?: string; items?: Record<string, unknown>[]; total?: number };
  text: string;
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** Epoch ms when it arrived. */
  at: number;
}

export interface World {
  double: GitHubDouble;
  identity: TestIdentity;
  gateway: RunningGateway;
  serviceToken: string;
  dataDir: string;
  /** Every line the gateway logged. */
  logs: string[];
  /** Every answer the tests received from the gateway, for the projection check. */
  answers: { method: string; path: string; status: number; body: unknown }[];
  /** Signals arrive here; it answers `status` with `headers` (for example a Retry-After with 429). */
  receiver: {
    url: string;
    received: Received[];
    status: number;
    headers: Record<string, string>;
    /** Resolves once `ok` holds of what arrived: looked at now and at each arrival. */
    when(ok: (received: Received[]) => boolean): Promise<void>;
  };
  /** A token for repohost-api of the local account. */
  token(audience?: string): Promise<string>;
  /** PUTs a platform connection for a profile at the identity service. */
  connect(profile: string, connection: Record<string, unknown>): Promise<void>;
  call(
    method: string,
    path: string,
    options?: { body?: unknown; profile?: string | null; token?: string | null; headers?: Record<string, string> },
  ): Promise<Answer>;
  restartGateway(extraEnv?: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

export async function startWorld(gatewayEnv: Record<string, string> = {}): Promise<World> {
  const double = await startGitHubDouble();
  const serviceToken = randomBytes(24).toString('hex');
  const identity = await startTestIdentity({
    IDENTITY_SERVICE_TOKENS: `repohost-api=${serviceToken}`,
    IDENTITY_PLATFORM_URL: double.url,
  });
  const dataDir = tempDir('repohost');
  const logs: string[] = [];
  const answers: World['answers'] = [];

  const received: Received[] = [];
  const arrivals = new Set<() => void>();
  const receiverState = { status: 200, headers: {} as Record<string, string> };
  const receiver: Server = createServer((req, res) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at });
      res.writeHead(receiverState.status, receiverState.headers).end();
      for (const look of [...arrivals]) look();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const env = (extra: Record<string, string>) => ({
    REPOHOST_DATA_DIR: dataDir,
    REPOHOST_PORT: '0',
    ...identity.trust('REPOHOST_'),
    REPOHOST_PLATFORM_URL: double.url,
    REPOHOST_IDENTITY_SERVICE_TOKEN: serviceToken,
    REPOHOST_WRITE_SPACING_MS: '0',
    REPOHOST_SIGNAL_RETRY_BASE_MS: '50',
    REPOHOST_LOG_LEVEL: 'debug',
    ...gatewayEnv,
    ...extra,
  });
  const logger = () =>
    createLogger('repohost-gateway', gatewayEnv.REPOHOST_LOG_LEVEL ?? 'debug', {
      write: (line: string) => void logs.push(line),
    });
  let gateway = await startRepohostGateway(env({}), logger());

  const world: World = {
    double,
    identity,
    get gateway() {
      return gateway;
    },
    serviceToken,
    dataDir,
    logs,
    answers,
    receiver: {
      url: receiverUrl,
      received,
      get status() {
        return receiverState.status;
      },
      set status(s: number) {
        receiverState.status = s;
      },
      get headers() {
        return receiverState.headers;
      },
      set headers(h: Record<string, string>) {
        receiverState.headers = h;
      },
      when(ok) {
        return new Promise<void>((resolve) => {
          const look = () => {
            if (!ok(received)) return;
            arrivals.delete(look);
            resolve();
          };
          arrivals.add(look);
          look();
        });
      },
    },
    token: (audience = 'repohost-api') => identity.mint(identity.localCredential, audience),
    async connect(profile, connection) {
      const res = await fetch(`${identity.url}/v1/connections/${profile}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${identity.localCredential}`, 'content-type': 'application/json' },
        body: JSON.stringify(connection),
      });
      if (res.status !== 200) throw new Error(`connect failed: ${res.status} ${await res.text()}`);
    },
    async call(method, path, options = {}) {
      const token = options.token === undefined ? await world.token() : options.token;
      const profile = options.profile === undefined ? 'work' : options.profile;
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (token) headers.authorization = `Bearer ${token}`;
      if (profile) headers['x-identity-profile'] = profile;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${gateway.url}${path}`, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      const text = await res.text();
      const body =
        text && (res.headers.get('content-type') ?? '').includes('json')
          ? (JSON.parse(text) as Answer['body'])
          : ({} as Answer['body']);
      answers.push({ method, path: path.split('?')[0]!, status: res.status, body });
      return { status: res.status, headers: res.headers, body, text };
    },
    async restartGateway(extra = {}) {
      await gateway.close();
      gateway = await startRepohostGateway(env(extra), logger());
    },
    async close() {
      await gateway.close();
      await identity.close();
      await double.close();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return world;
}

/**
 * Checks every successful answer the tests received against the gateway's own /openapi.json: each
 * must be a documented route and carry no member outside its schema. Returns how many answers were
 * checked per documented path and the members found outside (empty when the projection holds).
 */
export async function projectionCheck(
  world: World,
): Promise<{ checked: Record<string, number>; undocumented: string[]; outside: string[] }> {
  const doc = (await (await fetch(`${world.gateway.url}/openapi.json`)).json()) as Record<string, unknown>;
  const paths = doc.paths as Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }> }>
  >;
  const routes = Object.entries(paths).map(([template, item]) => ({
    template,
    regex: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
    item,
  }));
  const checked: Record<string, number> = {};
  const undocumented: string[] = [];
  const outside: string[] = [];
  for (const a of world.answers) {
    if (a.status >= 300) continue;
    const route = routes.find((r) => r.regex.test(a.path) && r.item[a.method.toLowerCase()]);
    if (!route) {
      undocumented.push(`${a.method} ${a.path}`);
      continue;
    }
    const schema =
      route.item[a.method.toLowerCase()]!.responses[String(a.status)]?.content?.['application/json']?.schema;
    if (!schema) continue;
    outside.push(...membersOutside(a.body, schema, doc).map((m) => `${a.method} ${a.path}: ${m}`));
    checked[`${a.method} ${route.template}`] = (checked[`${a.method} ${route.template}`] ?? 0) + 1;
  }
  return { checked, undocumented, outside };
}

/** Members of `value` that its OpenAPI (3.1) schema does not name, as paths; `doc` is the gateway's /openapi.json. */
export function membersOutside(
  value: unknown,
  schema: Record<string, unknown> | undefined,
  doc: Record<string, unknown>,
  at = '$',
): string[] {
  if (!schema || value === null || typeof value !== 'object') return [];
  const resolve = (s: Record<string, unknown>): Record<string, unknown> => {
    let n = s;
    while (typeof n.$ref === 'string') {
      n = (n.$ref as string)
        .replace(/^#\//, '')
        .split('/')
        .reduce<Record<string, unknown>>((acc, p) => acc[p] as Record<string, unknown>, doc);
    }
    return n;
  };
  const variants = (s: Record<string, unknown>): Record<string, unknown>[] => {
    const n = resolve(s);
    const subs = [
      ...((n.allOf as Record<string, unknown>[]) ?? []),
      ...((n.anyOf as Record<string, unknown>[]) ?? []),
      ...((n.oneOf as Record<string, unknown>[]) ?? []),
    ];
    return [n, ...subs.flatMap(variants)];
  };
  const all = variants(schema);
  if (Array.isArray(value)) {
    const items = all.find((v) => v.items)?.items as Record<string, unknown> | undefined;
    return value.flatMap((v, i) => membersOutside(v, items, doc, `${at}[${i}]`));
  }
  const props: Record<string, Record<string, unknown>> = Object.assign(
    {},
    ...all.map((v) => (v.properties as Record<string, Record<string, unknown>>) ?? {}),
  );
  const out: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (!props[k]) out.push(`${at}.${k}`);
    else out.push(...membersOutside(v, props[k], doc, `${at}.${k}`));
  }
  return out;
}
