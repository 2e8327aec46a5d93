import type { z } from 'zod';
import type { Check, Checks, Comment, FilePatch, Issue, Job, PullRequest, Repository, Review, Run, Thread } from './models.ts';

/**
 * From platform payloads to the public models: only the members a model names are picked, and the
 * schemas strip anything else on the way out as well.
 */

type Raw = Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const login = (user: unknown): string | null => (user && typeof user === 'object' ? str((user as Raw).login) || null : null);

export function repository(r: Raw): z.infer<typeof Repository> {
  const isPrivate = r.private === true;
  const visibility = str(r.visibility);
  return {
    full_name: str(r.full_name),
    owner: login(r.owner) ?? str(r.full_name).split('/')[0]!,
    name: str(r.name),
    private: isPrivate,
    visibility: visibility === 'internal' ? 'internal' : isPrivate ? 'private' : 'public',
    description: typeof r.description === 'string' ? r.description : null,
    archived: r.archived === true,
    default_branch: str(r.default_branch) || 'main',
    url: str(r.html_url),
  };
}

export function pullRequest(p: Raw): z.infer<typeof PullRequest> {
  const head = (p.head ?? {}) as Raw;
  const base = (p.base ?? {}) as Raw;
  const merged = p.merged === true || (typeof p.merged_at === 'string' && p.merged_at.length > 0);
  return {
    number: num(p.number),
    title: str(p.title),
    state: merged ? 'merged' : p.state === 'closed' ? 'closed' : 'open',
    draft: p.draft === true,
    author: login(p.user),
    head: str(head.ref),
    head_sha: str(head.sha),
    base: str(base.ref),
    url: str(p.html_url),
  };
}

export function review(r: Raw): z.infer<typeof Review> {
  return { id: num(r.id), author: login(r.user), state: str(r.state), body: str(r.body), submitted_at: typeof r.submitted_at === 'string' ? r.submitted_at : null };
}

/** Review comments grouped into threads: a reply points at its thread's first comment. */
export function threads(comments: Raw[]): z.infer<typeof Thread>[] {
  const byId = new Map<number, z.infer<typeof Thread>>();
  const out: z.infer<typeof Thread>[] = [];
  for (const c of comments) {
    const entry = { id: num(c.id), author: login(c.user), body: str(c.body), created_at: str(c.created_at) };
    const parent = typeof c.in_reply_to_id === 'number' ? byId.get(c.in_reply_to_id) : undefined;
    if (parent) {
      parent.comments.push(entry);
      byId.set(entry.id, parent);
      continue;
    }
    const thread = { id: entry.id, path: str(c.path), line: typeof c.line === 'number' ? c.line : null, comments: [entry] };
    byId.set(entry.id, thread);
    out.push(thread);
  }
  return out;
}

export function check(c: Raw): z.infer<typeof Check> {
  const status = str(c.status);
  const known = ['queued', 'in_progress', 'completed', 'waiting', 'requested', 'pending'] as const;
  return {
    id: num(c.id),
    kind: 'check_run',
    name: str(c.name),
    status: (known as readonly string[]).includes(status) ? (status as (typeof known)[number]) : 'pending',
    conclusion: typeof c.conclusion === 'string' ? c.conclusion : null,
    url: typeof c.html_url === 'string' ? c.html_url : null,
  };
}

/** A commit status as a check: pending until it says success, failure or error. */
export function commitStatus(st: Raw): z.infer<typeof Check> {
  const state = str(st.state);
  return {
    id: num(st.id),
    kind: 'status',
    name: str(st.context),
    status: state === 'pending' ? 'pending' : 'completed',
    conclusion: state === 'pending' ? null : state === 'error' ? 'failure' : state,
    url: typeof st.target_url === 'string' ? st.target_url : null,
  };
}

const FAILED = new Set(['failure', 'timed_out', 'cancelled', 'action_required', 'startup_failure', 'stale']);

/** What a set of check runs says about a commit: none yet, still pending, or settled one way or the other. */
export function checksState(items: z.infer<typeof Check>[]): z.infer<typeof Checks>['state'] {
  if (items.length === 0) return 'none';
  if (items.some((c) => c.status !== 'completed')) return 'pending';
  return items.some((c) => c.conclusion !== null && FAILED.has(c.conclusion)) ? 'failure' : 'success';
}

export function filePatch(f: Raw, maxPatchBytes: number): z.infer<typeof FilePatch> {
  const patch = typeof f.patch === 'string' ? f.patch : null;
  const bytes = patch === null ? 0 : Buffer.byteLength(patch);
  const kept = patch === null ? null : cutBytes(patch, maxPatchBytes);
  return {
    path: str(f.filename),
    status: str(f.status),
    additions: num(f.additions),
    deletions: num(f.deletions),
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

export function issue(i: Raw): z.infer<typeof Issue> {
  return {
    number: num(i.number),
    title: str(i.title),
    state: i.state === 'closed' ? 'closed' : 'open',
    author: login(i.user),
    is_pull_request: i.pull_request !== undefined && i.pull_request !== null,
    comments: num(i.comments),
    url: str(i.html_url),
  };
}

export function comment(c: Raw): z.infer<typeof Comment> {
  return { id: num(c.id), author: login(c.user), body: str(c.body), created_at: str(c.created_at), url: str(c.html_url) };
}

export function run(r: Raw): z.infer<typeof Run> {
  return {
    id: num(r.id),
    name: typeof r.name === 'string' ? r.name : null,
    status: typeof r.status === 'string' ? r.status : null,
    conclusion: typeof r.conclusion === 'string' ? r.conclusion : null,
    head_sha: str(r.head_sha),
    branch: typeof r.head_branch === 'string' ? r.head_branch : null,
    attempt: typeof r.run_attempt === 'number' ? r.run_attempt : null,
    url: str(r.html_url),
  };
}

export function job(j: Raw): z.infer<typeof Job> {
  return { id: num(j.id), name: str(j.name), status: str(j.status), conclusion: typeof j.conclusion === 'string' ? j.conclusion : null };
}
