import type { RestEndpointMethodTypes as Rest } from '@octokit/plugin-rest-endpoint-methods';
import type { z } from 'zod';
import type {
  Check,
  Checks,
  Comment,
  FilePatch,
  Issue,
  Job,
  PullRequest,
  Repository,
  Review,
  Run,
  Thread,
} from './shapes.ts';

/**
 * From platform payloads to the public models: only the members a model names are picked, and the
 * schemas strip anything else on the way out as well.
 */

/** What the platform answers, as octokit's REST methods type it (GitHub's own OpenAPI description). */
type Data<T extends { response: { data: unknown } }> = T['response']['data'];
type Item<T extends { response: { data: unknown } }> = Data<T> extends (infer I)[] ? I : never;
/** A full repository (read, create, update), a listed one (a token's or an installation's), or a search hit. */
export type PlatformRepository =
  | Data<Rest['repos']['get']>
  | Item<Rest['repos']['listForAuthenticatedUser']>
  | Data<Rest['search']['repos']>['items'][number];
/** A pull request as read or written, or as listed. */
export type PlatformPullRequest = Data<Rest['pulls']['get']> | Item<Rest['pulls']['list']>;
export type PlatformReview = Item<Rest['pulls']['listReviews']>;
export type PlatformReviewComment = Item<Rest['pulls']['listReviewComments']>;
type PlatformCheckRun = Data<Rest['checks']['listForRef']>['check_runs'][number];
type PlatformStatus = Data<Rest['repos']['getCombinedStatusForRef']>['statuses'][number];
type PlatformFile = Item<Rest['pulls']['listFiles']>;
type PlatformIssue = Data<Rest['issues']['get']>;
type PlatformComment = Data<Rest['issues']['createComment']>;
type PlatformRun = Data<Rest['actions']['getWorkflowRun']>;
type PlatformJob = Data<Rest['actions']['listJobsForWorkflowRun']>['jobs'][number];

/** An empty login reads as no author, as a missing user does. */
const login = (user: { login: string } | null | undefined): string | null => user?.login || null;
/** GitHub's 64-bit ids are typed `number | bigint`; a JSON answer only ever holds numbers. */
const id = (value: number | bigint): number => Number(value);

export function repository(r: PlatformRepository): z.infer<typeof Repository> {
  return {
    full_name: r.full_name,
    owner: r.owner?.login || r.full_name.split('/')[0]!,
    name: r.name,
    private: r.private,
    visibility: r.visibility === 'internal' ? 'internal' : r.private ? 'private' : 'public',
    description: r.description ?? null,
    archived: r.archived,
    default_branch: r.default_branch || 'main',
    url: r.html_url,
  };
}

export function pullRequest(p: PlatformPullRequest): z.infer<typeof PullRequest> {
  const merged = ('merged' in p && p.merged) || !!p.merged_at;
  return {
    number: p.number,
    title: p.title,
    state: merged ? 'merged' : p.state === 'closed' ? 'closed' : 'open',
    draft: p.draft === true,
    author: login(p.user),
    head: p.head.ref,
    head_sha: p.head.sha,
    base: p.base.ref,
    url: p.html_url,
  };
}

export function review(r: PlatformReview): z.infer<typeof Review> {
  return { id: id(r.id), author: login(r.user), state: r.state, body: r.body, submitted_at: r.submitted_at ?? null };
}

/** Review comments grouped into threads: a reply points at its thread's first comment. */
export function threads(comments: PlatformReviewComment[]): z.infer<typeof Thread>[] {
  const byId = new Map<number, z.infer<typeof Thread>>();
  const out: z.infer<typeof Thread>[] = [];
  for (const c of comments) {
    const entry = { id: id(c.id), author: login(c.user), body: c.body, created_at: c.created_at };
    const parent = c.in_reply_to_id === undefined ? undefined : byId.get(c.in_reply_to_id);
    if (parent) {
      parent.comments.push(entry);
      byId.set(entry.id, parent);
      continue;
    }
    const thread = { id: entry.id, path: c.path, line: c.line ?? null, comments: [entry] };
    byId.set(entry.id, thread);
    out.push(thread);
  }
  return out;
}

export function check(c: PlatformCheckRun): z.infer<typeof Check> {
  const known = ['queued', 'in_progress', 'completed', 'waiting', 'requested', 'pending'] as const;
  return {
    id: id(c.id),
    kind: 'check_run',
    name: c.name,
    status: (known as readonly string[]).includes(c.status) ? c.status : 'pending',
    conclusion: c.conclusion ?? null,
    url: c.html_url ?? null,
  };
}

/** A commit status as a check: pending until it says success, failure or error. */
export function commitStatus(st: PlatformStatus): z.infer<typeof Check> {
  return {
    id: st.id,
    kind: 'status',
    name: st.context,
    status: st.state === 'pending' ? 'pending' : 'completed',
    conclusion: st.state === 'pending' ? null : st.state === 'error' ? 'failure' : st.state,
    url: st.target_url ?? null,
  };
}

const FAILED = new Set(['failure', 'timed_out', 'cancelled', 'action_required', 'startup_failure', 'stale']);

/** What a set of check runs says about a commit: none yet, still pending, or settled one way or the other. */
export function checksState(items: z.infer<typeof Check>[]): z.infer<typeof Checks>['state'] {
  if (items.length === 0) return 'none';
  if (items.some((c) => c.status !== 'completed')) return 'pending';
  return items.some((c) => c.conclusion !== null && FAILED.has(c.conclusion)) ? 'failure' : 'success';
}

export function filePatch(f: PlatformFile, maxPatchBytes: number): z.infer<typeof FilePatch> {
  const patch = f.patch ?? null;
  const bytes = patch === null ? 0 : Buffer.byteLength(patch);
  const kept = patch === null ? null : cutBytes(patch, maxPatchBytes);
  return {
    path: f.filename,
    status: f.status,
    additions: f.additions,
    deletions: f.deletions,
    patch: kept,
    patch_bytes: bytes,
    cut_bytes: kept === null ? 0 : bytes - Buffer.byteLength(kept),
  };
}

/** The longest prefix of `text` within `max` bytes that does not split a character. */
export function cutBytes(text: string, max: number): string {
  const buf = Buffer.from(text);
  if (buf.length <= max) return text;
  let end = max;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end -= 1;
  return buf.subarray(0, end).toString('utf8');
}

export function issue(i: PlatformIssue): z.infer<typeof Issue> {
  return {
    number: i.number,
    title: i.title,
    state: i.state === 'closed' ? 'closed' : 'open',
    author: login(i.user),
    is_pull_request: i.pull_request !== undefined && i.pull_request !== null,
    comments: i.comments,
    url: i.html_url,
  };
}

export function comment(c: PlatformComment): z.infer<typeof Comment> {
  return { id: id(c.id), author: login(c.user), body: c.body ?? '', created_at: c.created_at, url: c.html_url };
}

export function run(r: PlatformRun): z.infer<typeof Run> {
  return {
    id: r.id,
    name: r.name ?? null,
    status: r.status ?? null,
    conclusion: r.conclusion ?? null,
    head_sha: r.head_sha,
    branch: r.head_branch ?? null,
    attempt: r.run_attempt ?? null,
    url: r.html_url,
  };
}

export function job(j: PlatformJob): z.infer<typeof Job> {
  return { id: j.id, name: j.name, status: j.status, conclusion: j.conclusion ?? null };
}
