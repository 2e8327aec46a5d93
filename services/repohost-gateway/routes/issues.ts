import { z } from 'zod';
import type { Api } from '../../kit/api.ts';
import { Comment, Issue, listOf } from '../shapes.ts';
import { comment, issue } from '../projection.ts';
import { type GatewayParts, Number_, onRepo, RepoParams, routesOf, stateList } from './common.ts';

const IssueParams = RepoParams.extend({ number: Number_ });
const IssueList = listOf(Issue, 'IssueList');

export function issueRoutes(api: Api, parts: GatewayParts): void {
  const route = routesOf(api, 'issues');
  stateList(route, parts, {
    path: '/v1/repos/{owner}/{name}/issues',
    operationId: 'list_issues',
    summary: 'List issues (the platform counts pull requests among them; is_pull_request says which)',
    items: 'issues',
    schema: IssueList,
    read: (o, where, page) => o.rest.issues.listForRepo({ ...where, ...page }),
    project: issue,
  });

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/issues',
    operationId: 'open_issue',
    summary: 'Open an issue',
    params: RepoParams,
    body: z.object({ title: z.string().min(1).max(256), body: z.string().max(65_536).optional() }),
    responses: { 201: { description: 'The new issue.', schema: Issue } },
    // 410: issues are turned off in the repository's settings.
    problems: [403, 410, 422],
    handler: async (ctx) => {
      const r = await onRepo(parts, ctx, { write: true }, (o, where) =>
        o.rest.issues.create({ ...where, title: ctx.body.title, body: ctx.body.body }),
      );
      return { status: 201, body: issue(r.data) };
    },
  });

  route({
    method: 'patch',
    path: '/v1/repos/{owner}/{name}/issues/{number}',
    operationId: 'update_issue',
    summary: 'Close (or reopen) an issue',
    params: IssueParams,
    body: z.object({ state: z.enum(['open', 'closed']) }),
    responses: { 200: { description: 'The issue as it is now.', schema: Issue } },
    problems: [403, 410],
    handler: async (ctx) => {
      const { number } = ctx.params;
      const r = await onRepo(parts, ctx, { write: true, thing: `Issue #${number}` }, (o, where) =>
        o.rest.issues.update({ ...where, issue_number: number, state: ctx.body.state }),
      );
      return { body: issue(r.data) };
    },
  });

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/issues/{number}/comments',
    operationId: 'comment_issue',
    summary: 'Comment on an issue or a pull request',
    params: IssueParams,
    body: z.object({ body: z.string().min(1).max(65_536) }),
    responses: { 201: { description: 'The comment.', schema: Comment } },
    problems: [403, 410],
    handler: async (ctx) => {
      const { number } = ctx.params;
      const r = await onRepo(parts, ctx, { write: true, thing: `Issue or pull request #${number}` }, (o, where) =>
        o.rest.issues.createComment({ ...where, issue_number: number, body: ctx.body.body }),
      );
      return { status: 201, body: comment(r.data) };
    },
  });
}
