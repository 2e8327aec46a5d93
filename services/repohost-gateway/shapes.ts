import { z } from 'zod';

/**
 * The shapes of the public models (the spec's word), one zod schema each. Every answer is parsed
 * through its schema on the way out, so a member the platform sends and a model does not name never
 * leaves the service.
 */

export const Login = z
  .string()
  .nullable()
  .meta({ description: 'Platform account name; null when the platform hides it.' });

export const Me = z
  .object({
    login: z
      .string()
      .meta({ description: 'Account the connection acts as (for an app: the account it is installed on).' }),
    kind: z
      .enum(['app', 'token'])
      .meta({ description: 'An app installation or a (fine-grained) personal access token.' }),
    selection: z
      .enum(['all', 'selected'])
      .meta({ description: 'Whether all of the account\u2019s repositories or selected ones are reachable.' }),
    repositories: z.number().int().meta({ description: 'How many repositories the connection reaches.' }),
  })
  .meta({ id: 'Me' });

export const Repository = z
  .object({
    full_name: z.string(),
    owner: z.string(),
    name: z.string(),
    private: z.boolean(),
    visibility: z.enum(['public', 'private', 'internal']),
    description: z.string().nullable(),
    archived: z.boolean(),
    default_branch: z.string(),
    url: z.string(),
  })
  .meta({ id: 'Repository' });

export const Review = z
  .object({
    id: z.number().int(),
    author: Login,
    state: z.string().meta({ description: 'APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED or PENDING.' }),
    body: z.string(),
    submitted_at: z.string().nullable(),
  })
  .meta({ id: 'Review' });

export const ThreadComment = z
  .object({ id: z.number().int(), author: Login, body: z.string(), created_at: z.string() })
  .meta({ id: 'ThreadComment' });

export const Thread = z
  .object({
    id: z
      .number()
      .int()
      .meta({ description: 'The id of the thread\u2019s first comment; reply to it to answer the thread.' }),
    path: z.string(),
    line: z.number().int().nullable(),
    comments: z.array(ThreadComment),
  })
  .meta({ id: 'Thread' });

export const Check = z
  .object({
    id: z.number().int(),
    kind: z
      .enum(['check_run', 'status'])
      .meta({ description: 'A check run, or a commit status (the older API some CI services use).' }),
    name: z.string().meta({ description: 'The check run\u2019s name or the status\u2019s context.' }),
    status: z.enum(['queued', 'in_progress', 'completed', 'waiting', 'requested', 'pending']),
    conclusion: z.string().nullable(),
    url: z.string().nullable(),
  })
  .meta({ id: 'Check' });

export const Checks = z
  .object({
    ref: z.string().meta({ description: 'What was asked for: a branch, a commit SHA or pull/<number>.' }),
    sha: z.string().meta({ description: 'The commit the checks ran on.' }),
    state: z.enum(['none', 'pending', 'success', 'failure']).meta({
      description:
        'none: no check yet; pending: some not completed (even when another already failed); success: all completed without failure; failure: all completed and at least one failed, timed out or was cancelled.',
    }),
    total: z.number().int().meta({ description: 'Check runs plus commit statuses (newest per context).' }),
    items: z.array(Check),
  })
  .meta({ id: 'Checks' });

export const PullRequest = z
  .object({
    number: z.number().int(),
    title: z.string(),
    state: z.enum(['open', 'closed', 'merged']),
    draft: z.boolean(),
    author: Login,
    head: z.string(),
    head_sha: z.string(),
    base: z.string(),
    url: z.string(),
  })
  .meta({ id: 'PullRequest' });

export const PullRequestDetail = PullRequest.extend({
  body: z.string(),
  mergeable: z.boolean().nullable().meta({ description: 'null while the platform is still computing it; read again.' }),
  reviews: z.object({ total: z.number().int(), items: z.array(Review) }),
  threads: z.object({
    total: z
      .number()
      .int()
      .meta({ description: 'Review threads among the review comments read (all of them unless capped).' }),
    items: z.array(Thread).meta({ description: 'The first 100 threads.' }),
    comments: z.number().int().meta({ description: 'Review comments on the pull request, counted exactly.' }),
    capped: z.boolean().meta({
      description:
        'true when there are more than 1,000 review comments: only the first 1,000 were grouped, so total is a lower bound.',
    }),
  }),
  checks: Checks,
}).meta({ id: 'PullRequestDetail' });

