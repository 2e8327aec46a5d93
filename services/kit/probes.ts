import type { Express } from 'express';

export type Check = () => boolean | Promise<boolean>;

/**
 * `/healthy` answers whenever the process is up and checks nothing; `/ready` runs each named check and
 * answers 503 naming the ones that failed.
 */
export function mountProbes(app: Express, checks: Record<string, Check>, explain: Record<string, string> = {}): void {
  mountHealthy(app);
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

/** `/healthy`: answers whenever the process is up, checks nothing; `members` join `status` (the provider's spec asks for its version). */
export function mountHealthy(app: Express, members: Record<string, unknown> = {}): void {
  app.get('/healthy', (_req, res) => {
    res.json({ status: 'ok', ...members });
  });
}

/**
 * `/ready` for a service whose spec fixes the readiness body (the provider): `report` builds it, and the
 * answer is 200 when ready, else 503 with the same body (a state, not an error envelope).
 */
export function mountReadiness(app: Express, report: () => { ready: boolean; body: object }): void {
  app.get('/ready', (_req, res) => {
    const { ready, body } = report();
    res.status(ready ? 200 : 503).json(body);
  });
}
