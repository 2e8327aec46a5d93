import { decodeJwt } from 'jose';
import type { TokenVerifier } from './auth.ts';
import type { IdentityChannel } from './identity-channel.ts';
import { problem } from './problem.ts';

/** How often a service asks identity about one session unless it says otherwise: a revoke reaches it within this. */
export const DEFAULT_SESSION_RECHECK_MS = 5_000;
/** Sessions whose answer is kept at once (least recently asked out): a few MB at most. */
export const SESSIONS_KEPT = 10_000;

export interface RevocationOptions {
  /** The one way to the identity service (its socket, or https): it answers `POST /v1/auth/token-status`, and only its answer counts. */
  identity: IdentityChannel;
  /** A session that stands is asked about again after this long; 0: on every request. */
  recheckMs?: number;
  /** Most sessions whose answer is kept. */
  kept?: number;
  now?: () => number;
}

export interface RevocationChecked extends TokenVerifier {
  /** Questions asked of identity so far (a test holds them to one per session per window). */
  readonly asked: number;
}

type Answer = { active: true; askedAt: number } | { active: false };

/**
 * Refuses tokens whose session credential was revoked or has expired, within `recheckMs` of it: a
 * token's signature stays good until its exp, so the service asks identity whether the session behind
 * it (its `sid`) still stands, once per session per window, questions in flight shared. A session
 * found gone stays refused without asking again (session ids are never reused). When identity cannot
 * answer and the last answer is older than the window, the request is refused with 503: failing
 * closed, since a revoke may be exactly what was missed.
 */
export function refuseRevokedSessions(verifier: TokenVerifier, options: RevocationOptions): RevocationChecked {
  const recheckMs = options.recheckMs ?? DEFAULT_SESSION_RECHECK_MS;
  const kept = options.kept ?? SESSIONS_KEPT;
  const now = options.now ?? Date.now;
  const answers = new Map<string, Answer>();
  const asking = new Map<string, Promise<Answer>>();
  let asked = 0;

  const remember = (key: string, answer: Answer) => {
    answers.delete(key);
    answers.set(key, answer);
    while (answers.size > kept) answers.delete(answers.keys().next().value!);
  };

  async function ask(key: string, token: string): Promise<Answer> {
    const askedAt = now();
    asked += 1;
    let body: { active?: unknown } | undefined;
    try {
      const res = await options.identity.call({
        method: 'POST',
        path: '/v1/auth/token-status',
        body: { token },
        timeoutMs: 3_000,
      });
      if (res.status === 200) body = res.body as typeof body;
    } catch {
      body = undefined;
    }
    if (body === undefined || typeof body !== 'object' || body === null) {
      throw problem.unavailable(
        `The identity service at ${options.identity.url} could not confirm that the session credential behind this token still stands, so the token is not accepted now; make sure the identity service is running, then try again.`,
      );
    }
    const answer: Answer = body.active === true ? { active: true, askedAt } : { active: false };
    remember(key, answer);
    return answer;
  }

  return {
    async verify(authorization) {
      const principal = await verifier.verify(authorization);
      const sid = decodeJwt(principal.token).sid;
      // Tokens without a session are asked about one by one (identity refuses them).
      const key = typeof sid === 'string' ? `${principal.account}\0${sid}` : principal.token;
      let answer = answers.get(key);
      if (answer === undefined || (answer.active && now() - answer.askedAt >= recheckMs)) {
        let running = asking.get(key);
        if (!running) {
          running = ask(key, principal.token).finally(() => asking.delete(key));
          asking.set(key, running);
        }
        answer = await running;
      }
      if (!answer.active) {
        throw problem.unauthorized(
          'The session credential this token was minted with has been revoked or has expired; ask the identity service for a new token with a current session credential.',
        );
      }
      return principal;
    },
    keysAvailable: () => verifier.keysAvailable(),
    get keySetLoads() {
      return verifier.keySetLoads;
    },
    get asked() {
      return asked;
    },
  };
}
