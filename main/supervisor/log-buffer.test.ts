/**
 * The log ring's pages: newest first, paging back by `before`, following by `after`, the probes'
 * request lines hidden unless asked for, and bounded by its capacity.
 */
import { describe, expect, it } from 'vitest';
import { LogRing } from './log-buffer.ts';

const request = (path: string) =>
  JSON.stringify({
    level: 30,
    service: 'identity',
    req_id: 'x',
    method: 'GET',
    path,
    status: 200,
    ms: 0.4,
    msg: 'request',
  });

function ring(texts: string[], capacity = 100): LogRing {
  const r = new LogRing(capacity);
  for (const text of texts) r.push({ service: 'identity', time: '2026-11-26T05:00:00.000Z', stream: 'stdout', text });
  return r;
}

describe('a page of a service\u2019s log', () => {
  it('is newest first and pages back with next_before until there is nothing older', () => {
    const r = ring(['one', 'two', 'three', 'four', 'five']);
    const first = r.page({ limit: 2 });
    expect(first.lines.map((l) => l.text)).toEqual(['five', 'four']);
    expect(first).toMatchObject({ next_before: 4, newest: 5 });
    const second = r.page({ limit: 2, before: first.next_before! });
    expect(second.lines.map((l) => l.text)).toEqual(['three', 'two']);
    const last = r.page({ limit: 2, before: second.next_before! });
    expect(last.lines.map((l) => l.text)).toEqual(['one']);
    expect(last.next_before).toBeNull();
  });

  it('hides the probes\u2019 request lines unless asked, and marks them', () => {
    const r = ring([
      request('/healthy'),
      request('/v1/personas'),
      request('/ready'),
      request('/metrics'),
      '[supervisor] ready after 80 ms',
    ]);
    expect(r.page().lines.map((l) => l.seq)).toEqual([5, 2]);
    const all = r.page({ probes: true });
    expect(all.lines.map((l) => [l.seq, l.probe ?? false])).toEqual([
      [5, false],
      [4, true],
      [3, true],
      [2, false],
      [1, true],
    ]);
  });

  it('follows: after the newest seen, only what came since (none: an empty page with the same newest)', () => {
    const r = ring(['one', 'two']);
    const { newest } = r.page();
    expect(r.page({ after: newest })).toEqual({ lines: [], next_before: null, newest: 2 });
    r.push({ service: 'identity', time: '2026-11-26T05:00:01.000Z', stream: 'stderr', text: 'three' });
    r.push({ service: 'identity', time: '2026-11-26T05:00:01.000Z', stream: 'stdout', text: request('/ready') });
    expect(r.page({ after: newest })).toMatchObject({
      lines: [{ text: 'three', seq: 3, stream: 'stderr' }],
      newest: 4,
    });
  });

  it('filters on the text, case-insensitively, and keeps only its capacity (the seq goes on)', () => {
    const r = ring(['Alpha', 'beta', 'ALPHA again', 'gamma'], 3);
    expect(r.page({ filter: 'alpha' }).lines.map((l) => l.text)).toEqual(['ALPHA again']);
    expect(r.page().lines.map((l) => l.seq)).toEqual([4, 3, 2]);
  });
});
