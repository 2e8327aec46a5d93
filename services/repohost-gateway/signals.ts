import { Webhook } from 'standardwebhooks';
import { errorSummary, type Logger } from '../kit/logger.ts';
import type { SignalAddresses } from './signal-addresses.ts';
import type { SubscriptionRow, SubscriptionStore } from './store.ts';

/**
 * The one signal a subscription ends with, signed per Standard Webhooks with the subscription's own
 * secret. It says what happened, never the result. Retried with growing delays (or later, when a
 * receiver's 429/503 carries Retry-After); a 2xx, a 410 or running out of attempts ends delivery, so
 * it is never sent twice after a success the gateway saw. A stop or crash between sending and
 * recording the outcome sends it again after the restart, with the same webhook-id.
 */

/** A receiver's Retry-After is honoured up to this long (a larger one is taken as this). */
export const MAX_RETRY_AFTER_MS = 6 * 3600 * 1000;

/** Retry-After as delta-seconds or an HTTP date, in ms from `now`; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** Each attempt waits this long for the receiver's answer. */
export const ATTEMPT_TIMEOUT_MS = 15_000;

/**
 * Why an attempt that reached no 2xx did not deliver, in this service's words: never the address, the
 * receiver's own text or an error message (either may carry the address and whatever its path holds).
 */
export function attemptError(status: number, asked: number | undefined, err: unknown): string | null {
  if (status >= 200 && status < 300) return null;
  if (status === 0) {
    if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
      return `no answer within ${ATTEMPT_TIMEOUT_MS / 1000} s`;
    const code = err instanceof Error ? (err.cause as { code?: unknown } | undefined)?.code : undefined;
    // Only the error's code (ECONNREFUSED, UND_ERR_SOCKET): its message may name the address.
    return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)
      ? `no answer from the receiver (${code})`
      : 'no answer from the receiver';
  }
  if (status === 410) return 'the receiver answered 410 Gone: not tried again';
  if (status >= 300 && status < 400) return 'the receiver answered a redirect, which is not followed';
  if (asked !== undefined) return 'the receiver asked to be called again later (Retry-After)';
  return 'the receiver did not accept it';
}

export interface SignalPolicy {
  retryBaseMs: number;
  attempts: number;
}

export function signalBody(row: SubscriptionRow, at: Date): string {
  return JSON.stringify({
    type: 'subscription.ended',
    timestamp: at.toISOString(),
    // state says how it ended: `ended` (its event happened), `cancelled` (its owner cancelled it) or `expired` (event null).
    data: {
      subscription: row.id,
      kind: row.kind,
      event: row.event,
      state: row.state,
      repo: row.repo,
      target: row.target,
    },
  });
}

export class SignalSender {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  sent = 0;

  constructor(
    private readonly store: SubscriptionStore,
    private readonly policy: SignalPolicy,
    private readonly logger: Logger,
    /** Checked again before each delivery: the settings may have narrowed since the subscription was opened. */
    private readonly addresses?: SignalAddresses,
  ) {}

  /** Sends whatever is due now, then sleeps until the next retry is due. */
  kick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.deliverDue().finally(() => {
      this.running = undefined;
      void this.schedule();
    });
    return this.running;
  }

  private async schedule(): Promise<void> {
    if (this.stopped) return;
    const next = await this.store.nextSignalAt();
    if (this.timer) clearTimeout(this.timer);
    if (next === undefined) return;
    this.timer = setTimeout(() => void this.kick(), Math.max(0, next - Date.now()));
    this.timer.unref();
  }

  private async deliverDue(): Promise<void> {
    const due = await this.store.dueSignals(Date.now());
    await Promise.all(due.map((row) => this.deliver(row)));
  }

  private async deliver(row: SubscriptionRow): Promise<void> {
    if (!(await this.store.claimSignal(row.id))) return;
    const refused = this.addresses?.refusal(row.signal_url);
    if (refused) {
      await this.store.signalOutcome(row.id, 'failed', row.signal_attempts, null, {
        status: null,
        error:
          'its address is no longer allowed (REPOHOST_SIGNAL_URL_PREFIXES, REPOHOST_SIGNAL_REFUSED_PORTS): not sent',
        at: Date.now(),
      });
      this.logger.warn(
        { subscription: row.id },
        'signal given up: its address is no longer allowed (REPOHOST_SIGNAL_URL_PREFIXES, REPOHOST_SIGNAL_REFUSED_PORTS)',
      );
      return;
    }
    const at = new Date();
    const body = signalBody(row, at);
    const webhookId = `msg_${row.id}`;
    const signature = new Webhook(row.secret).sign(webhookId, at, body);
    const attempts = row.signal_attempts + 1;
    let status = 0;
    let asked: number | undefined;
    let failure: unknown;
    try {
      const res = await fetch(row.signal_url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/json',
          'webhook-id': webhookId,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body,
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      status = res.status;
      if (status === 429 || status === 503) asked = retryAfterMs(res.headers.get('retry-after'), Date.now());
      await res.body?.cancel();
    } catch (err) {
      failure = err;
      this.logger.warn({ subscription: row.id, err: errorSummary(err) }, 'signal not delivered');
    }
    const last = { status: status === 0 ? null : status, error: attemptError(status, asked, failure), at: Date.now() };
    if (status >= 200 && status < 300) {
      this.sent += 1;
      await this.store.signalOutcome(row.id, 'sent', attempts, null, last);
      this.logger.info({ subscription: row.id, attempts }, 'signal sent');
      return;
    }
    if (status === 410 || attempts >= this.policy.attempts) {
      await this.store.signalOutcome(row.id, 'failed', attempts, null, last);
      this.logger.warn({ subscription: row.id, attempts, status }, 'signal given up');
      return;
    }
    // A receiver that says when to come back (429 or 503 with Retry-After) is not called earlier.
    const backoff = this.policy.retryBaseMs * 4 ** (attempts - 1) * (0.8 + Math.random() * 0.4);
    const delay = Math.max(backoff, Math.min(asked ?? 0, MAX_RETRY_AFTER_MS));
    await this.store.signalOutcome(row.id, 'pending', attempts, Date.now() + Math.round(delay), last);
    this.logger.info(
      { subscription: row.id, attempts, status, retry_in_ms: Math.round(delay) },
      'signal will be retried',
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
