/**
 * Loading, empty and error states, and the hook that runs a console call for a view. Every state says
 * what is happening or what the user can do about it.
 */
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { call } from './transport.ts';

export type Load<T> = { state: 'loading' } | { state: 'error'; message: string } | { state: 'done'; data: T };

/** A console call as a view holds it: how its answer stands, and how to ask again. */
export interface Call<T> {
  load: Load<T>;
  reload: () => void;
}

/**
 * Runs `method` when `key` changes (and on reload); an optional interval refreshes it quietly, and so
 * does a change of `version` (after an action: what is on screen stays until the new answer is in).
 */
export function useCall<T>(
  method: string,
  params: unknown,
  key: string,
  refreshMs?: number,
  version?: number,
): Call<T> {
  const [load, setLoad] = useState<Load<T>>({ state: 'loading' });
  const [round, setRound] = useState(0);
  const latest = useRef(0);
  const shownKey = useRef<string | undefined>(undefined);
  const answered = useRef(true);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  useEffect(() => {
    const ticket = ++latest.current;
    // A new subject shows the loading state; a refresh of the same one keeps what is on screen.
    if (shownKey.current !== key) setLoad({ state: 'loading' });
    shownKey.current = key;
    answered.current = false;
    call<T>(method, params)
      .then(
        (data) => ticket === latest.current && setLoad({ state: 'done', data }),
        (err: Error) => ticket === latest.current && setLoad({ state: 'error', message: err.message }),
      )
      .finally(() => ticket === latest.current && (answered.current = true));
  }, [method, key, round, version]);
  useEffect(() => {
    if (!refreshMs) return;
    // A refresh waits for the answer before asking again: on a slow machine, answers slower than the
    // interval would otherwise each be overtaken by the next question and none would ever show.
    const timer = setInterval(() => answered.current && reload(), refreshMs);
    return () => clearInterval(timer);
  }, [refreshMs, reload]);
  return { load, reload };
}

export function Loading({ what }: { what: string }) {
  return html`<p class="state loading" role="status">Loading ${what}…</p>`;
}

export function Empty({ children }: { children: ComponentChildren }) {
  return html`<div class="state empty" role="status">${children}</div>`;
}

export function Failed({ message, retry }: { message: string; retry?: () => void }) {
  return html`<div class="state error" role="alert">
    <p>${message}</p>
    ${retry ? html`<button type="button" onClick=${retry}>Try again</button>` : null}
  </div>`;
}

/** Renders a call's answer: the loading and error states (with "Try again") here, the data by `render`. */
export function Loaded<T>({ call, what, render }: { call: Call<T>; what: string; render: (data: T) => unknown }) {
  const { load, reload } = call;
  if (load.state === 'loading') return html`<${Loading} what=${what} />`;
  if (load.state === 'error') return html`<${Failed} message=${load.message} retry=${reload} />`;
  return render(load.data);
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '—';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return `${h} h ${m % 60} min`;
}

export function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined) return '—';
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** One way the console writes a time, everywhere (entries, change log, logs, credentials): local, day and minute. */
const TIME_FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
/** The same with seconds, where lines a second apart must read apart (a service's log). */
const SECONDS_FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function formatTime(iso: unknown, seconds = false): string {
  if (typeof iso !== 'string' && typeof iso !== 'number') return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return (seconds ? SECONDS_FORMAT : TIME_FORMAT).format(d);
}

/** "2 min ago", "3 h ago", "just now": how long since a time, for a person (the hub's last call). */
export function timeAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} days ago`;
}

/** The list inside an answer: the answer itself, or its `member` (or `items`/`data`) array. */
export function itemsOf<T>(data: unknown, member: string): T[] {
  if (Array.isArray(data)) return data as T[];
  const d = data as Record<string, unknown> | null;
  for (const name of [member, 'items', 'data']) {
    if (Array.isArray(d?.[name])) return d[name] as T[];
  }
  return [];
}