export const FilePatch = z
  .object({
    path: z.string(),
    status: z.string().meta({ description: 'added, removed, modified, renamed, copied, changed or unchanged.' }),
    additions: z.number().int(),
    deletions: z.number().int(),
    patch: z
      .string()
      .nullable()
      .meta({ description: 'The unified diff of this file, up to max_patch_bytes; null for binary or too large.' }),
    patch_bytes: z.number().int().meta({ description: 'Size of the whole patch.' }),
    cut_bytes: z.number().int().meta({ description: 'Bytes of the patch left out by the cap.' }),
  })
  .meta({ id: 'FilePatch' });

export const Issue = z
  .object({
    number: z.number().int(),
    title: z.string(),
    state: z.enum(['open', 'closed']),
    author: Login,
    is_pull_request: z
      .boolean()
      .meta({ description: 'The platform lists pull requests among issues; this says which they are.' }),
    comments: z.number().int(),
    url: z.string(),
  })
  .meta({ id: 'Issue' });

export const Comment = z
  .object({ id: z.number().int(), author: Login, body: z.string(), created_at: z.string(), url: z.string() })
  .meta({ id: 'Comment' });

export const Job = z
  .object({ id: z.number().int(), name: z.string(), status: z.string(), conclusion: z.string().nullable() })
  .meta({ id: 'Job' });

export const Run = z
  .object({
    id: z.number().int(),
    name: z.string().nullable(),
    status: z.string().nullable(),
    conclusion: z.string().nullable(),
    head_sha: z.string(),
    branch: z.string().nullable(),
    attempt: z.number().int().nullable(),
    url: z.string(),
  })
  .meta({ id: 'Run' });

export const RunDetail = Run.extend({ jobs: z.object({ total: z.number().int(), items: z.array(Job) }) }).meta({
  id: 'RunDetail',
});

export const LogWindow = z
  .object({
    job_id: z.number().int(),
    mode: z.enum(['tail', 'range', 'search']),
    lines: z.array(z.object({ number: z.number().int(), text: z.string() })),
    total_lines: z.number().int(),
    total_bytes: z.number().int(),
    cut_lines: z.number().int().meta({ description: 'Lines of the log not in this window.' }),
    cut_bytes: z
      .number()
      .int()
      .meta({ description: 'Bytes of the log not in this window, including the ends of over-long lines.' }),
    matches: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'For a search: how many lines matched in the whole log.' }),
  })
  .meta({ id: 'LogWindow' });

export const Dispatched = z
  .object({ workflow: z.string(), ref: z.string(), run_id: z.number().int().nullable() })
  .meta({ id: 'Dispatched' });

export const FileContent = z
  .object({
    path: z.string(),
    ref: z.string().nullable(),
    sha: z.string().meta({ description: 'Blob SHA.' }),
    size: z.number().int(),
    encoding: z.enum(['utf-8', 'base64']).meta({ description: 'utf-8 text, or base64 for binary files.' }),
    content: z.string(),
    returned_bytes: z.number().int(),
    cut_bytes: z.number().int().meta({ description: 'Bytes of the file left out by max_bytes.' }),
  })
  .meta({ id: 'FileContent' });

export const TreeEntry = z
  .object({
    path: z.string(),
    type: z.enum(['blob', 'tree', 'commit']),
    mode: z.string(),
    size: z.number().int().nullable(),
  })
  .meta({ id: 'TreeEntry' });

export const Tree = z
  .object({
    ref: z.string(),
    sha: z.string(),
    total: z.number().int().meta({ description: 'Entries the platform returned.' }),
    items: z.array(TreeEntry),
    cut_entries: z.number().int().meta({ description: 'Entries left out by limit.' }),
    platform_truncated: z
      .boolean()
      .meta({ description: 'The platform itself cut the tree (over 100,000 entries or 7 MB); read a subtree.' }),
  })
  .meta({ id: 'Tree' });

