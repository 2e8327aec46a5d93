import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProvider, type StartedProvider } from './test-support/provider.ts';

/** The kit's HTTP shell under the provider: its refusals in the chat-completions envelope, its /metrics. */
let p: StartedProvider;

beforeAll(async () => {
  p = await startProvider({ env: { MODELPROV_BODY_LIMIT: '1kb' } });
  await p.service.lockdownProbed();
});
afterAll(async () => {
  await p?.close();
});

const post = (body: string, contentType = 'application/json') =>
  fetch(`${p.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': contentType }, body });

async function envelope(res: Response): Promise<{
  status: number;
  type: string | null;
  error: { code: string; message: string; type: string; param: null };
}> {
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    ...((await res.json()) as { error: { code: string; message: string; type: string; param: null } }),
  };
}

describe("the kit's refusals, in the provider's envelope", () => {
  it('answers a body that is not JSON with 400 invalid_json, before any run', async () => {
    const before = p.runs().length;
    const r = await envelope(await post('{"model": "sonnet", "messages": ['));
    expect([r.status, r.error.code, r.error.type, r.error.param]).toEqual([
      400,
      'invalid_json',
      'invalid_request_error',
      null,
    ]);
    expect(r.type).toMatch(/^application\/json/);
    expect(p.runs().length).toBe(before);
  });

  it('answers a body over MODELPROV_BODY_LIMIT with 413 body_too_large naming the setting', async () => {
    const r = await envelope(
      await post(JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'x'.repeat(2048) }] })),
    );
    expect([r.status, r.error.code]).toEqual([413, 'body_too_large']);
    expect(r.error.message).toContain('MODELPROV_BODY_LIMIT');
  });

  it('answers a JSON body in another charset with 415 unsupported_media_type', async () => {
    const r = await envelope(await post('{}', 'application/json; charset=latin1'));
    expect([r.status, r.error.code]).toEqual([415, 'unsupported_media_type']);
  });

  it("answers what Node refuses itself (headers over 16 KB) in the envelope, not in the kit's problem+json", async () => {
    const { port } = new URL(p.url);
    const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/v1/models', headers: { 'x-large': 'a'.repeat(20_000) } },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(431);
    expect(answer.type).toMatch(/^application\/json/);
    expect((JSON.parse(answer.body) as { error: { code: string } }).error.code).toBe('headers_too_large');
  });
});

describe("the kit's /metrics", () => {
  it('counts completions by route template, status class and caller (its port proves no one), for this machine only', async () => {
    await p.client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'counted once' }] });
    const text = await (await fetch(`${p.url}/metrics`)).text();
    expect(text).toMatch(
      /http_requests_total\{method="POST",route="\/v1\/chat\/completions",status_class="2xx",caller="unverified",service="model-provider"\} [1-9]/,
    );
    // A browser page is refused by the provider's own guard before the kit's check.
    const fromPage = await envelope(await fetch(`${p.url}/metrics`, { headers: { origin: 'https://evil.example' } }));
    expect([fromPage.status, fromPage.error.code]).toEqual([403, 'browser_request_refused']);
  });
});

describe('the OpenAPI document and /docs', () => {
  it('describes the chat-completions route in the OpenAI wire format, its errors in the envelope', async () => {
    const res = await fetch(`${p.url}/openapi.json`);
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'application/json; charset=utf-8']);
    type Op = {
      requestBody: { content: Record<string, { schema: { $ref: string } }> };
      responses: Record<string, { content: Record<string, { schema: { $ref: string } }> }>;
    };
    const doc = (await res.json()) as {
      servers: { url: string }[];
      paths: Record<string, Record<string, Op>>;
      components: { schemas: Record<string, { properties: Record<string, unknown> }> };
    };
    expect(doc.servers).toEqual([{ url: p.url }]);
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/healthy',
      '/ready',
      '/v1/chat/completions',
      '/v1/models',
      '/v1/models/{model}',
    ]);
    const create = doc.paths['/v1/chat/completions']!.post!;
    expect(create.requestBody.content['application/json']!.schema.$ref).toBe(
      '#/components/schemas/ChatCompletionRequest',
    );
    expect(create.responses['200']!.content['application/json']!.schema.$ref).toBe(
      '#/components/schemas/ChatCompletion',
    );
    expect(create.responses['200']!.content['text/event-stream']!.schema.$ref).toBe(
      '#/components/schemas/ChatCompletionChunk',
    );
    for (const status of ['400', '401', '404', '413', '415', '429', '502', '503', '504']) {
      expect([status, create.responses[status]!.content['application/json']!.schema.$ref]).toEqual([
        status,
        '#/components/schemas/Error',
      ]);
    }
    expect(create.responses['422']).toBeUndefined();
    expect(Object.keys(doc.components.schemas.ChatCompletionRequest!.properties)).toEqual(
      expect.arrayContaining(['model', 'messages', 'stream', 'response_format']),
    );
    expect(Object.keys(doc.components.schemas.Error!.properties)).toEqual(['error']);
    expect(doc.paths['/ready']!.get!.responses['503']!.content['application/json']!.schema.$ref).toBe(
      '#/components/schemas/Readiness',
    );
  });

  it('serves /docs, whose page may load its own files (same-origin) while other pages stay refused', async () => {
    const page = await fetch(`${p.url}/docs`, { headers: { 'sec-fetch-site': 'none' } });
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    expect(await page.text()).toContain('/docs/assets/swagger-ui-bundle.js');
    const own = { 'sec-fetch-site': 'same-origin' };
    expect((await fetch(`${p.url}/docs/assets/swagger-ui.css`, { headers: own })).status).toBe(200);
    expect((await fetch(`${p.url}/openapi.json`, { headers: own })).status).toBe(200);
    for (const headers of [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: p.url },
    ] as Record<string, string>[]) {
      const r = await envelope(await fetch(`${p.url}/openapi.json`, { headers }));
      expect([r.status, r.error.code]).toEqual([403, 'browser_request_refused']);
    }
  });
});
