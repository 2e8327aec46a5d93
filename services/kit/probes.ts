import type { Express } from 'express';

export type Check = () => boolean | Promise<boolean>;

/**
 * `/healthy` answers whenever the process is up and checks nothing; `/ready` runs each named check and
 * answers 503 naming the ones that failed.
 */
export function mountProbes(app: Express, checks: Record<string, Check>, explain: Record<string, string> = {}): void {
  app.get('/healthy', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/ready', async (_req, res) => {
    const results: Record<string, 'ok' | 'failing'> = {};
    const failing: string[] = [];
    for (const [name, check] of Object.entries(checks)) {
      let ok = false;
      try {
        ok = await check();
      } catch {
        ok = false;
      }
      results[name] = ok ? 'ok' : 'failing';
      if (!ok) failing.push(name);
    }
    if (failing.length === 0) {
      res.json({ status: 'ready', checks: results });
      return;
    }
    res
      .status(503)
      .type('application/problem+json')
      .send(
        JSON.stringify({
          type: 'about:blank',
          title: 'Service Unavailable',
          status: 503,
          detail: `Not ready: ${failing.map((n) => explain[n] ?? `${n} is failing`).join('; ')}.`,
          checks: results,
        }),
      );
  });
}
