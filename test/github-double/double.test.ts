import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAppAuth } from '@octokit/auth-app';
import { request } from '@octokit/request';
import { Octokit } from 'octokit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/process.ts';
import { Contract, ContractViolation } from './contract.ts';
import { startGitHubDouble, type GitHubDouble } from './double.ts';
import { waitFor } from '../support/wait-for.ts';

interface Recorded {
  method: string;
  path: string;
  body?: unknown;
  status: number;
  response: unknown;
  headers: Record<string, string>;
}
const recorded = (scenario: string): Recorded[] =>
  JSON.parse(
    readFileSync(
      join(
        ROOT,
        'node_modules',
        '@octokit',
        'fixtures',
        'scenarios',
        'api.github.com',
        scenario,
        'normalized-fixture.json',
      ),
      'utf8',
    ),
  ) as Recorded[];

let double: GitHubDouble;
let contract: Contract;
const TOKEN = 'github_pat_double_test_token_0001';

beforeAll(async () => {
  double = await startGitHubDouble();
  contract = new Contract();
  double.addToken(TOKEN, 'alice');
  double.addRepo('alice/web');
});

afterAll(async () => {
  await double?.close();
});

describe('the GitHub double cannot drift from GitHub\u2019s OpenAPI description', () => {
  it('a request to a route GitHub does not have is a loud violation, answered 500', async () => {
    const before = double.violations.length;
    const res = await fetch(`${double.url}/repos/alice/web/not-a-route`, {
      headers: { authorization: `token ${TOKEN}` },
    });
    expect(res.status).toBe(500);
    expect(double.violations.length).toBe(before + 1);
    expect(double.violations.at(-1)).toContain('matches no operation');
    double.violations.length = before;
  });

  it('a request body outside the operation\u2019s schema is a violation', async () => {
    const before = double.violations.length;
    const res = await fetch(`${double.url}/repos/alice/web/issues`, {
      method: 'POST',
      headers: { authorization: `token ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ body: 'no title' }),
    });
    expect(res.status).toBe(500);
    expect(double.violations.at(-1)).toContain('request body does not match');
    double.violations.length = before;
  });

  it('an undocumented query parameter is a violation', async () => {
    const before = double.violations.length;
    await fetch(`${double.url}/repos/alice/web/pulls?colour=blue`, { headers: { authorization: `token ${TOKEN}` } });
    expect(double.violations.at(-1)).toContain('query parameter "colour" is not documented');
    double.violations.length = before;
  });

  it('an answer missing a member today\u2019s schema requires is refused: a 2017 recording of repos/get no longer validates', () => {
    const [getRepo] = recorded('get-repository');
    const m = contract.match('GET', getRepo!.path);
    expect(m.operationId).toBe('repos/get');
    expect(() => contract.validateResponse(m, 200, getRepo!.response)).toThrow(ContractViolation);
  });

  it('recorded requests (@octokit/fixtures) of operations the gateway uses match the description', () => {
    const used = [
      ...recorded('git-refs').filter((r) => r.method !== 'get'),
      ...recorded('add-labels-to-issue').slice(0, 1),
      ...recorded('paginate-issues').slice(0, 1),
      ...recorded('get-root'),
    ];
    expect(used.length).toBe(6);
    for (const r of used) {
      const [path, qs] = r.path.split('?') as [string, string | undefined];
      const m = contract.match(r.method, path);
      contract.validateRequest(
        m,
        Object.fromEntries(new URLSearchParams(qs ?? '')),
        r.body,
        r.body !== undefined && r.body !== '',
      );
    }
  });

  it('a recorded 422 Validation Failed has the shape the double answers with', () => {
    const [failed] = recorded('errors');
    expect(failed!.status).toBe(422);
    expect(() => contract.validateResponse(contract.match('POST', failed!.path), 422, failed!.response)).not.toThrow();
  });

  it('answers carry the header names GitHub\u2019s recorded answers carry', async () => {
    const names = Object.keys(recorded('get-repository')[0]!.headers).filter((h) =>
      /^x-ratelimit-|^etag$|^x-github-request-id$/.test(h),
    );
    expect(names.length).toBeGreaterThanOrEqual(5);
    const res = await fetch(`${double.url}/repos/alice/web`, { headers: { authorization: `token ${TOKEN}` } });
    for (const n of names) expect(res.headers.has(n), n).toBe(true);
  });
});

describe('the double behaves like the platform', () => {
  const octokit = () =>
    new Octokit({ auth: TOKEN, baseUrl: double.url, retry: { enabled: false }, throttle: { enabled: false } });

  it('a conditional request answered 304 spends no primary quota, as on GitHub', async () => {
    const first = await octokit().rest.repos.get({ owner: 'alice', repo: 'web' });
    const used = double.quotaUsed('alice');
    const again = await fetch(`${double.url}/repos/alice/web`, {
      headers: { authorization: `token ${TOKEN}`, 'if-none-match': String(first.headers.etag) },
    });
    expect(again.status).toBe(304);
    expect(double.quotaUsed('alice')).toBe(used);
    await octokit().rest.repos.get({ owner: 'alice', repo: 'web' });
    expect(double.quotaUsed('alice')).toBe(used + 1);
  });

  it('a private repository of someone else answers 404, as if it did not exist', async () => {
    double.addRepo('bob/secret', { private: true });
    const res = await fetch(`${double.url}/repos/bob/secret`, { headers: { authorization: `token ${TOKEN}` } });
    expect(res.status).toBe(404);
  });

  it('a secondary rate limit answers 429 with Retry-After', async () => {
    double.rateLimitNext('alice', 'secondary', 7);
    const res = await fetch(`${double.url}/repos/alice/web`, { headers: { authorization: `token ${TOKEN}` } });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
  });

  it('checks change state over time: queued, in progress, completed, in that order', async () => {
    const sha = double.headOf('alice/web', 'main');
    const state = async (name: string) =>
      (await octokit().rest.checks.listForRef({ owner: 'alice', repo: 'web', ref: sha })).data.check_runs.find(
        (c) => c.name === name,
      )!.status;
    // One that takes an hour is queued now; settle() finishes it at once.
    double.addCheckRun('alice/web', sha, { name: 'hour', settleMs: 3_600_000 });
    expect(await state('hour')).toBe('queued');
    double.settle('alice/web');
    expect(await state('hour')).toBe('completed');
    // One that takes a moment moves on by itself: read until it completes, and the states seen never go back.
    double.addCheckRun('alice/web', sha, { name: 'moment', settleMs: 300 });
    const order = ['queued', 'in_progress', 'completed'];
    const seen: string[] = [];
    await waitFor(
      'the check run to complete',
      async () => {
        seen.push(await state('moment'));
        return seen.at(-1) === 'completed';
      },
      30_000,
    );
    expect(seen.map((s) => order.indexOf(s))).toEqual([...seen.map((s) => order.indexOf(s))].sort((a, b) => a - b));
  });

  it('a primary limit refuses every request of the bucket until its reset, then the quota is whole again', async () => {
    double.addToken('github_pat_double_quota_token_0001', 'quota');
    double.addRepo('quota/r');
    const get = () =>
      fetch(`${double.url}/repos/quota/r`, { headers: { authorization: 'token github_pat_double_quota_token_0001' } });
    expect((await get()).status).toBe(200);
    double.rateLimitNext('quota', 'primary', 600);
    const limited = await get();
    expect(limited.status).toBe(403);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(((await limited.json()) as { message: string }).message).toContain('rate limit');
    const reset = Number(limited.headers.get('x-ratelimit-reset'));
    expect(reset * 1000).toBeGreaterThan(Date.now());
    expect((await get()).status).toBe(403);
    expect(double.quota('quota').remaining).toBe(0);
    // The reset arrives (as an event here, not ten minutes later): the next window starts with the whole quota.
    double.resetWindow('quota');
    const again = await get();
    expect(again.status).toBe(200);
    expect(Number(again.headers.get('x-ratelimit-remaining'))).toBe(4999);
    expect(Number(again.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Math.floor(Date.now() / 1000));
  });

  it('installation tokens expire (then 401), and the installation says whose account it is on', async () => {
    const app = double.addInstallation('acme', []);
    const auth = createAppAuth({
      appId: app.appId,
      privateKey: app.privateKey,
      installationId: app.installationId,
      request: request.defaults({ baseUrl: double.url }),
    });
    const { token } = await auth({ type: 'installation' });
    const { token: jwt } = await auth({ type: 'app' });
    const installation = await fetch(`${double.url}/app/installations/${app.installationId}`, {
      headers: { authorization: `Bearer ${jwt}` },
    });
    expect(installation.status).toBe(200);
    expect(((await installation.json()) as { account: { login: string } }).account.login).toBe('acme');
    const list = (t: string) =>
      fetch(`${double.url}/installation/repositories`, { headers: { authorization: `token ${t}` } });
    expect((await list(token)).status).toBe(200);
    double.expireTokens(`installation:${app.installationId}`);
    const refused = await list(token);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { message: string }).message).toBe('Bad credentials');
  });

  it('an installation token minted with a short lifetime stops working by itself once it is over', async () => {
    const app = double.addInstallation('shortlived', []);
    double.installationTokenTtlSeconds = 1;
    try {
      const auth = createAppAuth({
        appId: app.appId,
        privateKey: app.privateKey,
        installationId: app.installationId,
        request: request.defaults({ baseUrl: double.url }),
      });
      const { token, expiresAt } = await auth({ type: 'installation' });
      expect(Date.parse(expiresAt)).toBeLessThanOrEqual(Date.now() + 1_000);
      // Read until the platform refuses it (the expiry is the event).
      const status = await waitFor('the token to expire', async () => {
        const res = await fetch(`${double.url}/installation/repositories`, {
          headers: { authorization: `token ${token}` },
        });
        await res.body?.cancel();
        return res.status !== 200 && res.status;
      });
      expect(status).toBe(401);
      expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    } finally {
      double.installationTokenTtlSeconds = 3600;
    }
  });

  it('a file over 1 MB comes from the contents API without content ("none"), and whole from the Git Data API', async () => {
    const big = 'z'.repeat(1024 * 1024 + 1);
    double.pushCommit('alice/web', 'main', { 'big.bin': big });
    const meta = (await octokit().rest.repos.getContent({ owner: 'alice', repo: 'web', path: 'big.bin' })).data as {
      encoding: string;
      content: string;
      size: number;
      sha: string;
    };
    expect(meta).toMatchObject({ encoding: 'none', content: '', size: big.length });
    const blob = (await octokit().rest.git.getBlob({ owner: 'alice', repo: 'web', file_sha: meta.sha })).data;
    expect(Buffer.from(blob.content, 'base64').toString()).toBe(big);
  });

  it('holds an operation unanswered until released; a caller that gives up is recorded with status 0', async () => {
    const hold = double.hold('repos/get');
    const gaveUp = await fetch(`${double.url}/repos/alice/web`, {
      headers: { authorization: `token ${TOKEN}` },
      signal: AbortSignal.timeout(200),
    }).catch((e: Error) => e.name);
    expect(gaveUp).toBe('TimeoutError');
    // The double notices the caller left once the connection closes.
    await hold.when((h) => h.waiting === 0);
    const waiting = fetch(`${double.url}/repos/alice/web`, { headers: { authorization: `token ${TOKEN}` } });
    await hold.when((h) => h.waiting === 1);
    hold.release();
    expect((await waiting).status).toBe(200);
    expect(hold.arrived).toBe(2);
    expect(
      double.calls
        .filter((c) => c.path === '/repos/alice/web')
        .slice(-2)
        .map((c) => c.status),
    ).toEqual([0, 200]);
  });

  it('has received nothing outside the description in these tests', () => {
    expect(double.violations).toEqual([]);
  });
});
