import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Express } from 'express';
import { z } from 'zod';
import { ProblemSchema } from './api.ts';

export type Check = () => boolean | Promise<boolean>;

/** Where the probes answer: liveness, then readiness. */
export const PROBE_PATHS = ['/healthy', '/ready'] as const;
const [HEALTHY_PATH, READY_PATH] = PROBE_PATHS;

/** A service's probes: the named checks of /ready, the sentence that says what a failing one means, and what /ready checks in a line (its summary in the document). */
export interface Probes {
  checks: Record<string, Check>;
  explain: Record<string, string>;
  readiness: string;
}

const CheckResults = z
  .record(z.string(), z.enum(['ok', 'failing']))
  .meta({ description: 'Each named check and how it went.' });

/** /healthy and /ready in a service's OpenAPI document (operation ids `healthy` and `ready`, tag `probes`, no token). */
export function documentProbes(registry: OpenAPIRegistry, readiness: string): void {
  registry.registerPath({
    method: 'get',
    path: HEALTHY_PATH,
    operationId: 'healthy',
    summary: 'Liveness: answers whenever the process is up; checks nothing',
    tags: ['probes'],
    security: [],
    responses: {
      200: {
        description: 'Up.',
        content: { 'application/json': { schema: z.object({ status: z.literal('ok') }).meta({ id: 'Healthy' }) } },
      },
    },
  });
  registry.registerPath({
    method: 'get',
    path: READY_PATH,
    operationId: 'ready',
    summary: readiness,
    tags: ['probes'],
    security: [],
    responses: {
      200: {
        description: 'Ready.',
        content: {
          'application/json': {
            schema: z.object({ status: z.literal('ready'), checks: CheckResults }).meta({ id: 'Ready' }),
          },
        },
      },
      503: {
        description: 'Not ready; the detail says what is missing.',
        content: {
          'application/problem+json': {
            schema: ProblemSchema.extend({ checks: CheckResults }).meta({ id: 'NotReady' }),
          },
        },
      },
    },
  });
}

/**
 * `/healthy` answers whenever the process is up and checks nothing; `/ready` runs each named check and
 * answers 503 naming the ones that failed.
 */
export function mountProbes(app: Express, checks: Record<string, Check>, explain: Record<string, string> = {}): void {
  mountHealthy(app);
  app.get(READY_PATH, async (_req, res) => {
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

/** `/healthy`: answers whenever the process is up, checks nothing. */
function mountHealthy(app: Express): void {
  app.get(HEALTHY_PATH, (_req, res) => {
    res.json({ status: 'ok' });
  });
}
