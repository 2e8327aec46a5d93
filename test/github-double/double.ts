import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';
import { Contract, ContractViolation, type MatchedOperation } from './contract.ts';

/**
 * A local GitHub for tests. Every request it receives must match an operation of GitHub's OpenAPI
 * description and every answer must validate against that operation's schema; a mismatch answers 500
 * and is recorded in `violations`, which each test file asserts empty. It counts calls and primary
 * quota per identity, answers 304 to a matching If-None-Match without spending quota (as GitHub
 * does), and can answer primary and secondary rate limits with Retry-After.
 */

type Json = Record<string, unknown>;
export type Access = 'all' | string[];

interface Identity {
  kind: 'token' | 'app';
  /** Quota bucket: a user's tokens share one, an installation has its own. */
  bucket: string;
  login: string;
  access: Access;
  /** Epoch ms after which the platform refuses the token (installation tokens); undefined: never. */
  expiresAt?: number;
}

interface FileEntry {
  mode: string;
  content: string;
}
interface Commit {
  sha: string;
  tree: string;
  parents: string[];
  message: string;
}
interface CheckRun {
  id: number;
  name: string;
  head_sha: string;
  created: number;
  settleMs: number;
  conclusion: string;
}
interface Job {
  id: number;
  name: string;
  log: string;
}
interface Run {
  id: number;
  name: string;
  head_sha: string;
  head_branch: string;
  workflow_id: number;
  created: number;
  settleMs: number;
  conclusion: string;
  cancelled: boolean;
  attempt: number;
  jobs: Job[];
}
interface Pull {
  number: number;
  title: string;
  body: string;
  head: string;
  base: string;
  state: 'open' | 'closed';
  merged: boolean;
  draft: boolean;
  user: string;
  reviews: { id: number; user: string; state: string; body: string; submitted_at: string }[];
  comments: {
    id: number;
    user: string;
    body: string;
    path: string;
    line: number;
    in_reply_to_id?: number;
    created_at: string;
  }[];
}
interface Issue {
  number: number;
  title: string;
  body: string;
  state: 'open' | 'closed';
  user: string;
  isPull: boolean;
  comments: { id: number; user: string; body: string; created_at: string }[];
}
export interface Repo {
  id: number;
  owner: string;
  name: string;
  private: boolean;
  description: string | null;
  archived: boolean;
  defaultBranch: string;
  /** Answer 403 "Resource not accessible" instead of 404 to identities that cannot see it. */
  hiddenAs403: boolean;
  refs: Map<string, string>;
  commits: Map<string, Commit>;
  trees: Map<string, Map<string, FileEntry>>;
  pulls: Pull[];
  issues: Issue[];
  checkRuns: CheckRun[];
  statuses: { id: number; sha: string; context: string; state: string }[];
  runs: Run[];
  workflows: { id: number; name: string; path: string }[];
  blobs: Map<string, string>;
  /** Issues turned off in the repository's settings: creating or changing an issue answers 410. */
  issuesDisabled?: boolean;
  /** Branches whose ref the Git Data API may not move (branch protection or a ruleset). */
  protectedBranches?: Set<string>;
}

interface Quota {
  limit: number;
  /** Charged in the current window; back to 0 at `reset`. */
  used: number;
  /** Epoch seconds when the window ends and the quota is restored. */
  reset: number;
  /** Charged since the double started, across windows (what tests compare). */
  spent: number;
}

/** Files larger than this answer the contents API with no content and encoding "none", as GitHub does over 1 MB. */
export const CONTENTS_API_LIMIT = 1024 * 1024;

export interface Call {
  method: string;
  path: string;
  operationId: string;
  status: number;
  bucket: string | undefined;
  /** Epoch ms when the request arrived. */
  at: number;
}

/** Requests of an operation held unanswered until released (a platform that does not answer). */
export interface Hold {
  /** Requests waiting now. */
  readonly waiting: number;
  /** Requests that arrived while held. */
  readonly arrived: number;
  /** Resolves once `ok` holds of the counts: looked at now and at each arrival, each caller that goes away and the release. */
  when(ok: (counts: { waiting: number; arrived: number }) => boolean): Promise<void>;
  /** Lets every waiting request (and later ones) through, and ends the hold. */
  release(): void;
}

