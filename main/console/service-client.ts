/**
 * How the console reaches the services: plain HTTP on loopback, with tokens minted from the identity
 * service with the local account's session credential. Identity itself is called only on its socket in
 * its data folder, never on its port: every call to it carries the session credential, and only what
 * answers there is identity. The provider, which takes no credential, is called on its socket too, so
 * its counters tell the console's calls from a hub's. Tokens live in this module's memory only; they are never part of a result
 * or an error message.
 */
import { SERVICE_CATALOGUE, type ServiceName } from '../../common/services.ts';
import { overSocket, type IdentityChannel } from '../../services/kit/identity-channel.ts';
import type { ServiceState } from '../../common/states.ts';
import type { Supervisor } from '../supervisor/types.ts';

/** A failure the console shows to a person: a sentence that says what to do, and the HTTP status if any. */
export class ConsoleError extends Error {
  override name = 'ConsoleError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** How a sentence names a service: "persona store". */
const labelOf = (service: ServiceName) => SERVICE_CATALOGUE[service].label;

const CALL_TIMEOUT_MS = 15_000;
/** A cached token is used only while it has at least this long left. */
const TOKEN_MARGIN_MS = 60_000;

export interface ServiceRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fixed text, or built by `urlPath` when it carries input (common/url-path.ts); the query goes in `query`. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Answer these statuses with their body instead of failing (the provider's /ready answers 503 with a body). */
  acceptStatus?: number[];
}

/** `T`: the body's type as the service's shapes declare it (a test checks the real answers against those schemas). */
export interface ServiceAnswer<T = unknown> {
  status: number;
  body: T;
  /** The answer's ETag, when it sent one (the persona store's entries and card): what a conditional write sends back. */
  etag?: string;
}

/** Why a service does not answer, by its state, and what the person can do about it. */
const UNREACHABLE: Record<ServiceState, string> = {
  stopped: ' (it is stopped). Start it in the Services panel, then try again.',
  stopping: ' (it is stopping). Start it again in the Services panel, then try again.',
  starting: ' yet (it is starting). Wait a moment, then try again; the Services panel shows its progress.',
  'backing-off':
    ' (it crashed and restarts in a moment). Wait, then try again; the Services panel shows why it crashed.',
  crashed: ' (it crashed and restarts in a moment). Wait, then try again; the Services panel shows why it crashed.',
  'gave-up':
    ' (it gave up: see its last error and log in the Services panel). Fix what that says, then start it there and try again.',
  live: '. See its log in the Services panel, and restart it there if it stays so.',
  waiting: '. It waits for something you can give it: the overview says what.',
  ready: '. See its log in the Services panel, and restart it there if it stays so.',
  degraded: '. See its log in the Services panel, and restart it there if it stays so.',
};

export class ServiceClient {
  private readonly tokens = new Map<string, { token: string; expiresAt: number }>();
  private identityChannel?: IdentityChannel;
  private providerChannel?: IdentityChannel;

  constructor(private readonly supervisor: Supervisor) {}

  /** Identity's socket, made once (its keep-alive connection is reused). */
  private identity(): IdentityChannel {
    this.identityChannel ??= overSocket(this.supervisor.url('identity'), this.supervisor.identitySocket());
    return this.identityChannel;
  }

  /**
   * The provider's socket, made once: it takes no credential, so calling it there is what keeps the
   * console's calls apart from a hub's in its counters (services/kit/callers.ts). The channel is the
   * kit's owner-only socket client, which checks the folder and the socket are this user's.
   */
  private provider(): IdentityChannel {
    this.providerChannel ??= overSocket(this.supervisor.url('model-provider'), this.supervisor.providerSocket());
    return this.providerChannel;
  }

  /** Calls a service with the credential it expects: a minted token, the session credential (identity) or none. */
  async call<T = unknown>(service: ServiceName, request: ServiceRequest): Promise<ServiceAnswer<T>> {
    const audience = SERVICE_CATALOGUE[service].audience ?? undefined;
    let answer = await this.send(service, request, await this.authorization(service, audience));
    if (answer.status === 401 && audience) {
      // A token minted before identity rotated its keys or restarted: mint a fresh one, once.
      this.tokens.delete(audience);
      answer = await this.send(service, request, await this.authorization(service, audience));
    }
    if ((answer.status >= 200 && answer.status < 300) || request.acceptStatus?.includes(answer.status))
      return answer as ServiceAnswer<T>;
    throw new ConsoleError(
      `The ${labelOf(service)} ${refusalWords(answer.status)}: ${reasonOf(answer.body)}`,
      answer.status,
    );
  }

  /** A service's counters (`GET /metrics`, Prometheus text); it needs no credential, only a loopback caller. */
  async metricsText(service: ServiceName): Promise<string> {
    let res: Response;
    try {
      res = await fetch(new URL('/metrics', this.supervisor.url(service)), {
        headers: { accept: 'text/plain' },
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
        redirect: 'error',
      });
    } catch (err) {
      throw this.unreachable(service, err);
    }
    const text = await res.text();
    if (res.status === 503 && !this.serving(service)) throw this.unreachable(service, undefined);
    if (res.status === 404)
      throw new ConsoleError(`The ${labelOf(service)} does not count its work yet (it has no /metrics).`, 404);
    if (!res.ok) throw new ConsoleError(`The ${labelOf(service)} answered ${res.status} for its counters.`, res.status);
    return text;
  }

