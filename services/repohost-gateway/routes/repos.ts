import { z } from 'zod';
import type { Api } from '../../kit/api.ts';
import { listOf, Me, Repository } from '../shapes.ts';
import { listWithTotal } from '../platform/index.ts';
import { repository } from '../projection.ts';
import { type GatewayParts, Limit, onRepo, RepoName, RepoParams, routesOf, sessionOf } from './common.ts';

const RepositoryList = listOf(Repository, 'RepositoryList');

export function identityRoutes(api: Api, parts: GatewayParts): void {
  const route = routesOf(api, 'identity');
  route({
    method: 'get',
    path: '/v1/me',
    operationId: 'get_me',
    summary: 'Who the connection of this profile is, and how much it reaches',
    description:
      'Works for app installations (login: the account the app is installed on, even when it reaches no repository; count and selection from the installation\u2019s repositories) and for fine-grained tokens alike; never relies on /user alone.',
    responses: { 200: { description: 'The connection.', schema: Me } },
    handler: async (ctx) => {
      const session = sessionOf(parts, ctx);
      const credential = await session.current();
      const me = await session.run({}, async (o) => {
        if (credential.kind === 'app') {
          const r = await o.rest.apps.listReposAccessibleToInstallation({ per_page: 1 });
          // The identity service reads the installation's account (GET /app/installations/{id}) when it mints the token;
          // the owner of a repository is only a fallback should it not have, and an installation may reach none.
          return {
            login: credential.login ?? r.data.repositories[0]?.owner.login ?? '',
            kind: 'app' as const,
            selection: r.data.repository_selection === 'selected' ? ('selected' as const) : ('all' as const),
            repositories: r.data.total_count,
          };
        }
        const user = (await o.rest.users.getAuthenticated()).data;
        const owned = user.public_repos + (user.total_private_repos ?? 0);
        const reachableOwned = (
          await listWithTotal(1, (page) => o.rest.repos.listForAuthenticatedUser({ affiliation: 'owner', ...page }))
        ).total;
        const reachable = (await listWithTotal(1, (page) => o.rest.repos.listForAuthenticatedUser({ ...page }))).total;
        return {
          login: user.login,
          kind: 'token' as const,
          selection: reachableOwned < owned ? ('selected' as const) : ('all' as const),
          repositories: reachable,
        };
      });
      return { body: me };
    },
  });
}

export function repoRoutes(api: Api, parts: GatewayParts): void {
  const route = routesOf(api, 'repos');
  route({
    method: 'get',
    path: '/v1/repos',
    operationId: 'find_repos',
    summary: 'Find repositories: by words (q), or every repository the connection reaches',
    query: z.object({
      q: z.string().min(1).max(256).optional().meta({ description: 'Words to search for (platform search syntax).' }),
      limit: Limit,
    }),
    responses: { 200: { description: 'At most limit repositories and the total.', schema: RepositoryList } },
    handler: async (ctx) => {
      const session = sessionOf(parts, ctx);
      const { q, limit } = ctx.query;
      const credential = await session.current();
      const body = await session.run({}, async (o) => {
        if (q) {
          const r = await o.rest.search.repos({ q, per_page: limit });
          return { total: r.data.total_count, items: r.data.items.map(repository) };
        }
        if (credential.kind === 'app') {
          const r = await o.rest.apps.listReposAccessibleToInstallation({ per_page: limit });
          return { total: r.data.total_count, items: r.data.repositories.map(repository) };
        }
        const r = await listWithTotal(limit, (page) => o.rest.repos.listForAuthenticatedUser({ ...page }));
        return { total: r.total, items: r.items.map(repository) };
      });
      return { body };
    },
  });

  route({
    method: 'get',
    path: '/v1/repos/{owner}/{name}',
    operationId: 'get_repo',
    summary: 'Read a repository',
    params: RepoParams,
    responses: { 200: { description: 'The repository.', schema: Repository } },
    handler: async (ctx) => {
      const r = await onRepo(parts, ctx, {}, (o, where) => o.rest.repos.get(where));
      return { body: repository(r.data) };
    },
  });

  route({
    method: 'post',
    path: '/v1/repos',
    operationId: 'create_repo',
    summary: 'Create a repository under the connection\u2019s account (private unless said otherwise)',
    body: z.object({
      name: RepoName,
      description: z.string().max(350).optional(),
      private: z.boolean().default(true),
      auto_init: z
        .boolean()
        .default(true)
        .meta({ description: 'Start with a README so branches and commits work at once.' }),
    }),
    responses: { 201: { description: 'The new repository.', schema: Repository } },
    problems: [403, 409],
    handler: async (ctx) => {
      const r = await sessionOf(parts, ctx).run({ write: true }, (o) =>
        o.rest.repos.createForAuthenticatedUser({
          name: ctx.body.name,
          description: ctx.body.description,
          private: ctx.body.private,
          auto_init: ctx.body.auto_init,
        }),
      );
      return { status: 201, body: repository(r.data) };
    },
  });

  route({
    method: 'patch',
    path: '/v1/repos/{owner}/{name}',
    operationId: 'update_repo',
    summary: 'Change visibility or description, or archive',
    params: RepoParams,
    body: z
      .object({
        description: z.string().max(350).nullable().optional(),
        visibility: z.enum(['public', 'private']).optional(),
        archived: z
          .literal(true)
          .optional()
          .meta({ description: 'true archives the repository (read-only from then on).' }),
      })
      .refine((b) => Object.keys(b).length > 0, 'send at least one of description, visibility, archived'),
    responses: { 200: { description: 'The repository as it is now.', schema: Repository } },
    problems: [403],
    handler: async (ctx) => {
      const r = await onRepo(parts, ctx, { write: true }, (o, where) =>
        o.rest.repos.update({
          ...where,
          ...(ctx.body.description !== undefined ? { description: ctx.body.description ?? '' } : {}),
          ...(ctx.body.visibility ? { visibility: ctx.body.visibility } : {}),
          ...(ctx.body.archived ? { archived: true } : {}),
        }),
      );
      return { body: repository(r.data) };
    },
  });

  route({
    method: 'delete',
    path: '/v1/repos/{owner}/{name}',
    operationId: 'delete_repo',
    summary: 'Delete a repository',
    params: RepoParams,
    responses: { 204: { description: 'Deleted.' } },
    problems: [403],
    handler: async (ctx) => {
      await onRepo(parts, ctx, { write: true }, (o, where) => o.rest.repos.delete(where));
      return { status: 204 };
    },
  });
}
