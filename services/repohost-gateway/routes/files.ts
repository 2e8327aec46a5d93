import { z } from 'zod';
import type { Api } from '../../kit/api.ts';
import { problem } from '../../kit/problem.ts';
import { commitFiles } from '../commits.ts';
import { Branch, CommitResult, FileContent, Tree } from '../shapes.ts';
import { cutBytes } from '../projection.ts';
import {
  BranchName,
  FilePath,
  full,
  type GatewayParts,
  Limit,
  onRepo,
  Ref,
  RepoParams,
  routesOf,
  sessionOf,
  Sha,
} from './common.ts';

/** The Git Data API serves blobs up to 100 MB; larger files cannot be read through the API at all. */
const BLOB_API_LIMIT = 100 * 1024 * 1024;

export function fileRoutes(api: Api, parts: GatewayParts): void {
  const route = routesOf(api, 'files');
  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/contents',
    operationId: 'read_file',
    summary: 'Read a file, capped at max_bytes, saying what was cut',
    description:
      'size is the platform’s size of the whole file. Files over 1 MB are read through the Git Data API (blobs up to 100 MB); a file over 100 MB cannot be read through the API and answers no content, with cut_bytes equal to its size.',
    params: RepoParams,
    query: z.object({
      path: FilePath,
      ref: Ref.optional().meta({ description: 'Branch or commit; the default branch when absent.' }),
      max_bytes: z.coerce
        .number()
        .int()
        .min(1)
        .max(1_000_000)
        .default(100_000)
        .meta({ description: 'Cap in bytes (default 100,000).' }),
    }),
    responses: { 200: { description: 'The file, or its first max_bytes.', schema: FileContent } },
    handler: async (ctx) => {
      const { owner, name } = ctx.params;
      const { path, ref, max_bytes } = ctx.query;
      const session = sessionOf(parts, ctx);
      const thing = `File ${path}${ref ? ` at ${ref}` : ''}`;
      const data = await session.run({ repo: full(ctx.params), thing }, async (o) => {
        const r = await o.rest.repos.getContent({ owner, repo: name, path, ...(ref ? { ref } : {}) });
        return r.data;
      });
      if (Array.isArray(data) || data.type !== 'file' || !('content' in data)) {
        throw problem.unprocessable(`${path} is not a file; read the tree to see what it contains.`);
      }
      const size = data.size;
      const base = { path, ref: ref ?? null, sha: data.sha, size };
      let bytes: Buffer;
      if (data.encoding === 'none' || (data.content === '' && size > 0)) {
        // Over 1 MB the contents API answers without content; the Git Data API serves the blob up to 100 MB.
        if (size > BLOB_API_LIMIT)
          return { body: { ...base, encoding: 'base64' as const, content: '', returned_bytes: 0, cut_bytes: size } };
        const blob = await session.run({ repo: full(ctx.params), thing }, (o) =>
          o.rest.git.getBlob({ owner, repo: name, file_sha: data.sha }),
        );
        bytes = Buffer.from(blob.data.content, blob.data.encoding === 'base64' ? 'base64' : 'utf8');
      } else bytes = Buffer.from(data.content, 'base64');
      const text = bytes.toString('utf8');
      const isText = Buffer.from(text, 'utf8').equals(bytes) && !text.includes('\u0000');
      let content: string;
      let returned: number;
      if (isText) {
        content = cutBytes(text, max_bytes);
        returned = Buffer.byteLength(content);
      } else {
        const kept = bytes.subarray(0, max_bytes);
        content = kept.toString('base64');
        returned = kept.length;
      }
      return {
        body: {
          ...base,
          encoding: isText ? ('utf-8' as const) : ('base64' as const),
          content,
          returned_bytes: returned,
          cut_bytes: Math.max(0, size - returned),
        },
      };
    },
  });

  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}/tree',
    operationId: 'read_tree',
    summary: 'Read the tree of a branch or commit, optionally under a folder, saying what was cut',
    params: RepoParams,
    query: z.object({
      ref: Ref,
      under: z.string().max(1024).optional().meta({ description: 'Only entries under this folder.' }),
      limit: Limit,
    }),
    responses: {
      200: {
        description: 'At most limit entries; total, cut_entries and platform_truncated say what is missing.',
        schema: Tree,
      },
    },
    handler: async (ctx) => {
      const { ref, under, limit } = ctx.query;
      const r = await onRepo(parts, ctx, { thing: `Ref ${ref}` }, (o, where) =>
        o.rest.git.getTree({ ...where, tree_sha: ref, recursive: '1' }),
      );
      const prefix = under ? `${under.replace(/\/+$/, '')}/` : '';
      const all = r.data.tree.filter((e) => !prefix || (e.path ?? '').startsWith(prefix));
      const items = all.slice(0, limit).map((e) => ({
        path: e.path ?? '',
        type: (e.type === 'tree' || e.type === 'commit' ? e.type : 'blob') as 'blob' | 'tree' | 'commit',
        mode: e.mode ?? '',
        size: typeof e.size === 'number' ? e.size : null,
      }));
      return {
        body: {
          ref,
          sha: r.data.sha,
          total: all.length,
          items,
          cut_entries: all.length - items.length,
          platform_truncated: r.data.truncated,
        },
      };
    },
  });

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/commits',
    operationId: 'commit_files',
    summary: 'Commit several files at once (adds, updates, deletes, modes), never forced',
    description:
      'Through the Git Data API on top of the branch head. With expected_head_sha, a branch that is elsewhere answers 409 naming the current head; a branch that moves during the commit answers the same. Nothing is ever forced.',
    params: RepoParams,
    body: z.object({
      branch: Ref,
      message: z.string().min(1).max(10_000),
      expected_head_sha: Sha.optional(),
      changes: z
        .array(
          z.object({
            path: FilePath,
            action: z.enum(['upsert', 'delete']).default('upsert'),
            content: z.string().max(1_500_000).optional(),
            encoding: z.enum(['utf-8', 'base64']).default('utf-8'),
            mode: z
              .enum(['100644', '100755', '120000'])
              .default('100644')
              .meta({ description: '100644 file, 100755 executable, 120000 symlink.' }),
          }),
        )
        .min(1)
        .max(500)
        .refine((cs) => cs.every((c) => c.action === 'delete' || c.content !== undefined), 'every upsert needs content')
        .refine((cs) => new Set(cs.map((c) => c.path)).size === cs.length, 'each path may appear once'),
    }),
    responses: { 201: { description: 'The new commit on the branch.', schema: CommitResult } },
    problems: [403, 409, 422],
    handler: async (ctx) => {
      const { owner, name } = ctx.params;
      return { status: 201, body: await commitFiles(sessionOf(parts, ctx), owner, name, ctx.body) };
    },
  });

  route({
    method: 'post',
    path: '/v1/repos/{owner}/{name}/branches',
    operationId: 'create_branch',
    summary: 'Create a branch from another branch or a commit',
    params: RepoParams,
    body: z.object({
      name: BranchName,
      from: Ref.optional().meta({ description: 'Branch or commit SHA; the default branch when absent.' }),
    }),
    responses: { 201: { description: 'The branch.', schema: Branch } },
    problems: [403, 422],
    handler: async (ctx) => {
      const { owner, name } = ctx.params;
      const session = sessionOf(parts, ctx);
      const repo = full(ctx.params);
      const sha = await session.run(
        { repo, thing: `Branch or commit ${ctx.body.from ?? '(default branch)'}` },
        async (o) => {
          const from = ctx.body.from ?? (await o.rest.repos.get({ owner, repo: name })).data.default_branch;
          if (/^[0-9a-f]{40}$/.test(from)) return from;
          return (await o.rest.git.getRef({ owner, repo: name, ref: `heads/${from}` })).data.object.sha;
        },
      );
      await session.run({ repo, write: true }, (o) =>
        o.rest.git.createRef({ owner, repo: name, ref: `refs/heads/${ctx.body.name}`, sha }),
      );
      return { status: 201, body: { name: ctx.body.name, sha } };
    },
  });

  route({
    method: 'delete',
    path: '/v1/repos/{owner}/{name}/branches/{branch}',
    operationId: 'delete_branch',
    summary: 'Delete a branch (URL-encode slashes in its name as %2F)',
    params: RepoParams.extend({ branch: Ref }),
    responses: { 204: { description: 'Deleted.' } },
    problems: [403, 422],
    handler: async (ctx) => {
      const { branch } = ctx.params;
      await onRepo(parts, ctx, { write: true, thing: `Branch ${branch}` }, (o, where) =>
        o.rest.git.deleteRef({ ...where, ref: `heads/${branch}` }),
      );
      return { status: 204 };
    },
  });
}
