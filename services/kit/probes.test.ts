/**
 * The probes `createApp` mounts from `probes`, over real HTTP: what they answer and how the OpenAPI
 * document describes them (every service that serves a document lists its probes in it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api } from './api.ts';
import { createApp } from './app.ts';
import { createLogger } from './logger.ts';
import { listen, type RunningService } from './server.ts';

let service: RunningService;
let up = true;

beforeAll(async () => {
  const logger = createLogger('kit-test', 'silent');
  const api = new Api({ title: 'probes', version: '0', description: 'probes only' });
  const app = createApp({
    logger,
    api,
    probes: {
      checks: { flag: () => up, never: () => Promise.reject(new Error('thrown')) },
      explain: { flag: 'the flag is down' },
      readiness: 'Readiness: the flag is up',
    },
  });
  service = await listen({ app, host: '127.0.0.1', port: 0, logger });
});
afterAll(() => service?.close());

const get = async (path: string) => {
  const res = await fetch(service.url + path);
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    body: (await res.json()) as Record<string, unknown>,
  };
};

describe('probes from createApp', () => {
  it('/healthy checks nothing; /ready names each failing check with its sentence (a check that throws fails)', async () => {
    expect(await get('/healthy')).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await get('/ready');
    expect(ready).toMatchObject({
      status: 503,
      type: expect.stringContaining('application/problem+json') as unknown,
      body: { checks: { flag: 'ok', never: 'failing' } },
    });
    expect(ready.body.detail).toBe('Not ready: never is failing.');
    up = false;
    expect((await get('/ready')).body.detail).toBe('Not ready: the flag is down; never is failing.');
    up = true;
  });

  it('are in the OpenAPI document as healthy and ready, without a token, with the answers they give', async () => {
    const doc = (await get('/openapi.json')).body as {
      paths: Record<
        string,
        {
          get: {
            operationId: string;
            summary: string;
            tags: string[];
            security: unknown[];
            responses: Record<string, { content?: Record<string, unknown> }>;
          };
        }
      >;
    };
    expect(doc.paths['/healthy']!.get).toMatchObject({ operationId: 'healthy', tags: ['probes'], security: [] });
    expect(doc.paths['/ready']!.get).toMatchObject({
      operationId: 'ready',
      summary: 'Readiness: the flag is up',
      tags: ['probes'],
      security: [],
    });
    expect(Object.keys(doc.paths['/ready']!.get.responses['503']!.content!)).toEqual(['application/problem+json']);
  });
});
