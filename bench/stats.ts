/** Small helpers shared by the benchmark scripts: percentiles over measured samples, printing, a process's memory. */
import { readFileSync } from 'node:fs';

export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return Number.NaN;
  const i = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[i]!;
}

export function summarize(samplesMs: number[]): { p50: number; p95: number; p99: number; n: number } {
  const s = [...samplesMs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), n: s.length };
}

export const ms = (x: number) => `${x.toFixed(2)} ms`;

export async function time<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = process.hrtime.bigint();
  const out = await fn();
  return [Number(process.hrtime.bigint() - t0) / 1e6, out];
}

/** A process's resident memory in MB, read from /proc (Linux); NaN where there is none. */
export function rssMb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** The same, as printed ("412 MB"). */
export const rss = (pid: number): string => {
  const mb = rssMb(pid);
  return Number.isNaN(mb) ? '(no /proc here)' : `${mb.toFixed(0)} MB`;
};
