import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectionCheck, startWorld, type World } from '../../test/github-double/world.ts';
import { tempDir } from '../../test/support/identity.ts';
import { waitFor } from '../../test/support/wait-for.ts';
import { startRepohostGateway } from './service.ts';
import { tokenRejectionSuite } from '../../test/support/token-suite.ts';

const PAT = `github_pat_${'a1'.repeat(20)}`;
let world: World;
let app: { appId: string; installationId: string; privateKey: string };

beforeAll(async () => {
  world = await startWorld();
  const d = world.double;
  d.addToken(PAT, 'alice', 'all');
  d.addRepo('alice/web', {
    files: { 'README.md': '# web\n', 'src/app.ts': 'export const a = 1;\n', 'big.txt': 'x'.repeat(5000) },
    description: 'the web app',
  });
  d.addRepo('alice/notes', { private: true });
  d.addRepo('bob/hidden', { private: true, hiddenAs403: true });
  d.addRepo('bob/private', { private: true });
  d.addRepo('acme/one', { private: true });
  d.addRepo('acme/two', { private: true });
  app = d.addInstallation('acme', ['acme/one']);
  await world.connect('work', { kind: 'token', token: PAT });
  await world.connect('acme', {
    kind: 'app',
    app_id: app.appId,
    installation_id: app.installationId,
    private_key: app.privateKey,
  });
});

afterAll(async () => {
  await world?.close();
});

const platformCalls = () => world.double.calls.length;

describe('authentication comes before the platform', () => {
  tokenRejectionSuite({
    audience: 'repohost-api',
    identity: () => world.identity,
    call: (authorization) =>
      fetch(`${world.gateway.url}/v1/me`, {
        headers: { ...(authorization ? { authorization } : {}), 'x-identity-profile': 'work' },
      }),
  });

  it('a token for another audience answers 401 and the platform is not called', async () => {
    const before = platformCalls();
    const res = await world.call('GET', '/v1/me', { token: await world.token('persona') });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(platformCalls()).toBe(before);
  });

  it('a missing X-Identity-Profile answers a problem naming the header, before the platform is called', async () => {
    const before = platformCalls();
    const res = await world.call('GET', '/v1/me', { profile: null });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('X-Identity-Profile');
    expect(platformCalls()).toBe(before);
  });

  it('an unknown profile answers 404 naming the profile and how to add a connection, before the platform is called', async () => {
    const before = platformCalls();
    const res = await world.call('GET', '/v1/repos/alice/web', { profile: 'nobody' });
    expect(res.status).toBe(404);
    expect(res.body.detail).toContain('"nobody"');
    expect(res.body.detail).toContain('/v1/connections/nobody');
    expect(platformCalls()).toBe(before);
  });
});

describe('identity', () => {
  it('reports a fine-grained token: its login, kind token, all repositories, and how many', async () => {
    const res = await world.call('GET', '/v1/me');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ login: 'alice', kind: 'token', selection: 'all', repositories: 2 });
  });

  it('reports an app installation through the identity service\u2019s real app path: selected repositories and their count', async () => {
    const res = await world.call('GET', '/v1/me', { profile: 'acme' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ login: 'acme', kind: 'app', selection: 'selected', repositories: 1 });
  });

  it('an app installation that reaches no repository still reports the account it is installed on', async () => {
    const empty = world.double.addInstallation('emptyco', []);
    await world.connect('empty', {
      kind: 'app',
      app_id: empty.appId,
      installation_id: empty.installationId,
      private_key: empty.privateKey,
    });
    const res = await world.call('GET', '/v1/me', { profile: 'empty' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ login: 'emptyco', kind: 'app', selection: 'selected', repositories: 0 });
    expect(world.double.calls.some((c) => c.operationId === 'apps/get-installation' && c.status === 200)).toBe(true);
  });

  it('an app installation with all repositories selected reports all, and how many', async () => {
    world.double.addRepo('wholeco/a', { private: true });
    world.double.addRepo('wholeco/b');
    world.double.addRepo('wholeco/c', { private: true });
    const whole = world.double.addInstallation('wholeco', 'all');
    await world.connect('whole', {
      kind: 'app',
      app_id: whole.appId,
      installation_id: whole.installationId,
      private_key: whole.privateKey,
    });
    const res = await world.call('GET', '/v1/me', { profile: 'whole' });
    expect(res.body).toEqual({ login: 'wholeco', kind: 'app', selection: 'all', repositories: 3 });
  });

  it('a token limited to selected repositories says so', async () => {
    world.double.addToken(`github_pat_${'b2'.repeat(20)}`, 'alice', ['alice/web']);
    await world.connect('narrow', { kind: 'token', token: `github_pat_${'b2'.repeat(20)}` });
    const res = await world.call('GET', '/v1/me', { profile: 'narrow' });
    expect(res.body).toEqual({ login: 'alice', kind: 'token', selection: 'selected', repositories: 1 });
  });
});

