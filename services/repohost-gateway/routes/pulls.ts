import { z } from 'zod';
import type { Api } from '../../kit/api.ts';
import { FilePatch, listOf, PullRequest, PullRequestDetail, Review } from '../shapes.ts';
import { lastPage, listWithTotal, type PlatformClient } from '../platform/index.ts';
import { readChecks } from '../checks.ts';
import { filePatch, pullRequest, review, threads, type PlatformReviewComment } from '../projection.ts';
import { type GatewayParts, Limit, Number_, onRepo, Ref, RepoParams, routesOf, Sha, stateList } from './common.ts';

const PullParams = RepoParams.extend({ number: Number_ });
const PullList = listOf(PullRequest, 'PullRequestList');
const FilePatchList = listOf(FilePatch, 'FilePatchList');
/** Reviews, threads and checks answered in one pull request answer. */
const DETAIL_READ = 100;
/** Review comments are read up to this many pages of 100 to group them into threads. */
const THREAD_PAGES = 10;

/**
 * The review comments of a pull request, read page by page (at most THREAD_PAGES pages of 100) so
 * replies land in their threads, and the exact number of comments from the Link header.
 */
async function reviewComments(
  o: PlatformClient,
  where: { owner: string; repo: string; pull_number: number },
): Promise<{ comments: PlatformReviewComment[]; total: number; capped: boolean }> {
  const read = (page: number) => o.rest.pulls.listReviewComments({ ...where, per_page: 100, page });
  const first = await read(1);
  const last = lastPage(first.headers) ?? 1;
  const pages = Math.min(last, THREAD_PAGES);
  const rest = await Promise.all(Array.from({ length: pages - 1 }, (_x, i) => read(i + 2)));
  const comments = [first.data, ...rest.map((r) => r.data)].flat();
  if (last <= pages) return { comments, total: comments.length, capped: false };
  const final = await read(last);
  return { comments, total: (last - 1) * 100 + final.data.length, capped: true };
}