export interface GitHubDouble {
  readonly url: string;
  readonly calls: Call[];
  readonly violations: string[];
  /** Non-304 requests charged to an identity's bucket (a user's login, or `installation:<id>`) since the double started. */
  quotaUsed(bucket: string): number;
  /** The bucket's current primary-limit window, as the x-ratelimit-* headers report it. */
  quota(bucket: string): { limit: number; remaining: number; reset: number };
  addUser(login: string): void;
  /** A fine-grained token of `login` reaching all of the user's repositories or a selection. */
  addToken(token: string, login: string, access?: Access): void;
  /** An app with one installation on `owner`; returns what identity needs to mint installation tokens. */
  addInstallation(owner: string, access: Access): { appId: string; installationId: string; privateKey: string };
  addRepo(
    fullName: string,
    options?: { private?: boolean; hiddenAs403?: boolean; files?: Record<string, string>; description?: string },
  ): Repo;
  repo(fullName: string): Repo;
  /** Someone else pushes to a branch (the gateway's commit must then refuse, not force). */
  pushCommit(fullName: string, branch: string, files: Record<string, string | null>, message?: string): string;
  headOf(fullName: string, branch: string): string;
  filesAt(fullName: string, branch: string): Record<string, string>;
  addPull(fullName: string, pull: { head: string; base?: string; title?: string; user?: string }): number;
  addReview(fullName: string, pull: number, review: { user: string; state: string; body?: string }): void;
  addReviewComment(
    fullName: string,
    pull: number,
    comment: { user: string; body: string; path: string; line: number; in_reply_to_id?: number },
  ): number;
  mergePullOutside(fullName: string, pull: number): void;
  addCheckRun(fullName: string, headSha: string, run: { name: string; settleMs?: number; conclusion?: string }): number;
  addWorkflowRun(
    fullName: string,
    run: {
      name: string;
      head_branch: string;
      settleMs?: number;
      conclusion?: string;
      jobs?: { name: string; log: string }[];
    },
  ): { runId: number; jobIds: number[] };
  addWorkflow(fullName: string, name: string, path: string): number;
  /** A commit status (the older API external CI uses); the newest per context counts. */
  addStatus(
    fullName: string,
    sha: string,
    status: { context: string; state: 'pending' | 'success' | 'failure' | 'error' },
  ): void;
  settle(fullName: string): void;
  /**
   * The next request of a bucket answers a rate limit. Secondary: 429 with Retry-After. Primary: the
   * bucket's quota is used up until its reset, `retryAfterSeconds` from now; every request until then
   * answers 403 with x-ratelimit-remaining 0, and from the reset on the quota is whole again.
   */
  rateLimitNext(bucket: string, kind: 'primary' | 'secondary', retryAfterSeconds?: number): void;
  /** Starts the bucket's next primary-limit window now, as reaching its x-ratelimit-reset would (a reset a test waits for as an event, not a time). */
  resetWindow(bucket: string): void;
  /** Ends the lifetime of the bucket's installation tokens now, as reaching their expiry would. */
  expireTokens(bucket: string): void;
  /** Holds every request of this operation unanswered until released (or until the caller gives up). */
  hold(operationId: string): Hold;
  /** Lifetime of the installation tokens minted from now on (GitHub: one hour); an expired one answers 401. */
  installationTokenTtlSeconds: number;
  /** Runs `fn` just before the next request of this operation is answered (someone else acting in between). */
  onNext(operationId: string, fn: () => void): void;
  /** Revokes every token of a bucket (the platform then answers 401 Bad credentials). */
  revoke(bucket: string): void;
  /** Every request answers 503 while true (for readiness checks). */
  down: boolean;
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest';
/** Operations authenticated with the app's own JWT rather than a token. */
const APP_JWT_OPERATIONS = new Set(['apps/create-installation-access-token', 'apps/get-installation']);
/** The Git Data API serves blobs up to 100 MB. */
const BLOB_API_LIMIT = 100 * 1024 * 1024;

function sha(...parts: unknown[]): string {
  return createHash('sha1').update(JSON.stringify(parts)).update(randomBytes(8)).digest('hex');
}
function treeSha(files: Map<string, FileEntry>): string {
  return createHash('sha1')
    .update(JSON.stringify([...files.entries()].sort()))
    .digest('hex');
}
function blobSha(content: string): string {
  return createHash('sha1')
    .update(`blob ${Buffer.byteLength(content)}\0${content}`)
    .digest('hex');
}
function deepMerge(base: unknown, over: unknown): unknown {
  if (over === undefined) return base;
  if (
    !over ||
    typeof over !== 'object' ||
    Array.isArray(over) ||
    !base ||
    typeof base !== 'object' ||
    Array.isArray(base)
  )
    return over;
  const out: Json = { ...(base as Json) };
  for (const [k, v] of Object.entries(over as Json)) out[k] = deepMerge(out[k], v);
  return out;
}

class Answer {
  constructor(
    readonly status: number,
    readonly body?: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}
const error = (status: number, message: string, headers: Record<string, string> = {}) =>
  new Answer(status, { message, documentation_url: DOCS, status: String(status) }, headers);

let contractSingleton: Contract | undefined;

export async function startGitHubDouble(): Promise<GitHubDouble> {
  const contract = (contractSingleton ??= new Contract());
  const calls: Call[] = [];
  const violations: string[] = [];
  const tokens = new Map<string, Identity>();
  const users = new Map<string, number>();
  const apps = new Map<string, { installationId: string; publicKey: string; owner: string; access: Access }>();
  const repos = new Map<string, Repo>();
  const quotas = new Map<string, Quota>();
  const pendingLimits = new Map<string, { kind: 'primary' | 'secondary'; retryAfter: number }>();
  const logs = new Map<string, string>();
  const before = new Map<string, () => void>();
  const holds = new Map<string, { wait(res: ServerResponse): Promise<'released' | 'gone'> }>();
  let nextId = 1000;
  let base = '';
  let storage = '';

  const make = (name: string, over: Json): Json => deepMerge(contract.synthesize(contract.schema(name)), over) as Json;
  const userOf = (login: string) =>
    make('simple-user', {
      login,
      id: users.get(login) ?? 1,
      type: 'User',
      html_url: `https://github.example/${login}`,
      url: `${base}/users/${login}`,
    });
  const repoJson = (r: Repo, schema = 'full-repository') =>
    make(schema, {
      id: r.id,
      node_id: `R_${r.id}`,
      name: r.name,
      full_name: `${r.owner}/${r.name}`,
      private: r.private,
      visibility: r.private ? 'private' : 'public',
      description: r.description,
      archived: r.archived,
      default_branch: r.defaultBranch,
      owner: userOf(r.owner),
      html_url: `https://github.example/${r.owner}/${r.name}`,
      url: `${base}/repos/${r.owner}/${r.name}`,
      pushed_at: '2026-01-01T00:00:00Z',
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:00Z',
    });

  const canSee = (id: Identity, r: Repo) =>
    !r.private || (id.access === 'all' ? r.owner === id.login : id.access.includes(`${r.owner}/${r.name}`));
  const canWrite = (id: Identity, r: Repo) =>
    id.access === 'all' ? r.owner === id.login : id.access.includes(`${r.owner}/${r.name}`);

  const reachable = (id: Identity) =>
    [...repos.values()].filter((r) =>
      id.access === 'all' ? r.owner === id.login : id.access.includes(`${r.owner}/${r.name}`),
    );

  function checkStatus(created: number, settleMs: number): 'queued' | 'in_progress' | 'completed' {
    const age = Date.now() - created;
    if (age >= settleMs) return 'completed';
    return age >= settleMs / 2 ? 'in_progress' : 'queued';
  }
  const checkRunJson = (r: Repo, c: CheckRun) => {
    const status = checkStatus(c.created, c.settleMs);
    return make('check-run', {
      id: c.id,
      name: c.name,
      head_sha: c.head_sha,
      status,
      conclusion: status === 'completed' ? c.conclusion : null,
      started_at: new Date(c.created).toISOString(),
      completed_at: status === 'completed' ? new Date(c.created + c.settleMs).toISOString() : null,
      html_url: `https://github.example/${r.owner}/${r.name}/runs/${c.id}`,
      details_url: `https://github.example/${r.owner}/${r.name}/runs/${c.id}`,
      app: null,
      pull_requests: [],
    });
  };
  const runStatus = (run: Run) => (run.cancelled ? 'completed' : checkStatus(run.created, run.settleMs));
  const runJson = (r: Repo, run: Run) => {
    const status = runStatus(run);
    return make('workflow-run', {
      id: run.id,
      name: run.name,
      head_sha: run.head_sha,
      head_branch: run.head_branch,
      status,
      conclusion: status === 'completed' ? (run.cancelled ? 'cancelled' : run.conclusion) : null,
      workflow_id: run.workflow_id,
      run_attempt: run.attempt,
      html_url: `https://github.example/${r.owner}/${r.name}/actions/runs/${run.id}`,
      repository: repoJson(r, 'minimal-repository'),
      head_repository: repoJson(r, 'minimal-repository'),
      created_at: new Date(run.created).toISOString(),
      updated_at: new Date(run.created).toISOString(),
    });
  };

  function commitFiles(r: Repo, parent: string | undefined, files: Map<string, FileEntry>, message: string): string {
    const tsha = treeSha(files);
    r.trees.set(tsha, files);
    const csha = sha(tsha, parent, message);
    r.commits.set(csha, { sha: csha, tree: tsha, parents: parent ? [parent] : [], message });
    return csha;
  }
  const filesOf = (r: Repo, commitSha: string) => r.trees.get(r.commits.get(commitSha)!.tree)!;
  function isAncestor(r: Repo, ancestor: string, of: string): boolean {
    const seen = new Set<string>();
    const stack = [of];
    while (stack.length) {
      const s = stack.pop()!;
      if (s === ancestor) return true;
      if (seen.has(s)) continue;
      seen.add(s);
      stack.push(...(r.commits.get(s)?.parents ?? []));
    }
    return false;
  }

  const pullJson = (r: Repo, p: Pull, schema = 'pull-request') => {
    const head = r.refs.get(`heads/${p.head}`) ?? '0'.repeat(40);
    const baseSha = r.refs.get(`heads/${p.base}`) ?? '0'.repeat(40);
    const side = (ref: string, s: string) => ({
      ref,
      sha: s,
      label: `${r.owner}:${ref}`,
      user: userOf(r.owner),
      repo: repoJson(r, 'repository'),
    });
    return make(schema, {
      id: p.number + 50_000,
      number: p.number,
      title: p.title,
      body: p.body,
      state: p.state,
      draft: p.draft,
      merged: p.merged,
      merged_at: p.merged ? '2026-01-02T00:00:00Z' : null,
      user: userOf(p.user),
      head: side(p.head, head),
      base: side(p.base, baseSha),
      html_url: `https://github.example/${r.owner}/${r.name}/pull/${p.number}`,
      mergeable: p.state === 'open' ? true : null,
      mergeable_state: 'clean',
      requested_reviewers: [],
      requested_teams: [],
      labels: [],
      assignees: [],
    });
  };
  const issueJson = (r: Repo, i: Issue) =>
    make('issue', {
      id: i.number + 60_000,
      number: i.number,
      title: i.title,
      body: i.body,
      state: i.state,
      user: userOf(i.user),
      comments: i.comments.length,
      html_url: `https://github.example/${r.owner}/${r.name}/issues/${i.number}`,
      labels: [],
      assignees: [],
      ...(i.isPull
        ? {
            pull_request: {
              url: `${base}/repos/${r.owner}/${r.name}/pulls/${i.number}`,
              html_url: null,
              diff_url: null,
              patch_url: null,
            },
          }
        : {}),
    });

  function page<T>(
    items: T[],
    query: Record<string, string>,
    path: string,
  ): { slice: T[]; headers: Record<string, string> } {
    const perPage = Math.min(Number(query.per_page ?? 30), 100);
    const pageNo = Math.max(Number(query.page ?? 1), 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const links: string[] = [];
    const at = (n: number) => {
      const q = new URLSearchParams({ ...query, per_page: String(perPage), page: String(n) });
      return `<${base}${path}?${q.toString()}>`;
    };
    if (pageNo < last) links.push(`${at(pageNo + 1)}; rel="next"`, `${at(last)}; rel="last"`);
    if (pageNo > 1) links.push(`${at(pageNo - 1)}; rel="prev"`, `${at(1)}; rel="first"`);
    return {
      slice: items.slice((pageNo - 1) * perPage, pageNo * perPage),
      headers: links.length ? { link: links.join(', ') } : {},
    };
  }

  function findPull(r: Repo, n: string): Pull {
    const p = r.pulls.find((x) => x.number === Number(n));
    if (!p) throw error(404, 'Not Found');
    return p;
  }

  /** One documented operation; `id` is the caller, already authenticated. */
  async function operate(
    m: MatchedOperation,
    id: Identity | undefined,
    query: Record<string, string>,
    body: Json,
    authorization: string,
  ): Promise<Answer> {
    const { params } = m;
    if (m.operationId === 'meta/root') return new Answer(200, make('root', {}));
    if (APP_JWT_OPERATIONS.has(m.operationId)) {
      // Authenticated as the app itself (its JWT), not as an installation.
      const jwt = /^Bearer (.+)$/i.exec(authorization)?.[1] ?? '';
      const app = [...apps.entries()].find(([, a]) => a.installationId === params.installation_id);
      if (!app) return error(404, 'Not Found');
      try {
        const { payload } = await jwtVerify(jwt, await importSPKI(app[1].publicKey, 'RS256'));
        if (String(payload.iss) !== app[0]) throw new Error('wrong issuer');
      } catch {
        return error(401, 'A JSON web token could not be decoded');
      }
      const selection = app[1].access === 'all' ? 'all' : 'selected';
      if (m.operationId === 'apps/get-installation') {
        return new Answer(
          200,
          make('installation', {
            id: Number(app[1].installationId),
            app_id: Number(app[0]),
            account: userOf(app[1].owner),
            target_type: 'Organization',
            repository_selection: selection,
            access_tokens_url: `${base}/app/installations/${app[1].installationId}/access_tokens`,
            repositories_url: `${base}/installation/repositories`,
            html_url: `https://github.example/organizations/${app[1].owner}/settings/installations/${app[1].installationId}`,
            suspended_by: null,
            suspended_at: null,
            single_file_name: null,
          }),
        );
      }
      const token = `ghs_${randomBytes(18).toString('hex')}`;
      const expiresAt = Date.now() + double.installationTokenTtlSeconds * 1000;
      tokens.set(token, {
        kind: 'app',
        bucket: `installation:${app[1].installationId}`,
        login: app[1].owner,
        access: app[1].access,
        expiresAt,
      });
      return new Answer(
        201,
        make('installation-token', {
          token,
          expires_at: new Date(expiresAt).toISOString().replace(/\.\d+Z$/, 'Z'),
          repository_selection: selection,
          permissions: {},
        }),
      );
    }
    if (!id) return error(401, 'Requires authentication');

    switch (m.operationId) {
      case 'users/get-authenticated': {
        if (id.kind === 'app') return error(403, 'Resource not accessible by integration');
        const owned = [...repos.values()].filter((r) => r.owner === id.login);
        return new Answer(
          200,
          make('private-user', {
            login: id.login,
            id: users.get(id.login) ?? 1,
            type: 'User',
            user_view_type: 'private',
            public_repos: owned.filter((r) => !r.private).length,
            total_private_repos: owned.filter((r) => r.private).length,
            owned_private_repos: owned.filter((r) => r.private).length,
          }),
        );
      }
      case 'apps/list-repos-accessible-to-installation': {
        if (id.kind !== 'app')
          return error(
            403,
            'You must authenticate with an installation access token in order to list repositories for an installation.',
          );
        const all = reachable(id);
        const { slice, headers } = page(all, query, '/installation/repositories');
        return new Answer(
          200,
          {
            total_count: all.length,
            repositories: slice.map((r) => repoJson(r, 'repository')),
            repository_selection: id.access === 'all' ? 'all' : 'selected',
          },
          headers,
        );
      }
      case 'repos/list-for-authenticated-user': {
        if (id.kind === 'app') return error(403, 'Resource not accessible by integration');
        const { slice, headers } = page(reachable(id), query, '/user/repos');
        return new Answer(
          200,
          slice.map((r) => repoJson(r, 'repository')),
          headers,
        );
      }
      case 'search/repos': {
        const words = (query.q ?? '').toLowerCase().split(/\s+/).filter(Boolean);
        const found = [...repos.values()].filter(
          (r) =>
            canSee(id, r) &&
            words.every((w) =>
              `${r.owner}/${r.name} ${r.description ?? ''}`.toLowerCase().includes(w.replace(/^user:/, '')),
            ),
        );
        const { slice, headers } = page(found, query, '/search/repositories');
        return new Answer(
          200,
          {
            total_count: found.length,
            incomplete_results: false,
            items: slice.map((r) => repoJson(r, 'repo-search-result-item')),
          },
          headers,
        );
      }
      case 'repos/create-for-authenticated-user': {
        if (id.kind === 'app') return error(403, 'Resource not accessible by integration');
        const name = String(body.name);
        if (repos.has(`${id.login}/${name}`)) {
          return new Answer(422, {
            message: 'Repository creation failed.',
            documentation_url: DOCS,
            errors: [
              { resource: 'Repository', code: 'custom', field: 'name', message: 'name already exists on this account' },
            ],
          });
        }
        const r = addRepo(`${id.login}/${name}`, {
          private: body.private === true,
          description: (body.description as string | undefined) ?? undefined,
          files: body.auto_init ? { 'README.md': `# ${name}\n` } : {},
        });
        return new Answer(201, repoJson(r));
      }
    }

    // Everything below is about one repository.
    const r = repos.get(`${params.owner}/${params.repo}`);
    if (!r || !canSee(id, r)) {
      if (r?.hiddenAs403) return error(403, 'Resource not accessible by personal access token');
      return error(404, 'Not Found');
    }
    const reading = m.method === 'get';
    if (!reading && !canWrite(id, r)) return error(403, 'Resource not accessible by personal access token');
    if (!reading && r.archived && m.operationId !== 'repos/update' && m.operationId !== 'repos/delete') {
      return error(403, 'Repository was archived so is read-only.');
    }

    switch (m.operationId) {
      case 'repos/get':
        return new Answer(200, repoJson(r));
      case 'repos/update': {
        if (typeof body.description === 'string' || body.description === null)
          r.description = body.description as string | null;
        if (body.visibility === 'private' || body.private === true) r.private = true;
        if (body.visibility === 'public' || body.private === false) r.private = false;
        if (typeof body.archived === 'boolean') r.archived = body.archived;
        return new Answer(200, repoJson(r));
      }
      case 'repos/delete':
        repos.delete(`${r.owner}/${r.name}`);
        return new Answer(204);

      case 'pulls/list': {
        const state = query.state ?? 'open';
        const list = r.pulls.filter((p) => state === 'all' || p.state === state).sort((a, b) => b.number - a.number);
        const { slice, headers } = page(list, query, `/repos/${r.owner}/${r.name}/pulls`);
        return new Answer(
          200,
          slice.map((p) => pullJson(r, p, 'pull-request-simple')),
          headers,
        );
      }
      case 'pulls/get':
        return new Answer(200, pullJson(r, findPull(r, params.pull_number!)));
      case 'pulls/create': {
        if (!r.refs.has(`heads/${String(body.head)}`)) {
          return new Answer(422, {
            message: 'Validation Failed',
            documentation_url: DOCS,
            errors: [{ resource: 'PullRequest', code: 'invalid', field: 'head' }],
          });
        }
        const number = r.pulls.length + r.issues.length + 1;
        const p: Pull = {
          number,
          title: String(body.title),
          body: String(body.body ?? ''),
          head: String(body.head),
          base: String(body.base),
          state: 'open',
          merged: false,
          draft: body.draft === true,
          user: id.login,
          reviews: [],
          comments: [],
        };
        r.pulls.push(p);
        r.issues.push({
          number,
          title: p.title,
          body: p.body,
          state: 'open',
          user: id.login,
          isPull: true,
          comments: [],
        });
        return new Answer(201, pullJson(r, p));
      }
      case 'pulls/update': {
        const p = findPull(r, params.pull_number!);
        if (typeof body.title === 'string') p.title = body.title;
        if (typeof body.body === 'string') p.body = body.body;
        if (body.state === 'open' || body.state === 'closed') p.state = body.state;
        if (typeof body.base === 'string') p.base = body.base;
        return new Answer(200, pullJson(r, p));
      }
      case 'pulls/list-files': {
        const p = findPull(r, params.pull_number!);
        const head = filesOf(r, r.refs.get(`heads/${p.head}`)!);
        const baseFiles = filesOf(r, r.refs.get(`heads/${p.base}`)!);
        const paths = [...new Set([...head.keys(), ...baseFiles.keys()])].sort();
        const changed = paths
          .filter((path) => head.get(path)?.content !== baseFiles.get(path)?.content)
          .map((path) => {
            const before = baseFiles.get(path)?.content;
            const after = head.get(path)?.content;
            const status = before === undefined ? 'added' : after === undefined ? 'removed' : 'modified';
            const minus = (before ?? '')
              .split('\n')
              .filter(Boolean)
              .map((l) => `-${l}`);
            const plus = (after ?? '')
              .split('\n')
              .filter(Boolean)
              .map((l) => `+${l}`);
            return make('diff-entry', {
              sha: blobSha(after ?? ''),
              filename: path,
              status,
              additions: plus.length,
              deletions: minus.length,
              changes: plus.length + minus.length,
              patch: [`@@ -1,${minus.length} +1,${plus.length} @@`, ...minus, ...plus].join('\n'),
            });
          });
        const { slice, headers } = page(changed, query, `/repos/${r.owner}/${r.name}/pulls/${p.number}/files`);
        return new Answer(200, slice, headers);
      }
      case 'pulls/list-reviews': {
        const p = findPull(r, params.pull_number!);
        const { slice, headers } = page(p.reviews, query, `/repos/${r.owner}/${r.name}/pulls/${p.number}/reviews`);
        return new Answer(
          200,
          slice.map((v) =>
            make('pull-request-review', {
              id: v.id,
              user: userOf(v.user),
              state: v.state,
              body: v.body,
              submitted_at: v.submitted_at,
              commit_id: r.refs.get(`heads/${p.head}`) ?? null,
            }),
          ),
          headers,
        );
      }
      case 'pulls/create-review': {
        const p = findPull(r, params.pull_number!);
        const state =
          { APPROVE: 'APPROVED', REQUEST_CHANGES: 'CHANGES_REQUESTED', COMMENT: 'COMMENTED' }[String(body.event)] ??
          'PENDING';
        const review = {
          id: nextId++,
          user: id.login,
          state,
          body: String(body.body ?? ''),
          submitted_at: new Date().toISOString(),
        };
        p.reviews.push(review);
        return new Answer(
          200,
          make('pull-request-review', {
            id: review.id,
            user: userOf(id.login),
            state,
            body: review.body,
            submitted_at: review.submitted_at,
            commit_id: null,
          }),
        );
      }
      case 'pulls/list-review-comments': {
        const p = findPull(r, params.pull_number!);
        const { slice, headers } = page(p.comments, query, `/repos/${r.owner}/${r.name}/pulls/${p.number}/comments`);
        return new Answer(
          200,
          slice.map((c) =>
            make('pull-request-review-comment', {
              id: c.id,
              user: userOf(c.user),
              body: c.body,
              path: c.path,
              line: c.line,
              ...(c.in_reply_to_id ? { in_reply_to_id: c.in_reply_to_id } : {}),
              created_at: c.created_at,
              updated_at: c.created_at,
            }),
          ),
          headers,
        );
      }
      case 'pulls/merge': {
        const p = findPull(r, params.pull_number!);
        const head = r.refs.get(`heads/${p.head}`)!;
        if (p.merged || p.state !== 'open')
          return new Answer(405, { message: 'Pull Request is not mergeable', documentation_url: DOCS });
        if (typeof body.sha === 'string' && body.sha !== head)
          return new Answer(409, {
            message: 'Head branch was modified. Review and try the merge again.',
            documentation_url: DOCS,
          });
        const baseHead = r.refs.get(`heads/${p.base}`)!;
        const merged = commitFiles(
          r,
          baseHead,
          new Map(filesOf(r, head)),
          String(body.commit_title ?? `Merge pull request #${p.number}`),
        );
        r.commits.get(merged)!.parents.push(head);
        r.refs.set(`heads/${p.base}`, merged);
        p.merged = true;
        p.state = 'closed';
        return new Answer(200, { sha: merged, merged: true, message: 'Pull Request successfully merged' });
      }

      case 'issues/list-for-repo': {
        const state = query.state ?? 'open';
        const list = r.issues.filter((i) => state === 'all' || i.state === state).sort((a, b) => b.number - a.number);
        const { slice, headers } = page(list, query, `/repos/${r.owner}/${r.name}/issues`);
        return new Answer(
          200,
          slice.map((i) => issueJson(r, i)),
          headers,
        );
      }
      case 'issues/create': {
        if (r.issuesDisabled) return error(410, 'Issues are disabled for this repo');
        const number = r.pulls.length + r.issues.filter((i) => !i.isPull).length + 1;
        const i: Issue = {
          number,
          title: String(body.title),
          body: String(body.body ?? ''),
          state: 'open',
          user: id.login,
          isPull: false,
          comments: [],
        };
        r.issues.push(i);
        return new Answer(201, issueJson(r, i));
      }
      case 'issues/update': {
        const i = r.issues.find((x) => x.number === Number(params.issue_number));
        if (!i) return error(404, 'Not Found');
        if (body.state === 'open' || body.state === 'closed') i.state = body.state;
        const p = r.pulls.find((x) => x.number === i.number);
        if (p && !p.merged && (body.state === 'open' || body.state === 'closed')) p.state = body.state;
        return new Answer(200, issueJson(r, i));
      }
      case 'issues/create-comment': {
        const i = r.issues.find((x) => x.number === Number(params.issue_number));
        if (!i) return error(404, 'Not Found');
        const c = { id: nextId++, user: id.login, body: String(body.body), created_at: new Date().toISOString() };
        i.comments.push(c);
        return new Answer(
          201,
          make('issue-comment', {
            id: c.id,
            body: c.body,
            user: userOf(c.user),
            created_at: c.created_at,
            updated_at: c.created_at,
            html_url: `https://github.example/${r.owner}/${r.name}/issues/${i.number}#issuecomment-${c.id}`,
          }),
        );
      }

      case 'checks/list-for-ref': {
        const refSha = r.refs.get(`heads/${params.ref}`) ?? params.ref;
        const list = r.checkRuns.filter((c) => c.head_sha === refSha);
        const { slice, headers } = page(list, query, `/repos/${r.owner}/${r.name}/commits/${params.ref}/check-runs`);
        return new Answer(200, { total_count: list.length, check_runs: slice.map((c) => checkRunJson(r, c)) }, headers);
      }
      case 'repos/get-combined-status-for-ref': {
        const refSha = r.refs.get(`heads/${params.ref}`) ?? params.ref!;
        // The newest status per context counts, as on GitHub.
        const latest = new Map<string, Repo['statuses'][number]>();
        for (const st of r.statuses.filter((x) => x.sha === refSha)) latest.set(st.context, st);
        const list = [...latest.values()];
        const state = list.some((x) => x.state === 'failure' || x.state === 'error')
          ? 'failure'
          : list.some((x) => x.state === 'pending') || list.length === 0
            ? 'pending'
            : 'success';
        return new Answer(200, {
          state,
          sha: refSha,
          total_count: list.length,
          statuses: list.map((x) =>
            make('simple-commit-status', {
              id: x.id,
              node_id: `S_${x.id}`,
              state: x.state,
              context: x.context,
              description: null,
              target_url: `https://ci.example/${x.id}`,
              avatar_url: null,
            }),
          ),
          repository: repoJson(r, 'minimal-repository'),
          commit_url: `${base}/repos/${r.owner}/${r.name}/commits/${refSha}`,
          url: `${base}/repos/${r.owner}/${r.name}/commits/${refSha}/status`,
        });
      }
      case 'actions/get-workflow-run': {
        const run = r.runs.find((x) => x.id === Number(params.run_id));
        if (!run) return error(404, 'Not Found');
        return new Answer(200, runJson(r, run));
      }
      case 'actions/list-jobs-for-workflow-run': {
        const run = r.runs.find((x) => x.id === Number(params.run_id));
        if (!run) return error(404, 'Not Found');
        const status = runStatus(run);
        const jobs = run.jobs.map((j) =>
          make('job', {
            id: j.id,
            run_id: run.id,
            name: j.name,
            status,
            conclusion: status === 'completed' ? (run.cancelled ? 'cancelled' : run.conclusion) : null,
            head_sha: run.head_sha,
            html_url: `https://github.example/${r.owner}/${r.name}/actions/runs/${run.id}/job/${j.id}`,
            created_at: new Date(run.created).toISOString(),
            started_at: new Date(run.created).toISOString(),
            completed_at: null,
            labels: [],
            steps: [],
          }),
        );
        const { slice, headers } = page(jobs, query, `/repos/${r.owner}/${r.name}/actions/runs/${run.id}/jobs`);
        return new Answer(200, { total_count: jobs.length, jobs: slice }, headers);
      }
      case 'actions/list-workflow-runs-for-repo': {
        const list = r.runs.filter((x) => !query.head_sha || x.head_sha === query.head_sha).sort((a, b) => b.id - a.id);
        const { slice, headers } = page(list, query, `/repos/${r.owner}/${r.name}/actions/runs`);
        return new Answer(200, { total_count: list.length, workflow_runs: slice.map((x) => runJson(r, x)) }, headers);
      }
      case 'actions/download-job-logs-for-workflow-run': {
        const job = r.runs.flatMap((x) => x.jobs).find((j) => j.id === Number(params.job_id));
        if (!job) return error(404, 'Not Found');
        const key = randomBytes(12).toString('hex');
        logs.set(key, job.log);
        return new Answer(302, undefined, { location: `${storage}/logs/${key}` });
      }
      case 'actions/re-run-workflow': {
        const run = r.runs.find((x) => x.id === Number(params.run_id));
        if (!run) return error(404, 'Not Found');
        if (runStatus(run) !== 'completed') return error(403, 'This workflow is already running');
        Object.assign(run, { created: Date.now(), cancelled: false, attempt: run.attempt + 1 });
        return new Answer(201, {});
      }
      case 'actions/cancel-workflow-run': {
        const run = r.runs.find((x) => x.id === Number(params.run_id));
        if (!run) return error(404, 'Not Found');
        if (runStatus(run) === 'completed')
          return new Answer(409, {
            message: 'Cannot cancel a workflow run that is completed.',
            documentation_url: DOCS,
          });
        run.cancelled = true;
        return new Answer(202, {});
      }
      case 'actions/create-workflow-dispatch': {
        const wf = r.workflows.find(
          (w) => String(w.id) === params.workflow_id || w.path.endsWith(`/${params.workflow_id}`),
        );
        if (!wf) return error(404, 'Not Found');
        const branch = String(body.ref);
        const head = r.refs.get(`heads/${branch}`);
        if (!head) return new Answer(422, { message: `No ref found for: ${branch}`, documentation_url: DOCS });
        const runId = nextId++;
        r.runs.push({
          id: runId,
          name: wf.name,
          head_sha: head,
          head_branch: branch,
          workflow_id: wf.id,
          created: Date.now(),
          settleMs: 60_000,
          conclusion: 'success',
          cancelled: false,
          attempt: 1,
          jobs: [],
        });
        if (body.return_run_details === true) {
          return new Answer(200, {
            workflow_run_id: runId,
            run_url: `${base}/repos/${r.owner}/${r.name}/actions/runs/${runId}`,
            html_url: `https://github.example/${r.owner}/${r.name}/actions/runs/${runId}`,
          });
        }
        return new Answer(204);
      }

      case 'repos/get-content': {
        const refName = query.ref ?? r.defaultBranch;
        const commit = r.refs.get(`heads/${refName}`) ?? (r.commits.has(refName) ? refName : undefined);
        if (!commit) return error(404, 'No commit found for the ref');
        const file = filesOf(r, commit).get(params.path!);
        if (!file) return error(404, 'Not Found');
        const name = params.path!.split('/').pop()!;
        const size = Buffer.byteLength(file.content);
        // Over 1 MB GitHub answers the metadata with no content and encoding "none"; the Git Data API serves the blob.
        const large = size > CONTENTS_API_LIMIT;
        return new Answer(
          200,
          make('content-file', {
            type: 'file',
            encoding: large ? 'none' : 'base64',
            size,
            name,
            path: params.path,
            content: large ? '' : Buffer.from(file.content).toString('base64'),
            sha: blobSha(file.content),
            url: `${base}/repos/${r.owner}/${r.name}/contents/${params.path}`,
            git_url: `${base}/repos/${r.owner}/${r.name}/git/blobs/${blobSha(file.content)}`,
          }),
        );
      }
      case 'git/get-blob': {
        let content = r.blobs.get(params.file_sha!);
        if (content === undefined) {
          for (const tree of r.trees.values()) {
            for (const f of tree.values()) if (blobSha(f.content) === params.file_sha) content = f.content;
            if (content !== undefined) break;
          }
        }
        if (content === undefined) return error(404, 'Not Found');
        const size = Buffer.byteLength(content);
        if (size > BLOB_API_LIMIT)
          return error(
            403,
            'This API returns blobs up to 100 MB in size. The requested blob is too large to fetch via the API.',
          );
        return new Answer(
          200,
          make('blob', {
            sha: params.file_sha,
            node_id: `B_${params.file_sha!.slice(0, 12)}`,
            size,
            url: `${base}/repos/${r.owner}/${r.name}/git/blobs/${params.file_sha}`,
            content: Buffer.from(content)
              .toString('base64')
              .replace(/(.{60})/g, '$1\n'),
            encoding: 'base64',
          }),
        );
      }
      case 'git/get-ref': {
        const s = r.refs.get(params.ref!);
        if (!s) return error(404, 'Not Found');
        return new Answer(
          200,
          make('git-ref', {
            ref: `refs/${params.ref}`,
            object: { type: 'commit', sha: s, url: `${base}/repos/${r.owner}/${r.name}/git/commits/${s}` },
          }),
        );
      }
      case 'git/get-commit': {
        const c = r.commits.get(params.commit_sha!);
        if (!c) return error(404, 'Not Found');
        return new Answer(
          200,
          make('git-commit', {
            sha: c.sha,
            message: c.message,
            tree: { sha: c.tree, url: 'https://github.example/t' },
            parents: c.parents.map((p) => ({
              sha: p,
              url: 'https://github.example/c',
              html_url: 'https://github.example/c',
            })),
          }),
        );
      }
      case 'git/get-tree': {
        const commit =
          r.refs.get(`heads/${params.tree_sha}`) ?? (r.commits.has(params.tree_sha!) ? params.tree_sha : undefined);
        const tsha = commit ? r.commits.get(commit)!.tree : params.tree_sha!;
        const files = r.trees.get(tsha);
        if (!files) return error(404, 'Not Found');
        const dirs = new Set<string>();
        for (const p of files.keys())
          p.split('/')
            .slice(0, -1)
            .forEach((_s, i, all) => dirs.add(all.slice(0, i + 1).join('/')));
        const entries = [
          ...[...dirs].map((d) => ({
            path: d,
            mode: '040000',
            type: 'tree',
            sha: createHash('sha1').update(d).digest('hex'),
          })),
          ...[...files.entries()].map(([path, f]) => ({
            path,
            mode: f.mode,
            type: 'blob',
            sha: blobSha(f.content),
            size: Buffer.byteLength(f.content),
          })),
        ]
          .filter((e) => query.recursive || !e.path.includes('/'))
          .sort((a, b) => a.path.localeCompare(b.path));
        return new Answer(200, { sha: tsha, url: 'https://github.example/t', tree: entries, truncated: false });
      }
      case 'git/create-tree': {
        const baseTree = body.base_tree ? r.trees.get(String(body.base_tree)) : new Map<string, FileEntry>();
        if (!baseTree) return new Answer(422, { message: 'Invalid tree info', documentation_url: DOCS });
        const files = new Map(baseTree);
        for (const e of body.tree as { path: string; mode: string; sha?: string | null; content?: string }[]) {
          if (e.sha === null) {
            if (!files.delete(e.path))
              return new Answer(422, {
                message: `GitRPC::BadObjectState: ${e.path} does not exist`,
                documentation_url: DOCS,
              });
          } else if (typeof e.content === 'string') files.set(e.path, { mode: e.mode, content: e.content });
          else if (typeof e.sha === 'string' && r.blobs.has(e.sha))
            files.set(e.path, { mode: e.mode, content: r.blobs.get(e.sha)! });
          else return new Answer(422, { message: 'Must supply tree.sha or tree.content', documentation_url: DOCS });
        }
        const tsha = treeSha(files);
        r.trees.set(tsha, files);
        return new Answer(201, {
          sha: tsha,
          url: 'https://github.example/t',
          tree: [...files.entries()].map(([path, f]) => ({
            path,
            mode: f.mode,
            type: 'blob',
            sha: blobSha(f.content),
          })),
          truncated: false,
        });
      }
      case 'git/create-blob': {
        const content =
          body.encoding === 'base64'
            ? Buffer.from(String(body.content), 'base64').toString('latin1')
            : String(body.content);
        const s = blobSha(content);
        r.blobs.set(s, content);
        return new Answer(201, { sha: s, url: `${base}/repos/${r.owner}/${r.name}/git/blobs/${s}` });
      }
      case 'git/create-commit': {
        const tsha = String(body.tree);
        if (!r.trees.has(tsha)) return new Answer(422, { message: 'Tree SHA does not exist', documentation_url: DOCS });
        const parents = (body.parents as string[] | undefined) ?? [];
        const csha = sha(tsha, parents, body.message);
        r.commits.set(csha, { sha: csha, tree: tsha, parents, message: String(body.message) });
        return new Answer(
          201,
          make('git-commit', {
            sha: csha,
            message: String(body.message),
            tree: { sha: tsha, url: 'https://github.example/t' },
            parents: parents.map((p) => ({
              sha: p,
              url: 'https://github.example/c',
              html_url: 'https://github.example/c',
            })),
          }),
        );
      }
      case 'git/update-ref': {
        const current = r.refs.get(params.ref!);
        if (!current) return new Answer(422, { message: 'Reference does not exist', documentation_url: DOCS });
        const target = String(body.sha);
        if (r.protectedBranches?.has(params.ref!.replace(/^heads\//, '')))
          return new Answer(422, {
            message: `Protected branch update failed for refs/${params.ref}.`,
            documentation_url: DOCS,
          });
        if (body.force !== true && !isAncestor(r, current, target))
          return new Answer(422, { message: 'Update is not a fast forward', documentation_url: DOCS });
        r.refs.set(params.ref!, target);
        return new Answer(
          200,
          make('git-ref', {
            ref: `refs/${params.ref}`,
            object: { type: 'commit', sha: target, url: 'https://github.example/c' },
          }),
        );
      }
      case 'git/create-ref': {
        const ref = String(body.ref).replace(/^refs\//, '');
        if (r.refs.has(ref)) return new Answer(422, { message: 'Reference already exists', documentation_url: DOCS });
        if (!r.commits.has(String(body.sha)))
          return new Answer(422, { message: 'Object does not exist', documentation_url: DOCS });
        r.refs.set(ref, String(body.sha));
        return new Answer(
          201,
          make('git-ref', {
            ref: `refs/${ref}`,
            object: { type: 'commit', sha: String(body.sha), url: 'https://github.example/c' },
          }),
        );
      }
      case 'git/delete-ref': {
        if (!r.refs.delete(params.ref!))
          return new Answer(422, { message: 'Reference does not exist', documentation_url: DOCS });
        return new Answer(204);
      }
    }
    throw new ContractViolation(`the double does not serve ${m.operationId} yet`);
  }

  function addRepo(
    fullName: string,
    options: { private?: boolean; hiddenAs403?: boolean; files?: Record<string, string>; description?: string } = {},
  ): Repo {
    const [owner, name] = fullName.split('/') as [string, string];
    if (!users.has(owner)) users.set(owner, nextId++);
    const r: Repo = {
      id: nextId++,
      owner,
      name,
      private: options.private ?? false,
      hiddenAs403: options.hiddenAs403 ?? false,
      description: options.description ?? null,
      archived: false,
      defaultBranch: 'main',
      refs: new Map(),
      commits: new Map(),
      trees: new Map(),
      pulls: [],
      issues: [],
      checkRuns: [],
      statuses: [],
      runs: [],
      workflows: [],
      blobs: new Map(),
    };
    const files = new Map(
      Object.entries(options.files ?? { 'README.md': `# ${name}\n` }).map(([p, c]) => [
        p,
        { mode: '100644', content: c },
      ]),
    );
    r.refs.set('heads/main', commitFiles(r, undefined, files, 'Initial commit'));
    repos.set(fullName, r);
    return r;
  }

  function identify(authorization: string | undefined): Identity | undefined {
    const t = /^(?:token|Bearer) (.+)$/i.exec(authorization ?? '')?.[1];
    const id = t ? tokens.get(t) : undefined;
    // An expired installation token is refused like any unknown one.
    return id && (id.expiresAt === undefined || id.expiresAt > Date.now()) ? id : undefined;
  }

  /** The bucket's primary-limit window; a window whose reset has passed starts over with the whole quota. */
  function quotaOf(bucket: string): Quota {
    const now = Date.now() / 1000;
    let q = quotas.get(bucket);
    if (!q) {
      q = { limit: 5000, used: 0, reset: Math.floor(now) + 3600, spent: 0 };
      quotas.set(bucket, q);
    } else if (now >= q.reset) {
      q.used = 0;
      q.reset = Math.floor(now) + 3600;
    }
    return q;
  }

  function rateHeaders(bucket: string | undefined): Record<string, string> {
    if (!bucket) return {};
    const q = quotaOf(bucket);
    return {
      'x-ratelimit-limit': String(q.limit),
      'x-ratelimit-remaining': String(Math.max(0, q.limit - q.used)),
      'x-ratelimit-used': String(q.used),
      'x-ratelimit-reset': String(q.reset),
      'x-ratelimit-resource': 'core',
    };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrived = Date.now();
    const url = new URL(req.url ?? '/', base);
    // GitHub Enterprise Server serves the same API under /api/v3.
    if (url.pathname === '/api/v3' || url.pathname.startsWith('/api/v3/'))
      url.pathname = url.pathname.slice('/api/v3'.length) || '/';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const query = Object.fromEntries(url.searchParams.entries());
    let matched: MatchedOperation | undefined;
    let identity: Identity | undefined;
    const send = (a: Answer) => {
      const headers: Record<string, string> = {
        'x-github-request-id': randomBytes(6).toString('hex'),
        ...rateHeaders(identity?.bucket),
        ...a.headers,
      };
      if (a.body !== undefined) headers['content-type'] = 'application/json; charset=utf-8';
      res.writeHead(a.status, headers);
      res.end(a.body === undefined ? undefined : JSON.stringify(a.body));
      calls.push({
        method: req.method ?? 'GET',
        path: url.pathname,
        operationId: matched?.operationId ?? '(none)',
        status: a.status,
        bucket: identity?.bucket,
        at: arrived,
      });
    };
    /** Answers GitHub gives on any route (401, rate limits) are validated like every other answer. */
    const sendChecked = (a: Answer) => {
      contract.validateResponse(matched!, a.status, a.body);
      send(a);
    };
    try {
      if (double.down) {
        res.writeHead(503).end();
        return;
      }
      matched = contract.match(req.method ?? 'GET', url.pathname);
      let body: Json = {};
      if (raw.length > 0) {
        try {
          body = JSON.parse(raw) as Json;
        } catch {
          throw new ContractViolation(`${matched.operationId}: the request body is not JSON`);
        }
      }
      contract.validateRequest(matched, query, body, raw.length > 0);
      identity = identify(req.headers.authorization);
      const authz = req.headers.authorization ?? '';
      if (req.headers.authorization && !identity && !APP_JWT_OPERATIONS.has(matched.operationId)) {
        return sendChecked(error(401, 'Bad credentials'));
      }
      const limit = identity ? pendingLimits.get(identity.bucket) : undefined;
      if (identity && limit) {
        pendingLimits.delete(identity.bucket);
        if (limit.kind === 'primary') {
          const q = quotaOf(identity.bucket);
          q.used = q.limit;
          q.reset = Math.ceil(Date.now() / 1000) + limit.retryAfter;
        } else {
          return sendChecked(
            error(429, 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.', {
              'retry-after': String(limit.retryAfter),
            }),
          );
        }
      }
      if (identity && quotaOf(identity.bucket).used >= quotaOf(identity.bucket).limit) {
        // Primary quota used up: every request of the bucket is refused until the window resets.
        return sendChecked(error(403, `API rate limit exceeded for ${identity.login}.`));
      }
      const held = holds.get(matched.operationId);
      if (held) {
        const outcome = await held.wait(res);
        if (outcome === 'gone') {
          // The caller gave up while the platform "did not answer"; nothing is sent.
          calls.push({
            method: req.method ?? 'GET',
            path: url.pathname,
            operationId: matched.operationId,
            status: 0,
            bucket: identity?.bucket,
            at: arrived,
          });
          return;
        }
      }
      const interlude = before.get(matched.operationId);
      if (interlude) {
        before.delete(matched.operationId);
        interlude();
      }
      let answer: Answer;
      try {
        answer = await operate(matched, identity, query, body, authz);
      } catch (thrown) {
        if (thrown instanceof Answer) answer = thrown;
        else throw thrown;
      }
      contract.validateResponse(matched, answer.status, answer.body);
      if (identity && answer.status < 500) {
        if (matched.method === 'get' && answer.status === 200) {
          const etag = `W/"${createHash('sha1')
            .update(identity.bucket)
            .update(JSON.stringify(answer.body))
            .update(answer.headers.link ?? '')
            .digest('hex')}"`;
          if (req.headers['if-none-match'] === etag) {
            return send(
              new Answer(304, undefined, { etag, ...(answer.headers.link ? { link: answer.headers.link } : {}) }),
            );
          }
          answer.headers.etag = etag;
        }
        const q = quotaOf(identity.bucket);
        q.used += 1;
        q.spent += 1;
      }
      send(answer);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof ContractViolation) violations.push(message);
      else violations.push(`double failure: ${message}`);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: `GitHub double: ${message}` }));
      }
    }
  }

