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

async function envelope(res: Response): Promise<{ status: number; type: string | null; error: { code: string; message: string; type: string; param: null } }> {
  return { status: res.status, type: res.headers.get('content-type'), ...((await res.json()) as { error: { code: string; message: string; type: string; param: null } }) };
}

describe("the kit's refusals, in the provider's envelope", () => {
  it('answers a body that is not JSON with 400 invalid_json, before any run', async () => {
    const before = p.runs().length;
    const r = await envelope(await post('{"model": "sonnet", "messages": ['));
    expect([r.status, r.error.code, r.error.type, r.error.param]).toEqual([400, 'invalid_json', 'invalid_request_error', null]);
    expect(r.type).toMatch(/^application\/json/);
    expect(p.runs().length).toBe(before);
  });

  it('answers a body over MODELPROV_BODY_LIMIT with 413 body_too_large naming the setting', async () => {
    const r = await envelope(await post(JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'x'.repeat(2048) }] })));
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
      const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/models', headers: { 'x-large': 'a'.repeat(20_000) } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(431);
    expect(answer.type).toMatch(/^application\/json/);
    expect((JSON.parse(answer.body) as { error: { code: string } }).error.code).toBe('headers_too_large');
  });
});

describe("the kit's /metrics", () => {
  it('counts completions by route template and status class, for this machine only', async () => {
    await p.client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'counted once' }] });
    const text = await (await fetch(`${p.url}/metrics`)).text();
    expect(text).toMatch(/http_requests_total\{method="POST",route="\/v1\/chat\/completions",status_class="2xx",service="model-provider"\} [1-9]/);
    // A browser page is refused by the provider's own guard before the kit's check.
    const fromPage = await envelope(await fetch(`${p.url}/metrics`, { headers: { origin: 'https://evil.example' } }));
    expect([fromPage.status, fromPage.error.code]).toEqual([403, 'browser_request_refused']);
  });
});
