import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Octokit } from 'octokit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/process.ts';
import { Contract, ContractViolation } from './contract.ts';
import { startGitHubDouble, type GitHubDouble } from './double.ts';

interface Recorded {
  method: string;
  path: string;
  body?: unknown;
  status: number;
  response: unknown;
  headers: Record<string, string>;
}
const recorded = (scenario: string): Recorded[] =>
  JSON.parse(readFileSync(join(ROOT, 'node_modules', '@octokit', 'fixtures', 'scenarios', 'api.github.com', scenario, 'normalized-fixture.json'), 'utf8')) as Recorded[];

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
    const res = await fetch(`${double.url}/repos/alice/web/not-a-route`, { headers: { authorization: `token ${TOKEN}` } });
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
      contract.validateRequest(m, Object.fromEntries(new URLSearchParams(qs ?? '')), r.body, r.body !== undefined && r.body !== '');
    }
  });

  it('a recorded 422 Validation Failed has the shape the double answers with', () => {
    const [failed] = recorded('errors');
    expect(failed!.status).toBe(422);
    expect(() => contract.validateResponse(contract.match('POST', failed!.path), 422, failed!.response)).not.toThrow();
  });

  it('answers carry the header names GitHub\u2019s recorded answers carry', async () => {
    const names = Object.keys(recorded('get-repository')[0]!.headers).filter((h) => /^x-ratelimit-|^etag$|^x-github-request-id$/.test(h));
    expect(names.length).toBeGreaterThanOrEqual(5);
    const res = await fetch(`${double.url}/repos/alice/web`, { headers: { authorization: `token ${TOKEN}` } });
    for (const n of names) expect(res.headers.has(n), n).toBe(true);
  });
});

describe('the double behaves like the platform', () => {
  const octokit = () => new Octokit({ auth: TOKEN, baseUrl: double.url, retry: { enabled: false }, throttle: { enabled: false } });

  it('a conditional request answered 304 spends no primary quota, as on GitHub', async () => {
    const first = await octokit().rest.repos.get({ owner: 'alice', repo: 'web' });
    const used = double.quotaUsed('alice');
    const again = await fetch(`${double.url}/repos/alice/web`, { headers: { authorization: `token ${TOKEN}`, 'if-none-match': String(first.headers.etag) } });
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

  it('checks change state over time: queued, in progress, completed', async () => {
    const sha = double.headOf('alice/web', 'main');
    double.addCheckRun('alice/web', sha, { name: 'slow', settleMs: 400 });
    const state = async () => (await octokit().rest.checks.listForRef({ owner: 'alice', repo: 'web', ref: sha })).data.check_runs[0]!.status;
    expect(await state()).toBe('queued');
    await new Promise((r) => setTimeout(r, 450));
    expect(await state()).toBe('completed');
  });

  it('has received nothing outside the description in these tests', () => {
    expect(double.violations).toEqual([]);
  });
});
