import { z } from 'zod';
import type { Api } from '../../kit/api.ts';
import { problem } from '../../kit/problem.ts';
import { Checks, Dispatched, listOf, LogWindow, Run, RunDetail } from '../shapes.ts';
import { readChecks } from '../checks.ts';
import { job, run } from '../projection.ts';
import { logWindow, type WindowRequest } from '../windows.ts';
import { type GatewayParts, Limit, Number_, onRepo, Ref, RepoParams, routesOf, Sha, Workflow } from './common.ts';

const RunParams = RepoParams.extend({ run_id: Number_ });
const RunList = listOf(Run, 'RunList');
const Accepted = z
  .object({ run_id: z.number().int(), action: z.enum(['rerun', 'cancel']) })
  .meta({ id: 'RunActionAccepted' });

export function ciRoutes(api: Api, parts: GatewayParts): void {
  const route = routesOf(api, 'ci');
  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/checks',
    operationId: 'get_checks',
    summary: 'Checks on a pull request, a branch or a commit',
    params: RepoParams,
    query: z.object({
      ref: Ref.optional().meta({ description: 'A branch or commit SHA.' }),
      pull: Number_.optional().meta({ description: 'A pull request number: checks of its head commit.' }),
      limit: Limit,
    }),
    responses: { 200: { description: 'The checks and what they add up to.', schema: Checks } },
    handler: async (ctx) => {
      const { ref, pull, limit } = ctx.query;
      if ((ref === undefined) === (pull === undefined))
        throw problem.unprocessable('Send exactly one of the query members ref (a branch or SHA) and pull (a number).');
      const body = await onRepo(
        parts,
        ctx,
        { thing: pull ? `Pull request #${pull}` : `Ref ${ref}` },
        async (o, where) => {
          const sha = pull ? (await o.rest.pulls.get({ ...where, pull_number: pull })).data.head.sha : ref!;
          return { ref: pull ? `pull/${pull}` : ref!, ...(await readChecks(o, where.owner, where.repo, sha, limit)) };
        },
      );
      return { body };
    },
  });

  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/checks/runs',
    operationId: 'list_runs',
    summary: 'Workflow runs, newest first, optionally of one branch or commit',
    params: RepoParams,
    query: z.object({ branch: Ref.optional(), sha: Sha.optional(), limit: Limit }),
    responses: { 200: { description: 'At most limit runs and the total.', schema: RunList } },
    handler: async (ctx) => {
      const r = await onRepo(parts, ctx, {}, (o, where) =>
        o.rest.actions.listWorkflowRunsForRepo({
          ...where,
          per_page: ctx.query.limit,
          ...(ctx.query.branch ? { branch: ctx.query.branch } : {}),
          ...(ctx.query.sha ? { head_sha: ctx.query.sha } : {}),
        }),
      );
      return { body: { total: r.data.total_count, items: r.data.workflow_runs.map(run) } };
    },
  });

  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/checks/runs/{run_id}',
    operationId: 'get_run',
    summary: 'A workflow run with its jobs',
    params: RunParams,
    responses: { 200: { description: 'The run.', schema: RunDetail } },
    handler: async (ctx) => {
      const { run_id } = ctx.params;
      const body = await onRepo(parts, ctx, { thing: `Workflow run ${run_id}` }, async (o, where) => {
        const [r, jobs] = await Promise.all([
          o.rest.actions.getWorkflowRun({ ...where, run_id }),
          o.rest.actions.listJobsForWorkflowRun({ ...where, run_id, per_page: 100 }),
        ]);
        return { ...run(r.data), jobs: { total: jobs.data.total_count, items: jobs.data.jobs.map(job) } };
      });
      return { body };
    },
  });

  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/checks/jobs/{job_id}/log',
    operationId: 'get_job_log',
    summary: 'A window of a job\u2019s log: the tail (default), a line range, or a search',
    params: RepoParams.extend({ job_id: Number_ }),
    query: z.object({
      tail: z.coerce
        .number()
        .int()
        .min(1)
        .max(2000)
        .optional()
        .meta({ description: 'The last N lines (default 200).' }),
      start: z.coerce.number().int().min(1).optional().meta({ description: 'First line of a range (1-based).' }),
      end: z.coerce.number().int().min(1).optional().meta({ description: 'Last line of a range.' }),
      search: z
        .string()
        .min(1)
        .max(200)
        .optional()
        .meta({ description: 'Lines containing this text (case-insensitive); tail caps how many.' }),
    }),
    responses: { 200: { description: 'The window and what it cut.', schema: LogWindow } },
    handler: async (ctx) => {
      const { job_id } = ctx.params;
      const { tail, start, end, search } = ctx.query;
      let request: WindowRequest;
      if (search !== undefined) {
        if (start !== undefined || end !== undefined)
          throw problem.unprocessable('Send either search or start/end, not both.');
        request = { mode: 'search', search, lines: tail ?? 200 };
      } else if (start !== undefined || end !== undefined) {
        if (start === undefined || end === undefined || end < start)
          throw problem.unprocessable('A range needs start and end with end >= start.');
        request = { mode: 'range', start, end };
      } else request = { mode: 'tail', lines: tail ?? 200 };
      const text = await onRepo(parts, ctx, { thing: `Job ${job_id}` }, async (o, where) => {
        const r = await o.rest.actions.downloadJobLogsForWorkflowRun({ ...where, job_id });
        return typeof r.data === 'string' ? r.data : Buffer.from(r.data as ArrayBuffer).toString('utf8');
      });
      return { body: logWindow(job_id, text, request) };
    },
  });

  for (const action of ['rerun', 'cancel'] as const) {
    route({
      method: 'post',
      path: `/v1/repos/{owner}/{name}/checks/runs/{run_id}/${action}`,
      operationId: `${action}_run`,
      summary: action === 'rerun' ? 'Re-run a workflow run' : 'Cancel a workflow run',
      params: RunParams,
      responses: { 202: { description: 'Asked of the platform; read the run to follow it.', schema: Accepted } },
      problems: [403, 409],
      handler: async (ctx) => {
        const { run_id } = ctx.params;
        await onRepo(parts, ctx, { write: true, thing: `Workflow run ${run_id}` }, async (o, where) => {
          if (action === 'rerun') await o.rest.actions.reRunWorkflow({ ...where, run_id });
          else await o.rest.actions.cancelWorkflowRun({ ...where, run_id });
        });
        return { status: 202, body: { run_id, action } };
      },
    });
  }

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/checks/workflows/{workflow}/dispatch',
    operationId: 'dispatch_workflow',
    summary: 'Start a workflow (workflow_dispatch) on a branch; answers the run id',
    params: RepoParams.extend({ workflow: Workflow }),
    body: z.object({ ref: Ref, inputs: z.record(z.string(), z.string()).optional() }),
    responses: { 202: { description: 'Started.', schema: Dispatched } },
    problems: [403, 422],
    handler: async (ctx) => {
      const { workflow } = ctx.params;
      const r = await onRepo(parts, ctx, { write: true, thing: `Workflow ${workflow}` }, (o, where) =>
        o.request('POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches', {
          ...where,
          workflow_id: /^\d+$/.test(workflow) ? Number(workflow) : workflow,
          ref: ctx.body.ref,
          inputs: ctx.body.inputs,
          return_run_details: true,
        }),
      );
      const runId = r.data?.workflow_run_id ?? null;
      return { status: 202, body: { workflow, ref: ctx.body.ref, run_id: runId } };
    },
  });
}
