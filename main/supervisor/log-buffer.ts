import { mkdirSync } from 'node:fs';
import { createStream, type RotatingFileStream } from 'rotating-file-stream';
import type { LogLine, LogPage } from '../../common/contract.ts';
import type { ServiceName } from '../../common/services.ts';

/** A request line of the services' own log (the kit's) for a route the app polls to watch them: /healthy, /ready, /metrics. */
const PROBE_LINE = /"path":"\/(?:healthy|ready|metrics)"/;

export interface LogPageOptions {
  filter?: string;
  limit?: number;
  /** Lines older than this `seq` (the previous page's `next_before`). */
  before?: number;
  /** Lines newer than this `seq` (follow: the previous answer's `newest`). */
  after?: number;
  /** Include the probe requests' lines (hidden by default). */
  probes?: boolean;
}

/** The newest lines of one service, for the console; older lines fall off the front. Each gets a `seq`, one more than the line before. */
export class LogRing {
  private lines: LogLine[] = [];
  private last = 0;
  constructor(private readonly capacity: number) {}

  push(line: Omit<LogLine, 'seq' | 'probe'>): LogLine {
    this.last += 1;
    const kept: LogLine = { ...line, seq: this.last, ...(PROBE_LINE.test(line.text) ? { probe: true as const } : {}) };
    this.lines.push(kept);
    if (this.lines.length > this.capacity) this.lines.splice(0, this.lines.length - this.capacity);
    return kept;
  }

  /** A page of lines, newest first: before a `seq` (paging back), or after one (following), probes only when asked. */
  page(options: LogPageOptions = {}): LogPage {
    const filter = options.filter?.toLowerCase();
    const limit = Math.max(1, Math.min(options.limit ?? 100, this.capacity));
    const matching = this.lines.filter(
      (l) =>
        (options.probes || !l.probe) &&
        (!filter || l.text.toLowerCase().includes(filter)) &&
        (options.after === undefined || l.seq > options.after) &&
        (options.before === undefined || l.seq < options.before),
    );
    const lines = matching.slice(-limit).reverse();
    const more = matching.length > lines.length;
    return { lines, next_before: more ? lines[lines.length - 1]!.seq : null, newest: this.last };
  }

  tail(options: { filter?: string; limit?: number } = {}): LogLine[] {
    const filter = options.filter?.toLowerCase();
    const matching = filter ? this.lines.filter((l) => l.text.toLowerCase().includes(filter)) : this.lines;
    const limit = Math.max(0, Math.min(options.limit ?? 200, this.capacity));
    return limit === 0 ? [] : matching.slice(-limit);
  }
}

/** Rotating log files, one per service, under `<dataDir>/logs` (owner-only): 10 MB a file, five rotated files kept. */
export class LogFiles {
  private readonly streams = new Map<ServiceName, RotatingFileStream>();
  constructor(
    private readonly dir: string,
    private readonly rotation: { size: string; maxFiles: number } = { size: '10M', maxFiles: 5 },
  ) {}

  write(line: Omit<LogLine, 'seq' | 'probe'>): void {
    let stream = this.streams.get(line.service);
    if (!stream) {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      stream = createStream(`${line.service}.log`, { path: this.dir, ...this.rotation, mode: 0o600 });
      stream.on('error', () => {
        /* a full disk must not take the supervisor down; the ring buffer still has the lines */
      });
      this.streams.set(line.service, stream);
    }
    stream.write(`${line.time} ${line.stream} ${line.text}\n`);
  }

  async close(): Promise<void> {
    const closing = [...this.streams.values()].map((s) => new Promise<void>((resolve) => s.end(() => resolve())));
    this.streams.clear();
    await Promise.all(closing);
  }
}

/** Splits a byte stream into lines, keeping a partial last line until its end arrives. */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer | string): void; flush(): void } {
  let pending = '';
  return {
    push(chunk) {
      pending += chunk.toString();
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).replace(/\r$/, '');
        pending = pending.slice(nl + 1);
        if (line) onLine(line);
      }
      if (pending.length > 64_000) {
        onLine(pending);
        pending = '';
      }
    },
    flush() {
      if (pending) onLine(pending);
      pending = '';
    },
  };
}
