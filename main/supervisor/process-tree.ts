import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Every process whose parent chain leads to `pid` (not `pid` itself), from the process table. */
export function descendants(pid: number): number[] {
  let table: string;
  try {
    table =
      process.platform === 'win32'
        ? ''
        : execFileSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8', timeout: 2_000 });
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const row of table.split('\n')) {
    const [p, pp] = row.trim().split(/\s+/).map(Number);
    if (!p || pp === undefined || Number.isNaN(pp)) continue;
    children.set(pp, [...(children.get(pp) ?? []), p]);
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length) {
    for (const c of children.get(queue.shift()!) ?? []) {
      if (!out.includes(c)) {
        out.push(c);
        queue.push(c);
      }
    }
  }
  return out;
}

/** Resident memory of a process in bytes, or undefined when it cannot be read. */
export function residentBytes(pid: number): number | undefined {
  try {
    if (process.platform === 'linux') {
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : undefined;
    }
    if (process.platform === 'win32') return undefined;
    const kb = Number(
      execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8', timeout: 2_000 }).trim(),
    );
    return Number.isFinite(kb) && kb > 0 ? kb * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** True while the process exists and is not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
