import type { z } from 'zod';
import type { LogWindow } from './shapes.ts';
import { cutBytes } from './projection.ts';

/** Caps are confessed: a window of a log says how many lines and bytes it left out. */

export const LINE_MAX_BYTES = 2_000;
export const WINDOW_MAX_LINES = 2_000;

export type WindowRequest =
  | { mode: 'tail'; lines: number }
  | { mode: 'range'; start: number; end: number }
  | { mode: 'search'; search: string; lines: number };

export function logWindow(jobId: number, text: string, request: WindowRequest): z.infer<typeof LogWindow> {
  const all = text.split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  const numbered = all.map((t, i) => ({ number: i + 1, text: t.replace(/\r$/, '') }));
  let picked: typeof numbered;
  let matches: number | null = null;
  if (request.mode === 'tail') {
    picked = numbered.slice(Math.max(0, numbered.length - Math.min(request.lines, WINDOW_MAX_LINES)));
  } else if (request.mode === 'range') {
    const end = Math.min(request.end, request.start + WINDOW_MAX_LINES - 1);
    picked = numbered.slice(request.start - 1, end);
  } else {
    const needle = request.search.toLowerCase();
    const hits = numbered.filter((l) => l.text.toLowerCase().includes(needle));
    matches = hits.length;
    picked = hits.slice(0, Math.min(request.lines, WINDOW_MAX_LINES));
  }
  const lines = picked.map((l) => ({ number: l.number, text: cutBytes(l.text, LINE_MAX_BYTES) }));
  const totalBytes = Buffer.byteLength(text);
  const returnedBytes = lines.reduce((n, l) => n + Buffer.byteLength(l.text) + 1, 0);
  return {
    job_id: jobId,
    mode: request.mode,
    lines,
    total_lines: numbered.length,
    total_bytes: totalBytes,
    cut_lines: numbered.length - lines.length,
    cut_bytes: Math.max(0, totalBytes - returnedBytes),
    matches,
  };
}