export function pullRoutes(api: Api, parts: GatewayParts): void {
  const route = routesOf(api, 'pulls');
  stateList(route, parts, {
    path: '/v1/repos/{owner}/{name}/pulls',
    operationId: 'list_pulls',
    summary: 'List pull requests',
    items: 'pull requests',
    schema: PullList,
    read: (o, where, page) => o.rest.pulls.list({ ...where, ...page }),
    project: pullRequest,
  });

  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/pulls/{number}',
    operationId: 'get_pull',
    summary: 'Read a pull request with its reviews, review threads and checks, in one answer',
    description: `Answers up to ${DETAIL_READ} reviews, ${DETAIL_READ} review threads and ${DETAIL_READ} check runs of the head commit; totals say how many there are. Threads are grouped from up to ${THREAD_PAGES * 100} review comments; threads.capped says when there were more, so threads.total counts only the threads among those.`,
    params: PullParams,
    responses: { 200: { description: 'The pull request.', schema: PullRequestDetail } },
    handler: async (ctx) => {
      const { number } = ctx.params;
      const body = await onRepo(parts, ctx, { thing: `Pull request #${number}` }, async (o, repo) => {
        const where = { ...repo, pull_number: number };
        const pull = (await o.rest.pulls.get(where)).data;
        const headSha = pull.head.sha;
        const [reviews, comments, checks] = await Promise.all([
          listWithTotal(DETAIL_READ, (page) => o.rest.pulls.listReviews({ ...where, ...page })),
          reviewComments(o, where),
          readChecks(o, repo.owner, repo.repo, headSha, DETAIL_READ),
        ]);
        const grouped = threads(comments.comments);
        return {
          ...pullRequest(pull),
          body: pull.body ?? '',
          mergeable: pull.mergeable ?? null,
          reviews: { total: reviews.total, items: reviews.items.map(review) },
          threads: {
            total: grouped.length,
            items: grouped.slice(0, DETAIL_READ),
            comments: comments.total,
            capped: comments.capped,
          },
          checks: { ref: `pull/${number}`, ...checks },
        };
      });
      return { body };
    },
  });

  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/pulls/{number}/files',
    operationId: 'list_pull_files',
    summary: 'The changed files of a pull request, patch by patch, each patch capped',
    params: PullParams,
    query: z.object({
      limit: Limit,
      max_patch_bytes: z.coerce
        .number()
        .int()
        .min(0)
        .max(1_000_000)
        .default(20_000)
        .meta({ description: 'Cap per patch in bytes (default 20,000).' }),
    }),
    responses: {
      200: { description: 'At most limit files and the total; each patch says what was cut.', schema: FilePatchList },
    },
    handler: async (ctx) => {
      const { number } = ctx.params;
      const r = await onRepo(parts, ctx, { thing: `Pull request #${number}` }, (o, where) =>
        listWithTotal(ctx.query.limit, (page) => o.rest.pulls.listFiles({ ...where, pull_number: number, ...page })),
      );
      return { body: { total: r.total, items: r.items.map((f) => filePatch(f, ctx.query.max_patch_bytes)) } };
    },
  });

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/pulls',
    operationId: 'open_pull',
    summary: 'Open a pull request',
    params: RepoParams,
    body: z.object({
      title: z.string().min(1).max(256),
      head: Ref,
      base: Ref,
      body: z.string().max(65_536).optional(),
      draft: z.boolean().default(false),
    }),
    responses: { 201: { description: 'The new pull request.', schema: PullRequest } },
    problems: [403, 422],
    handler: async (ctx) => {
      const r = await onRepo(parts, ctx, { write: true }, (o, where) =>
        o.rest.pulls.create({
          ...where,
          title: ctx.body.title,
          head: ctx.body.head,
          base: ctx.body.base,
          body: ctx.body.body,
          draft: ctx.body.draft,
        }),
      );
      return { status: 201, body: pullRequest(r.data) };
    },
  });

  route({
    method: 'patch',
    path: '/v1/repos/{owner}/{name}/pulls/{number}',
    operationId: 'update_pull',
    summary: 'Change a pull request\u2019s title, body, base or state',
    params: PullParams,
    body: z
      .object({
        title: z.string().min(1).max(256).optional(),
        body: z.string().max(65_536).optional(),
        base: Ref.optional(),
        state: z.enum(['open', 'closed']).optional(),
      })
      .refine((b) => Object.keys(b).length > 0, 'send at least one of title, body, base, state'),
    responses: { 200: { description: 'The pull request as it is now.', schema: PullRequest } },
    problems: [403, 422],
    handler: async (ctx) => {
      const { number } = ctx.params;
      const r = await onRepo(parts, ctx, { write: true, thing: `Pull request #${number}` }, (o, where) =>
        o.rest.pulls.update({ ...where, pull_number: number, ...ctx.body }),
      );
      return { body: pullRequest(r.data) };
    },
  });

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/pulls/{number}/merge',
    operationId: 'merge_pull',
    summary: 'Merge a pull request, guarded by the expected head SHA when given',
    params: PullParams,
    body: z.object({
      expected_head_sha: Sha.optional().meta({
        description: 'Merge only if the head is still this commit; otherwise 409.',
      }),
      method: z.enum(['merge', 'squash', 'rebase']).default('merge'),
      commit_title: z.string().max(256).optional(),
    }),
    responses: {
      200: {
        description: 'Merged.',
        schema: z.object({ merged: z.boolean(), sha: z.string() }).meta({ id: 'MergeResult' }),
      },
    },
    problems: [403, 409],
    handler: async (ctx) => {
      const { number } = ctx.params;
      const r = await onRepo(parts, ctx, { write: true, thing: `Pull request #${number}` }, (o, where) =>
        o.rest.pulls.merge({
          ...where,
          pull_number: number,
          sha: ctx.body.expected_head_sha,
          merge_method: ctx.body.method,
          commit_title: ctx.body.commit_title,
        }),
      );
      return { body: { merged: r.data.merged, sha: r.data.sha } };
    },
  });

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/pulls/{number}/reviews',
    operationId: 'review_pull',
    summary: 'Review a pull request: approve, request changes or comment',
    params: PullParams,
    body: z.object({
      event: z.enum(['approve', 'request_changes', 'comment']),
      body: z.string().max(65_536).optional(),
    }),
    responses: { 200: { description: 'The review.', schema: Review } },
    problems: [403, 422],
    handler: async (ctx) => {
      const { number } = ctx.params;
      const event = ({ approve: 'APPROVE', request_changes: 'REQUEST_CHANGES', comment: 'COMMENT' } as const)[
        ctx.body.event
      ];
      const r = await onRepo(parts, ctx, { write: true, thing: `Pull request #${number}` }, (o, where) =>
        o.rest.pulls.createReview({ ...where, pull_number: number, event, body: ctx.body.body }),
      );
      return { body: review(r.data) };
    },
  });
}