  const server: Server = createServer((req, res) => void handle(req, res));
  const storageServer: Server = createServer((req, res) => {
    const key = /^\/logs\/(\w+)$/.exec(req.url ?? '')?.[1];
    const log = key ? logs.get(key) : undefined;
    if (log === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(log);
  });
  await Promise.all(
    [server, storageServer].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))),
  );
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  storage = `http://127.0.0.1:${(storageServer.address() as AddressInfo).port}`;

  const double: GitHubDouble = {
    url: base,
    calls,
    violations,
    down: false,
    installationTokenTtlSeconds: 3600,
    quotaUsed: (bucket) => quotas.get(bucket)?.spent ?? 0,
    quota(bucket) {
      const q = quotaOf(bucket);
      return { limit: q.limit, remaining: Math.max(0, q.limit - q.used), reset: q.reset };
    },
    hold(operationId) {
      const waiting = new Set<() => void>();
      let arrived = 0;
      let released = false;
      const watchers = new Set<() => void>();
      const counts = () => ({ waiting: waiting.size, arrived });
      const changed = () => {
        for (const look of [...watchers]) look();
      };
      holds.set(operationId, {
        wait(res) {
          arrived += 1;
          if (released) {
            changed();
            return Promise.resolve('released');
          }
          return new Promise((resolve) => {
            const go = () => {
              waiting.delete(go);
              res.off('close', gone);
              resolve('released');
            };
            // The response closes before it was written only when the caller went away.
            const gone = () => {
              waiting.delete(go);
              resolve('gone');
              changed();
            };
            waiting.add(go);
            res.once('close', gone);
            changed();
          });
        },
      });
      return {
        get waiting() {
          return waiting.size;
        },
        get arrived() {
          return arrived;
        },
        when(ok) {
          return new Promise<void>((resolve) => {
            const look = () => {
              if (!ok(counts())) return;
              watchers.delete(look);
              resolve();
            };
            watchers.add(look);
            look();
          });
        },
        release() {
          released = true;
          holds.delete(operationId);
          for (const go of [...waiting]) go();
          changed();
        },
      };
    },
    addUser: (login) => void (users.has(login) || users.set(login, nextId++)),
    addToken(token, login, access = 'all') {
      if (!users.has(login)) users.set(login, nextId++);
      tokens.set(token, { kind: 'token', bucket: login, login, access });
    },
    addInstallation(owner, access) {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const appId = String(nextId++);
      const installationId = String(nextId++);
      apps.set(appId, {
        installationId,
        owner,
        access,
        publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      });
      return { appId, installationId, privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    },
    addRepo,
    repo(fullName) {
      const r = repos.get(fullName);
      if (!r) throw new Error(`no repo ${fullName}`);
      return r;
    },
    pushCommit(fullName, branch, files, message = 'Someone else pushed') {
      const r = double.repo(fullName);
      const parent = r.refs.get(`heads/${branch}`)!;
      const next = new Map(filesOf(r, parent));
      for (const [p, c] of Object.entries(files)) {
        if (c === null) next.delete(p);
        else next.set(p, { mode: '100644', content: c });
      }
      const s = commitFiles(r, parent, next, message);
      r.refs.set(`heads/${branch}`, s);
      return s;
    },
    headOf: (fullName, branch) => double.repo(fullName).refs.get(`heads/${branch}`)!,
    filesAt(fullName, branch) {
      const r = double.repo(fullName);
      return Object.fromEntries(
        [...filesOf(r, r.refs.get(`heads/${branch}`)!).entries()].map(([p, f]) => [p, f.content]),
      );
    },
    addPull(fullName, pull) {
      const r = double.repo(fullName);
      const number = r.pulls.length + r.issues.filter((i) => !i.isPull).length + 1;
      const p: Pull = {
        number,
        title: pull.title ?? `Change ${number}`,
        body: '',
        head: pull.head,
        base: pull.base ?? 'main',
        state: 'open',
        merged: false,
        draft: false,
        user: pull.user ?? r.owner,
        reviews: [],
        comments: [],
      };
      r.pulls.push(p);
      r.issues.push({ number, title: p.title, body: '', state: 'open', user: p.user, isPull: true, comments: [] });
      return number;
    },
    addReview(fullName, n, review) {
      findPull(double.repo(fullName), String(n)).reviews.push({
        id: nextId++,
        user: review.user,
        state: review.state,
        body: review.body ?? '',
        submitted_at: new Date().toISOString(),
      });
    },
    addReviewComment(fullName, n, comment) {
      const id = nextId++;
      findPull(double.repo(fullName), String(n)).comments.push({
        id,
        ...comment,
        created_at: new Date().toISOString(),
      });
      return id;
    },
    mergePullOutside(fullName, n) {
      const p = findPull(double.repo(fullName), String(n));
      p.merged = true;
      p.state = 'closed';
    },
    addCheckRun(fullName, headSha, run) {
      const id = nextId++;
      double.repo(fullName).checkRuns.push({
        id,
        name: run.name,
        head_sha: headSha,
        created: Date.now(),
        settleMs: run.settleMs ?? 0,
        conclusion: run.conclusion ?? 'success',
      });
      return id;
    },
    addStatus(fullName, sha, status) {
      double.repo(fullName).statuses.push({ id: nextId++, sha, ...status });
    },
    addWorkflow(fullName, name, path) {
      const id = nextId++;
      double.repo(fullName).workflows.push({ id, name, path });
      return id;
    },
    addWorkflowRun(fullName, run) {
      const r = double.repo(fullName);
      const runId = nextId++;
      const jobs = (run.jobs ?? []).map((j) => ({ id: nextId++, ...j }));
      r.runs.push({
        id: runId,
        name: run.name,
        head_sha: r.refs.get(`heads/${run.head_branch}`)!,
        head_branch: run.head_branch,
        workflow_id: 1,
        created: Date.now(),
        settleMs: run.settleMs ?? 0,
        conclusion: run.conclusion ?? 'success',
        cancelled: false,
        attempt: 1,
        jobs,
      });
      return { runId, jobIds: jobs.map((j) => j.id) };
    },
    settle(fullName) {
      const r = double.repo(fullName);
      for (const c of r.checkRuns) c.settleMs = 0;
      for (const x of r.runs) x.settleMs = 0;
    },
    onNext(operationId, fn) {
      before.set(operationId, fn);
    },
    revoke(bucket) {
      for (const [t, id] of tokens) if (id.bucket === bucket) tokens.delete(t);
    },
    rateLimitNext(bucket, kind, retryAfterSeconds = 60) {
      pendingLimits.set(bucket, { kind, retryAfter: retryAfterSeconds });
    },
    resetWindow(bucket) {
      const q = quotas.get(bucket);
      if (q) q.reset = Math.floor(Date.now() / 1000);
    },
    expireTokens(bucket) {
      for (const id of tokens.values())
        if (id.bucket === bucket && id.expiresAt !== undefined) id.expiresAt = Date.now();
    },
    async close() {
      await Promise.all(
        [server, storageServer].map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      );
    },
  };
  return double;
}