  private async authorization(service: ServiceName, audience: string | undefined): Promise<string | undefined> {
    const takes = SERVICE_CATALOGUE[service].credential;
    if (takes === 'none') return undefined;
    const credential = await this.localCredential();
    if (takes === 'session-credential') return `Bearer ${credential}`;
    if (!audience) return undefined;
    const cached = this.tokens.get(audience);
    if (cached && cached.expiresAt - Date.now() > TOKEN_MARGIN_MS) return `Bearer ${cached.token}`;
    const minted = await this.send(
      'identity',
      { method: 'POST', path: '/v1/auth/service-token', body: { audience } },
      `Bearer ${credential}`,
    );
    const body = minted.body as { token?: unknown; expires_at?: unknown } | undefined;
    if (minted.status !== 200 || typeof body?.token !== 'string') {
      throw new ConsoleError(
        `The identity service would not issue a token for the ${labelOf(service)} (${minted.status}: ${reasonOf(minted.body)}). Check the identity service in the Services panel.`,
        502,
      );
    }
    const expiresAt = typeof body.expires_at === 'string' ? Date.parse(body.expires_at) : Date.now() + 5 * 60_000;
    this.tokens.set(audience, { token: body.token, expiresAt });
    return `Bearer ${body.token}`;
  }

  private async localCredential(): Promise<string> {
    try {
      return await this.supervisor.localCredential();
    } catch {
      throw new ConsoleError(
        'The local account is not available yet: the identity service has not created it. Start the identity service in the Services panel, then try again.',
        503,
      );
    }
  }

  private async send(
    service: ServiceName,
    request: ServiceRequest,
    authorization: string | undefined,
  ): Promise<ServiceAnswer> {
    const url = new URL(request.path, this.supervisor.url(service));
    // The last guard: a path that URL resolution would change (a dot segment, "//", a "?") is never sent.
    if (
      !request.path.startsWith('/') ||
      url.pathname !== request.path ||
      url.origin !== new URL(this.supervisor.url(service)).origin
    ) {
      throw new ConsoleError(
        'A name in the request would have changed where it goes (a "." or ".." segment); nothing was sent. Choose another name.',
        422,
      );
    }
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined && value !== '') url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { ...request.headers, accept: 'application/json' };
    if (authorization) headers.authorization = authorization;
    // Identity and the provider on their sockets in their data folders; the others on their ports, with a token.
    const channel =
      service === 'identity' ? this.identity() : service === 'model-provider' ? this.provider() : undefined;
    if (channel) {
      try {
        const { status, body } = await channel.call({
          method: request.method ?? 'GET',
          path: url.pathname + url.search,
          headers,
          body: request.body,
          timeoutMs: CALL_TIMEOUT_MS,
        });
        return { status, body };
      } catch (err) {
        throw this.unreachable(service, err);
      }
    }
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, {
        method: request.method ?? 'GET',
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
        redirect: 'error',
      });
    } catch (err) {
      throw this.unreachable(service, err);
    }
    const text = await res.text();
    // No process of the service serves its port: the supervisor answered in its place (held-port.ts); say it in the console's words.
    if (res.status === 503 && !this.serving(service)) throw this.unreachable(service, undefined);
    let body: unknown = undefined;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
    }
    const etag = res.headers.get('etag');
    return { status: res.status, body, ...(etag ? { etag } : {}) };
  }

  /** Whether a process of the service listens on its port now (the supervisor answers for it otherwise). */
  private serving(service: ServiceName): boolean {
    const state = this.supervisor.status().find((s) => s.name === service)?.state;
    return state === 'live' || state === 'waiting' || state === 'ready' || state === 'degraded';
  }

  private unreachable(service: ServiceName, err: unknown): ConsoleError {
    const label = labelOf(service);
    const state = this.supervisor.status().find((s) => s.name === service)?.state;
    if ((err as Error)?.name === 'TimeoutError') {
      return new ConsoleError(
        `The ${label} did not answer within ${CALL_TIMEOUT_MS / 1000} s; see its log in the Services panel.`,
        504,
      );
    }
    return new ConsoleError(`The ${label} is not answering${UNREACHABLE[state ?? 'ready']}`, 503);
  }
}

/** How a sentence says a service did not do what was asked, in words (the status stays in ConsoleError.status). */
function refusalWords(status: number): string {
  if (status === 412) return 'did not write it, because it changed since it was read';
  if (status === 404) return 'did not find it';
  if (status >= 500) return 'could not do it';
  return 'refused it';
}

/** The sentence a service gave: a problem's detail, the provider envelope's message, or a generic hint. */
export function reasonOf(body: unknown): string {
  const b = body as { detail?: unknown; title?: unknown; error?: { message?: unknown } } | undefined;
  if (typeof b?.detail === 'string') return b.detail;
  if (typeof b?.error?.message === 'string') return b.error.message;
  if (typeof b?.title === 'string') return b.title;
  return 'no explanation was given; see its log in the Services panel.';
}
