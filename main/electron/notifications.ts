/**
 * When the desktop app shows a native notification, as pure functions of what changed (desktop.ts shows
 * them with Electron's Notification): a service gave up, a signal failed for good, the CLI signed out, a
 * hub credential expires within a week.
 * Each kind can be turned off from the tray (settings `notifications`).
 */
import type { ServiceStatus } from '../../common/contract.ts';
import { SERVICE_TITLES } from '../../common/services.ts';
import type { Settings } from './settings-schema.ts';

export type NoticeKind = keyof Settings['notifications'];

export interface Notice {
  kind: NoticeKind;
  title: string;
  body: string;
}

/** What a status change tells the person, if anything: a service that gave up, or a CLI that was signed in and no longer is. */
export function statusNotice(previous: ServiceStatus | undefined, next: ServiceStatus): Notice | undefined {
  if (next.state === 'gave-up' && previous?.state !== 'gave-up') {
    return {
      kind: 'serviceGaveUp',
      title: `${SERVICE_TITLES[next.name]} gave up`,
      body: next.lastError ?? 'It crashed too often and was left stopped: open the console to read its log.',
    };
  }
  // Only a CLI that was working: at a first launch the guide, not a notification, asks to sign in.
  const signedOut = next.name === 'model-provider' && next.state === 'waiting' && next.waitingOn?.includes('login');
  const wasWorking = previous?.state === 'ready' || previous?.state === 'degraded';
  if (signedOut && wasWorking) {
    return {
      kind: 'cliSignedOut',
      title: 'The CLI signed out',
      body: 'The chat-model provider cannot answer until you sign in again: open the console and follow "Sign in to the CLI".',
    };
  }
  return undefined;
}

/**
 * Signals that failed for good since the last look. The first look only learns which had failed
 * already (before this app started), so it tells nothing; `seen` is updated in place.
 */
export function signalNotices(
  seen: { ids: Set<string>; first: boolean },
  items: readonly { id?: unknown; signal?: unknown; repo?: unknown }[],
): Notice[] {
  const failed = items.filter(
    (i): i is { id: string; signal: 'failed'; repo?: unknown } => typeof i.id === 'string' && i.signal === 'failed',
  );
  const fresh = failed.filter((i) => !seen.ids.has(i.id));
  for (const i of fresh) seen.ids.add(i.id);
  const first = seen.first;
  seen.first = false;
  if (first || fresh.length === 0) return [];
  const where = fresh.length === 1 && typeof fresh[0]!.repo === 'string' ? ` (${fresh[0]!.repo})` : '';
  return [
    {
      kind: 'signalFailed',
      title:
        fresh.length === 1 ? 'A signal could not reach your hub' : `${fresh.length} signals could not reach your hub`,
      body: `The gateway gave up delivering${where} after every attempt: open the console's Platform page to see why.`,
    },
  ];
}

/**
 * Hub credentials that expire within a week, each told once (`told` is updated in place): the hub is cut off
 * when one expires, so the person makes the next one before.
 */
export function expiryNotices(
  told: Set<string>,
  expiring: readonly { id: string; label: string | null; expires_at: string | null }[],
): Notice[] {
  return expiring
    .filter((c) => !told.has(c.id))
    .map((c) => {
      told.add(c.id);
      return {
        kind: 'credentialExpiring' as const,
        title: `The hub credential \u201c${c.label ?? c.id}\u201d expires soon`,
        body: `It stops working on ${new Date(c.expires_at!).toLocaleString()}: make a new one on the console\u2019s Connect a hub page and give it to the hub.`,
      };
    });
}

/** Whether the person wants this kind shown. */
export function wanted(notice: Notice, settings: Pick<Settings, 'notifications'>): boolean {
  return settings.notifications[notice.kind];
}

export const NOTICE_LABELS: Readonly<Record<NoticeKind, string>> = {
  serviceGaveUp: 'When a service gives up',
  signalFailed: 'When a signal fails for good',
  cliSignedOut: 'When the CLI signs out',
  credentialExpiring: 'A week before a hub credential expires',
};