describe('repositories', () => {
  it('finds repositories by words and lists what the connection reaches, with totals', async () => {
    const found = await world.call('GET', '/v1/repos?q=web');
    expect(found.status).toBe(200);
    expect(found.body.total).toBe(1);
    expect(found.body.items![0]).toMatchObject({ full_name: 'alice/web', description: 'the web app', private: false });
    const reach = await world.call('GET', '/v1/repos?limit=1');
    expect(reach.body.total).toBe(2);
    expect(reach.body.items).toHaveLength(1);
    const app = await world.call('GET', '/v1/repos', { profile: 'acme' });
    expect(app.body.total).toBe(1);
    expect(app.body.items![0]!.full_name).toBe('acme/one');
  });

  it('refuses a limit outside 1 to 100 with a problem naming limit', async () => {
    const res = await world.call('GET', '/v1/repos?limit=101');
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('limit');
  });

  it('reads, creates, changes visibility and description, archives and deletes', async () => {
    const read = await world.call('GET', '/v1/repos/alice/web');
    expect(read.body).toMatchObject({
      full_name: 'alice/web',
      owner: 'alice',
      name: 'web',
      visibility: 'public',
      default_branch: 'main',
      archived: false,
    });

    const created = await world.call('POST', '/v1/repos', { body: { name: 'scratch', description: 'tmp' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      full_name: 'alice/scratch',
      private: true,
      visibility: 'private',
      description: 'tmp',
    });

    const changed = await world.call('PATCH', '/v1/repos/alice/scratch', {
      body: { visibility: 'public', description: 'now public' },
    });
    expect(changed.body).toMatchObject({ visibility: 'public', description: 'now public' });
    const archived = await world.call('PATCH', '/v1/repos/alice/scratch', { body: { archived: true } });
    expect(archived.body.archived).toBe(true);

    const deleted = await world.call('DELETE', '/v1/repos/alice/scratch');
    expect(deleted.status).toBe(204);
    expect((await world.call('GET', '/v1/repos/alice/scratch')).status).toBe(404);
  });

  it('a name that is taken answers 422 whose detail says so, in the platform\u2019s own words', async () => {
    const res = await world.call('POST', '/v1/repos', { body: { name: 'web' } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('name already exists on this account');
    expect(res.body.detail).not.toContain('..');
  });
});

describe('hidden means missing', () => {
  const same = (a: Record<string, unknown>, b: Record<string, unknown>, from: string, to: string) =>
    expect(JSON.parse(JSON.stringify(a).replaceAll(from, to))).toEqual(b);

  it('a private repository the connection cannot see answers exactly like one that does not exist', async () => {
    const hidden = await world.call('GET', '/v1/repos/bob/private');
    const missing = await world.call('GET', '/v1/repos/bob/absent');
    expect(hidden.status).toBe(404);
    expect(missing.status).toBe(404);
    same(hidden.body, missing.body, 'bob/private', 'bob/absent');
  });

  it('the platform\u2019s 403 "not accessible" on a read is normalised to the same 404', async () => {
    for (const path of ['', '/pulls', '/issues']) {
      const hidden = await world.call('GET', `/v1/repos/bob/hidden${path}`);
      const missing = await world.call('GET', `/v1/repos/bob/absent${path}`);
      expect(hidden.status).toBe(404);
      same(hidden.body, missing.body, 'bob/hidden', 'bob/absent');
    }
    expect(world.double.calls.some((c) => c.path === '/repos/bob/hidden' && c.status === 403)).toBe(true);
  });

  it('a write to a repository the connection cannot see answers the same 404 as one to a missing repository', async () => {
    const writes: [string, string, unknown][] = [
      ['POST', '/issues', { title: 'Hello' }],
      ['PATCH', '', { description: 'mine now' }],
      ['PATCH', '/issues/1', { state: 'closed' }],
    ];
    for (const [method, path, body] of writes) {
      const hidden = await world.call(method, `/v1/repos/bob/hidden${path}`, { body });
      const missing = await world.call(method, `/v1/repos/bob/absent${path}`, { body });
      expect(missing.status, `${method} ${path}`).toBe(404);
      expect(hidden.status, `${method} ${path}`).toBe(404);
      same(hidden.body, missing.body, 'bob/hidden', 'bob/absent');
    }
    // Control: a repository the connection sees but may not change still answers 403, saying so.
    world.double.addRepo('bob/open');
    const refused = await world.call('POST', '/v1/repos/bob/open/issues', { body: { title: 'Hello' } });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('may not do this in bob/open');
  });

  it('an app installation does not see repositories outside its selection', async () => {
    expect((await world.call('GET', '/v1/repos/acme/two', { profile: 'acme' })).status).toBe(404);
    expect((await world.call('GET', '/v1/repos/acme/one', { profile: 'acme' })).status).toBe(200);
  });
});

describe('names the platform cannot hold', () => {
  /** Sends the path exactly as written (fetch would resolve "." and ".." segments before sending). */
  async function raw(method: string, path: string, body?: unknown): Promise<{ status: number; detail: string }> {
    const token = await world.token();
    const { hostname, port } = new URL(world.gateway.url);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: hostname,
          port,
          method,
          path,
          headers: {
            authorization: `Bearer ${token}`,
            'x-identity-profile': 'work',
            'content-type': 'application/json',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({
              status: res.statusCode ?? 0,
              detail: text ? String((JSON.parse(text) as { detail?: string }).detail ?? '') : '',
            });
          });
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }

  it('"." and "..", and every other name GitHub cannot hold, are refused with 422 before the platform (or identity) is asked', async () => {
    const calls = platformCalls();
    const resolutions = world.gateway.parts.resolver.resolutions;
    const refused: [string, string, unknown?][] = [];
    const names = [
      '.',
      '..',
      '%2E',
      '%2e%2E',
      'web.git',
      'web.wiki',
      'x'.repeat(101),
      'caf%C3%A9',
      'a%20b',
      'a%2Fb',
      '%00',
    ];
    const owners = ['.', '..', '%2E%2E', 'a.b', 'x'.repeat(40), 'a%2Fb', 'al%20ice'];
    for (const name of names) {
      for (const [method, tail] of [
        ['GET', ''],
        ['GET', '/pulls'],
        ['POST', '/issues'],
        ['DELETE', ''],
        ['GET', '/contents?path=README.md'],
        ['PATCH', ''],
      ] as const) {
        refused.push([
          method,
          `/v1/repos/alice/${name}${tail}`,
          method === 'POST' ? { title: 't' } : method === 'PATCH' ? { description: 'd' } : undefined,
        ]);
      }
    }
    for (const owner of owners)
      refused.push(['GET', `/v1/repos/${owner}/web`], ['GET', `/v1/repos/${owner}/web/checks?ref=main`]);
    for (const name of ['.', '..', '', 'web.git', 'web.wiki', 'a/b', 'caf\u00e9', 'x'.repeat(101)])
      refused.push(['POST', '/v1/repos', { name }]);
    for (const repo of ['alice/..', '../web', 'alice/.', './web', 'alice/web.git', 'alice/web/x']) {
      refused.push([
        'POST',
        '/v1/subscriptions',
        { kind: 'pull_merged', repo, pull: 1, signal_url: `${world.receiver.url}/hook` },
      ]);
    }
    // Refs, branches and paths that would walk out of their place in the platform URL.
    refused.push(
      ['DELETE', '/v1/repos/alice/web/branches/..'],
      ['DELETE', '/v1/repos/alice/web/branches/%2E%2E'],
      ['GET', '/v1/repos/alice/web/contents?path=../x'],
      ['GET', '/v1/repos/alice/web/contents?path=a/./b'],
      ['GET', '/v1/repos/alice/web/tree?ref=..'],
      ['GET', '/v1/repos/alice/web/checks?ref=main/../x'],
      ['POST', '/v1/repos/alice/web/branches', { name: '..' }],
      ['POST', '/v1/repos/alice/web/checks/workflows/..%2Fci.yml/dispatch', { ref: 'main' }],
    );
    const outcomes: string[] = [];
    for (const [method, path, body] of refused) {
      const res = await raw(method, path, body);
      if (res.status !== 422 || !res.detail) outcomes.push(`${method} ${path}: ${res.status} ${res.detail}`);
    }
    expect(outcomes).toEqual([]);
    expect(platformCalls()).toBe(calls);
    expect(world.gateway.parts.resolver.resolutions).toBe(resolutions);
  });

  it('the refusal says what a name may be', async () => {
    const dot = await raw('GET', '/v1/repos/alice/..');
    expect(dot.detail).toContain('"." or ".."');
    const owner = await raw('GET', '/v1/repos/a.b/web');
    expect(owner.detail).toContain('1-39 letters, digits');
    const suffix = await raw('POST', '/v1/repos', { name: 'web.git' });
    expect(suffix.detail).toContain('.git');
  });

  it('older account names and names starting with a dot are accepted (control)', async () => {
    world.double.addRepo('alice/.github', { private: true });
    expect((await raw('GET', '/v1/repos/alice/.github')).status).toBe(200);
    // An account name of the old rules is passed on; the platform answers for it (here: no such repository).
    expect((await raw('GET', '/v1/repos/old-/web')).status).toBe(404);
    expect(world.double.calls.some((c) => c.path === '/repos/old-/web')).toBe(true);
  });
});

describe('files and commits', () => {
  it('reads a file, capped at max_bytes, saying what was cut', async () => {
    const whole = await world.call('GET', '/v1/repos/alice/web/contents?path=src/app.ts');
    expect(whole.body).toMatchObject({
      path: 'src/app.ts',
      encoding: 'utf-8',
      content: 'export const a = 1;\n',
      cut_bytes: 0,
    });
    const capped = await world.call('GET', '/v1/repos/alice/web/contents?path=big.txt&max_bytes=1000');
    expect(capped.body).toMatchObject({ size: 5000, returned_bytes: 1000, cut_bytes: 4000 });
    expect(String(capped.body.content)).toHaveLength(1000);
    expect((await world.call('GET', '/v1/repos/alice/web/contents?path=nope.txt')).status).toBe(404);
  });

  it('reads a file over 1 MB (no content from the contents API) through the Git Data API, with the platform\u2019s size', async () => {
    const huge = `${'0123456789abcdef'.repeat(75_000)}tail\n`; // 1,200,005 bytes
    world.double.pushCommit('alice/web', 'main', { 'huge.log': huge });
    const blobReads = () =>
      world.double.calls.filter((c) => c.operationId === 'git/get-blob' && c.status === 200).length;
    const before = blobReads();
    const res = await world.call('GET', '/v1/repos/alice/web/contents?path=huge.log&max_bytes=1000');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      size: huge.length,
      encoding: 'utf-8',
      returned_bytes: 1000,
      cut_bytes: huge.length - 1000,
    });
    expect(res.body.content).toBe(huge.slice(0, 1000));
    expect(blobReads()).toBe(before + 1);
    const contents = world.double.calls.filter(
      (c) => c.operationId === 'repos/get-content' && c.path.endsWith('/huge.log'),
    );
    expect(contents.at(-1)!.status).toBe(200);
    // Read whole (up to the 1,000,000-byte cap): still the platform's size, and the cut confessed.
    const capped = await world.call('GET', '/v1/repos/alice/web/contents?path=huge.log&max_bytes=1000000');
    expect(capped.body).toMatchObject({
      size: huge.length,
      returned_bytes: 1_000_000,
      cut_bytes: huge.length - 1_000_000,
    });
    world.double.pushCommit('alice/web', 'main', { 'huge.log': null });
  });

  it('reads a tree, saying how many entries it left out', async () => {
    const res = await world.call('GET', '/v1/repos/alice/web/tree?ref=main&limit=2');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ref: 'main', total: 4, cut_entries: 2, platform_truncated: false });
    const under = await world.call('GET', '/v1/repos/alice/web/tree?ref=main&under=src');
    expect(under.body.items).toEqual([{ path: 'src/app.ts', type: 'blob', mode: '100644', size: 20 }]);
  });

  it('commits adds, updates, deletes and modes in one commit through the Git Data API', async () => {
    const head = world.double.headOf('alice/web', 'main');
    const res = await world.call('POST', '/v1/repos/alice/web/commits', {
      body: {
        branch: 'main',
        message: 'Several files',
        expected_head_sha: head,
        changes: [
          { path: 'src/app.ts', content: 'export const a = 2;\n' },
          { path: 'bin/run.sh', content: '#!/bin/sh\necho hi\n', mode: '100755' },
          { path: 'big.txt', action: 'delete' },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ branch: 'main', previous_head: head, files: 3 });
    expect(world.double.headOf('alice/web', 'main')).toBe(res.body.sha);
    const files = world.double.filesAt('alice/web', 'main');
    expect(files['src/app.ts']).toBe('export const a = 2;\n');
    expect(files['bin/run.sh']).toContain('echo hi');
    expect(files['big.txt']).toBeUndefined();
    expect(
      world.double
        .repo('alice/web')
        .trees.get(world.double.repo('alice/web').commits.get(res.body.sha as string)!.tree)!
        .get('bin/run.sh')!.mode,
    ).toBe('100755');
  });

  it('a commit when the branch moved answers 409 with the current head, and nothing is forced', async () => {
    const stale = world.double.headOf('alice/web', 'main');
    const theirs = world.double.pushCommit('alice/web', 'main', { 'THEIRS.md': 'their work\n' });
    const refUpdates = world.double.calls.filter((c) => c.operationId === 'git/update-ref').length;
    const res = await world.call('POST', '/v1/repos/alice/web/commits', {
      body: {
        branch: 'main',
        message: 'Mine',
        expected_head_sha: stale,
        changes: [{ path: 'MINE.md', content: 'mine\n' }],
      },
    });
    expect(res.status).toBe(409);
    expect(res.body.current_head_sha).toBe(theirs);
    expect(res.body.detail).toContain(theirs);
    expect(world.double.headOf('alice/web', 'main')).toBe(theirs);
    expect(world.double.filesAt('alice/web', 'main')['THEIRS.md']).toBe('their work\n');
    expect(world.double.calls.filter((c) => c.operationId === 'git/update-ref').length).toBe(refUpdates);
  });

  it('a branch that moves while the commit is being made answers 409 with the new head; the ref is never forced', async () => {
    let theirs = '';
    world.double.onNext(
      'git/update-ref',
      () => (theirs = world.double.pushCommit('alice/web', 'main', { 'RACE.md': 'they won\n' })),
    );
    const res = await world.call('POST', '/v1/repos/alice/web/commits', {
      body: { branch: 'main', message: 'Mine', changes: [{ path: 'MINE.md', content: 'mine\n' }] },
    });
    expect(res.status).toBe(409);
    expect(res.body.current_head_sha).toBe(theirs);
    expect(world.double.headOf('alice/web', 'main')).toBe(theirs);
    expect(world.double.filesAt('alice/web', 'main')['MINE.md']).toBeUndefined();
    const last = world.double.calls.filter((c) => c.operationId === 'git/update-ref').at(-1)!;
    expect(last.status).toBe(422);
  });

  it('a commit to a branch the platform protects answers the platform\u2019s refusal, not a moved head to rebase on', async () => {
    const head = world.double.headOf('alice/web', 'main');
    world.double.repo('alice/web').protectedBranches = new Set(['main']);
    try {
      const res = await world.call('POST', '/v1/repos/alice/web/commits', {
        body: {
          branch: 'main',
          message: 'Mine',
          expected_head_sha: head,
          changes: [{ path: 'MINE.md', content: 'mine\n' }],
        },
      });
      expect(res.status).toBe(422);
      expect(res.body.detail).toContain('Protected branch update failed');
      expect(res.body).not.toHaveProperty('current_head_sha');
      expect(world.double.headOf('alice/web', 'main')).toBe(head);
    } finally {
      world.double.repo('alice/web').protectedBranches = undefined;
    }
  });

  it('commits base64 content and reads a binary file back as base64', async () => {
    const bytes = Buffer.from([0, 1, 2, 65, 66, 0, 127]);
    const res = await world.call('POST', '/v1/repos/alice/web/commits', {
      body: {
        branch: 'main',
        message: 'Binary',
        changes: [{ path: 'data.bin', content: bytes.toString('base64'), encoding: 'base64' }],
      },
    });
    expect(res.status).toBe(201);
    expect(world.double.calls.some((c) => c.operationId === 'git/create-blob' && c.status === 201)).toBe(true);
    const read = await world.call('GET', '/v1/repos/alice/web/contents?path=data.bin');
    expect(read.body).toMatchObject({ encoding: 'base64', size: bytes.length, cut_bytes: 0 });
    expect(Buffer.from(String(read.body.content), 'base64').equals(bytes)).toBe(true);
  });

  it('creates and deletes a branch', async () => {
    const created = await world.call('POST', '/v1/repos/alice/web/branches', { body: { name: 'feature/x' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ name: 'feature/x', sha: world.double.headOf('alice/web', 'main') });
    expect((await world.call('DELETE', '/v1/repos/alice/web/branches/feature%2Fx')).status).toBe(204);
    expect(world.double.repo('alice/web').refs.has('heads/feature/x')).toBe(false);
  });
});

describe('pull requests', () => {
  let number: number;

  it('opens a pull request from a branch with a commit', async () => {
    await world.call('POST', '/v1/repos/alice/web/branches', { body: { name: 'change' } });
    await world.call('POST', '/v1/repos/alice/web/commits', {
      body: {
        branch: 'change',
        message: 'Change',
        changes: [{ path: 'README.md', content: `# web\n${'line\n'.repeat(50)}` }],
      },
    });
    const res = await world.call('POST', '/v1/repos/alice/web/pulls', {
      body: { title: 'A change', head: 'change', base: 'main', body: 'Please' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ title: 'A change', state: 'open', head: 'change', base: 'main', author: 'alice' });
    number = res.body.number as number;
  });

  it('a head the platform cannot use answers 422 naming the member to correct', async () => {
    const res = await world.call('POST', '/v1/repos/alice/web/pulls', {
      body: { title: 'From nowhere', head: 'no-such-branch', base: 'main' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('(head is not valid)');
  });

  it('lists pull requests with a total', async () => {
    const res = await world.call('GET', '/v1/repos/alice/web/pulls?limit=1');
    expect(res.body.total).toBe(1);
    expect(res.body.items![0]!.number).toBe(number);
  });

  it('reads a pull request with reviews, review threads and checks in one answer', async () => {
    const d = world.double;
    d.addReview('alice/web', number, { user: 'carol', state: 'CHANGES_REQUESTED', body: 'fix it' });
    const first = d.addReviewComment('alice/web', number, { user: 'carol', body: 'why?', path: 'README.md', line: 2 });
    d.addReviewComment('alice/web', number, {
      user: 'alice',
      body: 'because',
      path: 'README.md',
      line: 2,
      in_reply_to_id: first,
    });
    d.addCheckRun('alice/web', d.headOf('alice/web', 'change'), { name: 'build', settleMs: 0, conclusion: 'success' });
    d.addCheckRun('alice/web', d.headOf('alice/web', 'change'), { name: 'lint', settleMs: 60_000 });
    const res = await world.call('GET', `/v1/repos/alice/web/pulls/${number}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      number,
      body: 'Please',
      head_sha: d.headOf('alice/web', 'change'),
      mergeable: true,
    });
    expect(res.body.reviews).toMatchObject({
      total: 1,
      items: [{ author: 'carol', state: 'CHANGES_REQUESTED', body: 'fix it' }],
    });
    expect(res.body.threads).toMatchObject({
      total: 1,
      items: [{ id: first, path: 'README.md', comments: [{ body: 'why?' }, { body: 'because' }] }],
    });
    expect(res.body.checks).toMatchObject({ state: 'pending', total: 2 });
  });

  it('counts every review thread, reading review comments past the first hundred, and says when it had to stop', async () => {
    const d = world.double;
    d.addRepo('carol/talk');
    d.repo('carol/talk').refs.set('heads/talky', d.headOf('carol/talk', 'main'));
    d.pushCommit('carol/talk', 'talky', { 'talk.md': 'talk\n' });
    const talky = d.addPull('carol/talk', { head: 'talky' });
    // 150 comments: 120 threads, 30 of them with one reply (replies come after their thread's first comment).
    const firsts: number[] = [];
    for (let i = 0; i < 120; i++)
      firsts.push(d.addReviewComment('carol/talk', talky, { user: 'carol', body: `t${i}`, path: 'talk.md', line: 1 }));
    for (let i = 0; i < 30; i++)
      d.addReviewComment('carol/talk', talky, {
        user: 'alice',
        body: `re${i}`,
        path: 'talk.md',
        line: 1,
        in_reply_to_id: firsts[i]!,
      });
    const res = await world.call('GET', `/v1/repos/carol/talk/pulls/${talky}`);
    expect(res.status).toBe(200);
    const threads = res.body.threads as {
      total: number;
      items: { comments: unknown[] }[];
      comments: number;
      capped: boolean;
    };
    expect(threads).toMatchObject({ total: 120, comments: 150, capped: false });
    expect(threads.items).toHaveLength(100);
    expect(threads.items[0]!.comments).toHaveLength(2);

    // Past 1,000 comments the grouping stops there, and says so; the comment count stays exact.
    for (let i = 0; i < 900; i++)
      d.addReviewComment('carol/talk', talky, { user: 'carol', body: `more${i}`, path: 'talk.md', line: 2 });
    const many = await world.call('GET', `/v1/repos/carol/talk/pulls/${talky}`);
    expect(many.body.threads).toMatchObject({ total: 120 + 850, comments: 1050, capped: true });
  });

  it('answers the changed files patch by patch, each capped and saying what was cut', async () => {
    const whole = await world.call('GET', `/v1/repos/alice/web/pulls/${number}/files`);
    expect(whole.body.total).toBe(1);
    expect(whole.body.items![0]).toMatchObject({ path: 'README.md', status: 'modified', cut_bytes: 0 });
    const capped = await world.call('GET', `/v1/repos/alice/web/pulls/${number}/files?max_patch_bytes=40`);
    const item = capped.body.items![0]!;
    expect(Buffer.byteLength(String(item.patch))).toBeLessThanOrEqual(40);
    expect(item.cut_bytes).toBe((item.patch_bytes as number) - Buffer.byteLength(String(item.patch)));
    expect(item.cut_bytes).toBeGreaterThan(0);
  });

  it('updates and reviews a pull request', async () => {
    const updated = await world.call('PATCH', `/v1/repos/alice/web/pulls/${number}`, {
      body: { title: 'A better change' },
    });
    expect(updated.body.title).toBe('A better change');
    const reviewed = await world.call('POST', `/v1/repos/alice/web/pulls/${number}/reviews`, {
      body: { event: 'approve', body: 'ok' },
    });
    expect(reviewed.status).toBe(200);
    expect(reviewed.body).toMatchObject({ state: 'APPROVED', author: 'alice', body: 'ok' });
  });

  it('refuses a merge when the head is not the expected SHA, and merges when it is', async () => {
    const refused = await world.call('POST', `/v1/repos/alice/web/pulls/${number}/merge`, {
      body: { expected_head_sha: '0'.repeat(40) },
    });
    expect(refused.status).toBe(409);
    expect(world.double.repo('alice/web').pulls[0]!.merged).toBe(false);
    const merged = await world.call('POST', `/v1/repos/alice/web/pulls/${number}/merge`, {
      body: { expected_head_sha: world.double.headOf('alice/web', 'change') },
    });
    expect(merged.status).toBe(200);
    expect(merged.body.merged).toBe(true);
    expect((await world.call('GET', `/v1/repos/alice/web/pulls/${number}`)).body.state).toBe('merged');
  });
});

describe('issues', () => {
  it('opening an issue where issues are turned off answers 410 saying to turn them on, not to try again', async () => {
    world.double.addRepo('alice/quiet').issuesDisabled = true;
    const res = await world.call('POST', '/v1/repos/alice/quiet/issues', { body: { title: 'Bug' } });
    expect(res.status).toBe(410);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.detail).toContain('Issues are disabled for this repo');
    expect(res.body.detail).toContain('turn on Issues');
    expect(res.body.detail).not.toContain('try again shortly');
  });

  it('opens, lists with a total, comments on issues and pull requests, and closes', async () => {
    const opened = await world.call('POST', '/v1/repos/alice/web/issues', { body: { title: 'Bug', body: 'broken' } });
    expect(opened.status).toBe(201);
    expect(opened.body).toMatchObject({ title: 'Bug', state: 'open', is_pull_request: false });
    const n = opened.body.number as number;
    const list = await world.call('GET', '/v1/repos/alice/web/issues?state=all&limit=1');
    expect(list.body.total).toBe(2);
    expect(list.body.items).toHaveLength(1);
    const comment = await world.call('POST', `/v1/repos/alice/web/issues/${n}/comments`, { body: { body: 'on it' } });
    expect(comment.status).toBe(201);
    expect(comment.body).toMatchObject({ body: 'on it', author: 'alice' });
    const onPull = await world.call('POST', '/v1/repos/alice/web/issues/1/comments', {
      body: { body: 'merged, thanks' },
    });
    expect(onPull.status).toBe(201);
    const closed = await world.call('PATCH', `/v1/repos/alice/web/issues/${n}`, { body: { state: 'closed' } });
    expect(closed.body.state).toBe('closed');
  });
});

describe('CI', () => {
  let runId: number;
  let jobId: number;
  const log = Array.from({ length: 500 }, (_, i) =>
    i === 250 ? 'ERROR: the needle broke' : `step ${i + 1} ${i === 10 ? 'y'.repeat(3000) : 'ok'}`,
  ).join('\n');

  beforeAll(() => {
    const d = world.double;
    d.addCheckRun('alice/web', d.headOf('alice/web', 'main'), { name: 'test', settleMs: 0, conclusion: 'failure' });
    const r = d.addWorkflowRun('alice/web', {
      name: 'ci',
      head_branch: 'main',
      settleMs: 60_000,
      jobs: [{ name: 'build', log }],
    });
    runId = r.runId;
    jobId = r.jobIds[0]!;
    d.addWorkflow('alice/web', 'ci', '.github/workflows/ci.yml');
  });

  it('reads checks on a branch, a commit and a pull request', async () => {
    const branch = await world.call('GET', '/v1/repos/alice/web/checks?ref=main');
    expect(branch.body).toMatchObject({
      ref: 'main',
      state: 'failure',
      total: 1,
      items: [{ name: 'test', status: 'completed', conclusion: 'failure' }],
    });
    const sha = world.double.headOf('alice/web', 'main');
    expect((await world.call('GET', `/v1/repos/alice/web/checks?ref=${sha}`)).body.total).toBe(1);
    const pull = await world.call('GET', '/v1/repos/alice/web/checks?pull=1');
    expect(pull.body).toMatchObject({ ref: 'pull/1', total: 2 });
    expect((await world.call('GET', '/v1/repos/alice/web/checks')).status).toBe(422);
    world.double.addStatus('alice/web', sha, { context: 'external', state: 'pending' });
    const withStatus = await world.call('GET', `/v1/repos/alice/web/checks?ref=${sha}`);
    expect(withStatus.body).toMatchObject({ total: 2, state: 'pending' });
    expect(withStatus.body.items).toContainEqual({
      id: expect.any(Number),
      kind: 'status',
      name: 'external',
      status: 'pending',
      conclusion: null,
      url: expect.any(String),
    });
  });

  it('lists runs and reads one with its jobs', async () => {
    const runs = await world.call('GET', '/v1/repos/alice/web/checks/runs?branch=main');
    expect(runs.body.total).toBeGreaterThanOrEqual(1);
    const run = await world.call('GET', `/v1/repos/alice/web/checks/runs/${runId}`);
    expect(run.body).toMatchObject({
      id: runId,
      name: 'ci',
      status: 'queued',
      jobs: { total: 1, items: [{ id: jobId, name: 'build' }] },
    });
  });

  it('answers the tail of a job log by default, saying how many lines and bytes it cut', async () => {
    const res = await world.call('GET', `/v1/repos/alice/web/checks/jobs/${jobId}/log`);
    expect(res.body).toMatchObject({
      mode: 'tail',
      total_lines: 500,
      cut_lines: 300,
      total_bytes: Buffer.byteLength(log),
    });
    const lines = res.body.lines as { number: number }[];
    expect(lines).toHaveLength(200);
    expect(lines[0]!.number).toBe(301);
    expect(res.body.cut_bytes).toBeGreaterThan(0);
  });

  it('answers a line range, cutting over-long lines, and a search with its match count', async () => {
    const range = await world.call('GET', `/v1/repos/alice/web/checks/jobs/${jobId}/log?start=10&end=12`);
    const lines = range.body.lines as { number: number; text: string }[];
    expect(lines.map((l) => l.number)).toEqual([10, 11, 12]);
    expect(Buffer.byteLength(lines[1]!.text)).toBe(2000);
    expect(range.body.cut_lines).toBe(497);
    const search = await world.call('GET', `/v1/repos/alice/web/checks/jobs/${jobId}/log?search=needle`);
    expect(search.body).toMatchObject({
      mode: 'search',
      matches: 1,
      lines: [{ number: 251, text: 'ERROR: the needle broke' }],
    });
  });

  it('cancels a run, re-runs it, and dispatches a workflow with the new run id', async () => {
    expect((await world.call('POST', `/v1/repos/alice/web/checks/runs/${runId}/cancel`)).status).toBe(202);
    expect((await world.call('GET', `/v1/repos/alice/web/checks/runs/${runId}`)).body).toMatchObject({
      status: 'completed',
      conclusion: 'cancelled',
    });
    expect((await world.call('POST', `/v1/repos/alice/web/checks/runs/${runId}/cancel`)).status).toBe(409);
    expect((await world.call('POST', `/v1/repos/alice/web/checks/runs/${runId}/rerun`)).status).toBe(202);
    expect((await world.call('GET', `/v1/repos/alice/web/checks/runs/${runId}`)).body.attempt).toBe(2);
    const dispatched = await world.call('POST', '/v1/repos/alice/web/checks/workflows/ci.yml/dispatch', {
      body: { ref: 'main' },
    });
    expect(dispatched.status).toBe(202);
    expect(typeof dispatched.body.run_id).toBe('number');
    expect(world.double.repo('alice/web').runs.some((r) => r.id === dispatched.body.run_id)).toBe(true);
  });
});

describe('rate limits and conditional requests', () => {
  it('a repeated read is revalidated with its ETag: the 304 costs no primary quota', async () => {
    await world.call('GET', '/v1/repos/alice/web');
    const before = world.double.quotaUsed('alice');
    const notModified = world.double.calls.filter((c) => c.status === 304).length;
    for (let i = 0; i < 5; i++) expect((await world.call('GET', '/v1/repos/alice/web')).status).toBe(200);
    expect(world.double.quotaUsed('alice')).toBe(before);
    expect(world.double.calls.filter((c) => c.status === 304).length).toBe(notModified + 5);
  });

  it('identical reads in flight at once are made once: N concurrent reads, exactly one platform call', async () => {
    await world.call('GET', '/v1/repos/alice/notes'); // the credential is resolved and the answer cached
    const N = 8;
    const coalesced = world.gateway.parts.platform.counters.coalesced;
    const before = world.double.calls.filter((c) => c.path === '/repos/alice/notes').length;
    // The platform holds its answer until every one of the N reads has joined the one in flight.
    const hold = world.double.hold('repos/get');
    const answers = Promise.all(Array.from({ length: N }, () => world.call('GET', '/v1/repos/alice/notes')));
    await waitFor(
      'the reads to join the one in flight',
      () => world.gateway.parts.platform.counters.coalesced - coalesced === N - 1,
    );
    expect(hold.arrived).toBe(1);
    hold.release();
    expect((await answers).map((a) => a.status)).toEqual(Array.from({ length: N }, () => 200));
    expect(world.double.calls.filter((c) => c.path === '/repos/alice/notes').length - before).toBe(1);
  });

  it('a secondary rate limit answers 429 with the platform\u2019s own Retry-After, without waiting', async () => {
    world.double.rateLimitNext('alice', 'secondary', 42);
    const res = await world.call('GET', '/v1/repos/alice/web');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('42');
    expect(res.body.detail).toContain('Retry-After');
  });

  it('a primary rate limit answers 429 with the seconds until the platform\u2019s reset; after the reset the call works again', async () => {
    world.double.rateLimitNext('alice', 'primary', 600);
    const res = await world.call('GET', '/v1/repos/alice/notes');
    expect(res.status).toBe(429);
    const wait = Number(res.headers.get('retry-after'));
    // Ten minutes (and the second the gateway adds so a client does not come back a moment early), less the moments the answer took.
    expect(wait).toBeGreaterThan(500);
    expect(wait).toBeLessThanOrEqual(602);
    // Still used up: the platform keeps refusing until its reset, and so does the gateway, without waiting itself.
    expect((await world.call('GET', '/v1/repos/alice/web')).status).toBe(429);
    // The reset arrives (an event of the double, not ten minutes of waiting).
    world.double.resetWindow('alice');
    const again = await world.call('GET', '/v1/repos/alice/notes');
    expect(again.status).toBe(200);
    expect(world.double.quota('alice').remaining).toBeGreaterThan(4000);
  });

  it('a resolved credential is reused from memory, not resolved per call', async () => {
    await world.call('GET', '/v1/repos/alice/web');
    const resolutions = world.gateway.parts.resolver.resolutions;
    for (let i = 0; i < 5; i++) await world.call('GET', '/v1/repos/alice/web');
    expect(world.gateway.parts.resolver.resolutions).toBe(resolutions);
  });

  it('a credential the platform stops accepting is refreshed once from the identity service', async () => {
    expect((await world.call('GET', '/v1/repos/acme/one', { profile: 'acme' })).status).toBe(200);
    const resolutions = world.gateway.parts.resolver.resolutions;
    world.double.revoke(`installation:${app.installationId}`);
    const res = await world.call('GET', '/v1/repos/acme/one', { profile: 'acme' });
    expect(res.status).toBe(200);
    expect(world.gateway.parts.resolver.resolutions).toBe(resolutions + 1);
  });
});

describe('what leaves the service', () => {
  it('no answer carries a member outside its schema', async () => {
    const { checked, undocumented, outside } = await projectionCheck(world);
    expect(undocumented).toEqual([]);
    expect(outside).toEqual([]);
    expect(Object.values(checked).reduce((a, b) => a + b, 0)).toBeGreaterThan(40);
    // Every group answered at least once: identity, repositories, pull requests, issues, CI, files and commits.
    for (const route of [
      'GET /v1/me',
      'GET /v1/repos/{owner}/{name}/pulls/{number}',
      'POST /v1/repos/{owner}/{name}/issues',
      'GET /v1/repos/{owner}/{name}/checks/jobs/{job_id}/log',
      'GET /v1/repos/{owner}/{name}/contents',
      'POST /v1/repos/{owner}/{name}/commits',
    ]) {
      expect(checked[route], route).toBeGreaterThan(0);
    }
  });

  it('the projection check itself finds a member outside a schema', async () => {
    world.answers.push({
      method: 'GET',
      path: '/v1/me',
      status: 200,
      body: { login: 'x', kind: 'token', selection: 'all', repositories: 1, token: 'leak' },
    });
    try {
      expect((await projectionCheck(world)).outside).toEqual(['GET /v1/me: $.token']);
    } finally {
      world.answers.pop();
    }
  });

  it('the platform credentials are in neither the data folder nor the logs', async () => {
    const issued = world.double.calls.length;
    expect(issued).toBeGreaterThan(0);
    const secrets = [PAT, ...(world.logs.join('\n').match(/ghs_[0-9a-f]{36}/g) ?? [])];
    const logs = world.logs.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    for (const s of secrets) expect(logs).not.toContain(s);
    expect(logs).not.toContain('ghs_');
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else files.push(p);
      }
    };
    walk(world.dataDir);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const content = readFileSync(f).toString('latin1');
      expect(content).not.toContain(PAT);
      expect(content).not.toContain('ghs_');
    }
  });

  it('every request the double received matched GitHub\u2019s description and every answer validated', () => {
    expect(world.double.violations).toEqual([]);
  });

  it('serves its OpenAPI document and the offline docs', async () => {
    const doc = (await (await fetch(`${world.gateway.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/me', '/v1/repos/{owner}/{name}/pulls/{number}', '/v1/subscriptions']),
    );
    expect((await fetch(`${world.gateway.url}/docs`)).status).toBe(200);
  });

  it('documents the 404 of a profile without a connection and the 422 of a missing X-Identity-Profile on every route that answers them', async () => {
    expect((await world.call('POST', '/v1/repos', { profile: 'nobody', body: { name: 'x' } })).status).toBe(404);
    expect((await world.call('GET', '/v1/me', { profile: null })).status).toBe(422);
    type Operation = { operationId: string; responses: Record<string, unknown> };
    const doc = (await (await fetch(`${world.gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation>>;
    };
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/v1/'))
      .flatMap(([, path]) => Object.values(path));
    const without = (status: string) => operations.filter((o) => !(status in o.responses)).map((o) => o.operationId);
    expect(operations.length).toBeGreaterThan(30);
    expect(without('404')).toEqual([]);
    expect(without('422')).toEqual([]);
  });
});

describe('GitHub Enterprise', () => {
  it('works by pointing REPOHOST_PLATFORM_URL at the server\u2019s /api/v3', async () => {
    const dataDir = tempDir('repohost-ghes');
    const ghes = await startRepohostGateway({
      REPOHOST_PORT: '0',
      REPOHOST_DATA_DIR: dataDir,
      ...world.identity.trust('REPOHOST_'),
      REPOHOST_PLATFORM_URL: `${world.double.url}/api/v3`,
      REPOHOST_IDENTITY_SERVICE_TOKEN: world.serviceToken,
      REPOHOST_LOG_LEVEL: 'silent',
    });
    try {
      const res = await fetch(`${ghes.url}/v1/repos/alice/web`, {
        headers: { authorization: `Bearer ${await world.token()}`, 'x-identity-profile': 'work' },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { full_name: string }).full_name).toBe('alice/web');
      expect((await fetch(`${ghes.url}/ready`)).status).toBe(200);
      expect(world.double.violations).toEqual([]);
    } finally {
      await ghes.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('readiness', () => {
  it('is ready when identity keys, the platform and the database answer', async () => {
    const res = await fetch(`${world.gateway.url}/ready`);
    expect(res.status).toBe(200);
  });

  it('answers 503 naming the platform when it cannot be reached', async () => {
    world.double.down = true;
    try {
      const res = await fetch(`${world.gateway.url}/ready`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { detail: string }).detail).toContain('platform');
    } finally {
      world.double.down = false;
    }
  });
});