export const CommitResult = z
  .object({ sha: z.string(), branch: z.string(), previous_head: z.string(), files: z.number().int() })
  .meta({ id: 'CommitResult' });

export const Branch = z.object({ name: z.string(), sha: z.string() }).meta({ id: 'Branch' });

export const SUBSCRIPTION_KINDS = ['checks_settled', 'pull_merged', 'review_landed', 'run_completed'] as const;
export const SubscriptionKind = z.enum(SUBSCRIPTION_KINDS);

export const SUBSCRIPTION_STATES = ['active', 'ended', 'expired', 'cancelled'] as const;

export const Subscription = z
  .object({
    id: z.string(),
    kind: SubscriptionKind.meta({
      description: 'What it waits for: checks settling, a pull request merging, a review landing or a run completing.',
    }),
    repo: z.string(),
    target: z.string().meta({ description: 'What is watched: pull/<n>, a branch or SHA, or run/<id>.' }),
    profile: z.string().meta({
      description: 'The platform connection it was opened under; cancel it under the same X-Identity-Profile.',
    }),
    signal_url: z.string(),
    state: z.enum(SUBSCRIPTION_STATES).meta({
      description:
        'active: watched; ended: its event happened (one signal); cancelled: its owner cancelled it with DELETE (one signal, with state cancelled); expired: its lifetime ran out (one signal, with state expired).',
    }),
    event: z.string().nullable().meta({
      description:
        'What ended it: checks_settled, pull_merged, pull_closed_unmerged, review_landed, run_completed, or cancelled; null while active and when it expired (its state says so). The signal carries the same word.',
    }),
    created_at: z.string(),
    expires_at: z.string(),
    ended_at: z.string().nullable(),
    signal: z.enum(['none', 'pending', 'sent', 'failed']).meta({
      description: 'Delivery of the one signal: none until the subscription ends (ended, cancelled or expired).',
    }),
    signal_attempts: z.number().int().meta({ description: 'Delivery attempts made so far.' }),
    signal_last_status: z.number().int().nullable().meta({
      description:
        'The receiver\u2019s HTTP status at the last attempt; null before any attempt and when the receiver did not answer.',
    }),
    signal_last_error: z.string().nullable().meta({
      description:
        'Why the last attempt did not deliver (no answer, a refusal, a redirect, an address no longer allowed); null after a delivery and before any attempt. Never the address.',
    }),
    signal_last_at: z
      .string()
      .nullable()
      .meta({ description: 'When the last attempt was made (or the signal given up without one); null before any.' }),
    signal_next_at: z
      .string()
      .nullable()
      .meta({ description: 'When the next attempt is due while the signal is pending; null otherwise.' }),
  })
  .meta({ id: 'Subscription' });

export const OpenedSubscription = Subscription.extend({
  secret: z
    .string()
    .meta({ description: 'Standard Webhooks signing secret (whsec_...). Shown once; keep it to verify the signal.' }),
}).meta({ id: 'OpenedSubscription' });

/** A list envelope: at most `limit` items and the total the platform (or the store) reports. */
export function listOf<T extends z.ZodType>(item: T, id: string) {
  return z.object({ total: z.number().int(), items: z.array(item) }).meta({ id });
}

export const Limit = z.coerce
  .number()
  .int('limit must be a whole number')
  .min(1, 'limit must be 1 to 100')
  .max(100, 'limit must be 1 to 100')
  .default(20)
  .meta({ description: 'How many items to return, 1 to 100 (default 20).' });

export const SubscriptionList = listOf(Subscription, 'SubscriptionList');

/** The answers' types, for the console and its page (imported with `import type`: nothing of this file is bundled there). */
export type Me = z.infer<typeof Me>;
export type Subscription = z.infer<typeof Subscription>;
export type SubscriptionList = z.infer<typeof SubscriptionList>;
