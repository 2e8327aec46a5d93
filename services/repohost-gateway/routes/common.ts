import { decodeJwt } from 'jose';
import { z } from 'zod';
import type { Api, RouteSpec } from '../../kit/api.ts';
import type { Principal, TokenVerifier } from '../../kit/auth.ts';
import { pageLimit } from '../../kit/paging.ts';
import { profileName } from '../../kit/profile.ts';
import type { CredentialResolver } from '../credential-resolver.ts';
import { listWithTotal, Session, type Platform, type PlatformClient } from '../platform/index.ts';
import {
  branchProblem,
  filePathProblem,
  ownerProblem,
  refProblem,
  repoNameProblem,
  repoProblem,
  workflowProblem,
} from '../names.ts';
import type { Subscriptions } from '../subscriptions.ts';

/** What the gateway's routes are built from. */
export interface GatewayParts {
  verifier: TokenVerifier;
  resolver: CredentialResolver;
  platform: Platform;
  subscriptions: Subscriptions;
}

const ProfileHeaders = z.object({
  'x-identity-profile': profileName({
    refusal: 'X-Identity-Profile must be a profile name:',
    missing: 'missing; send the header X-Identity-Profile naming which of your platform connections (profile) to use',
  }).meta({ description: 'Which of your platform connections to act under.' }),
});

/** A string the platform can hold, by one of the rules in names.ts; the refusal says what is wrong. */
const named = (rule: (v: string) => string | undefined) =>
  z.string().superRefine((v, ctx) => {
    const wrong = rule(v);
    if (wrong) ctx.addIssue({ code: 'custom', message: wrong });
  });

export const Owner = named(ownerProblem).meta({
  description: 'Account that owns the repository: 1-39 letters, digits, "-" or "_".',
});
export const RepoName = named(repoNameProblem).meta({
  description:
    'Repository name: 1-100 letters, digits, ".", "-" or "_"; not "." or "..", not ending in ".git" or ".wiki".',
});
export const RepoFullName = named(repoProblem).meta({ description: 'owner/name.' });
export const RepoParams = z.object({ owner: Owner, name: RepoName });
export const Number_ = z.coerce.number().int('must be a whole number').positive('must be positive');
export const Sha = z.string().regex(/^[0-9a-f]{40}$/, 'must be a 40-character commit SHA');
export const Ref = named(refProblem).meta({ description: 'A branch, tag or commit SHA (git check-ref-format rules).' });
export const BranchName = named(branchProblem).meta({
  description: 'A branch name (git check-ref-format rules, not HEAD).',
});
export const FilePath = named(filePathProblem).meta({
  description: 'A path in the repository, relative, without "." or ".." parts.',
});
export const Workflow = named(workflowProblem).meta({ description: 'A workflow id, or its file name (ci.yml).' });

/** The `limit` of every list: 1 to 100, 20 when absent (the kit's paging). */
export const Limit = pageLimit({ max: 100, fallback: 20 });

const tags = {
  identity: ['identity'],
  repos: ['repositories'],
  pulls: ['pull requests'],
  issues: ['issues'],
  ci: ['ci'],
  files: ['files and commits'],
  subscriptions: ['subscriptions'],
};

/**
 * What any call to the platform under the caller's profile may answer: no connection for the profile (or a
 * thing the platform hides), rate limited, the platform failing, its credential not resolvable now, too slow.
 */
const PLATFORM_PROBLEMS = [404, 429, 502, 503, 504];

type Shape = z.ZodObject<z.ZodRawShape>;
/** A gateway route as its group declares it: the tag, the profile header and the platform's problems come from `routesOf`. */
export type GatewayRoute<P extends Shape, Q extends Shape, B extends z.ZodType> = Omit<
  RouteSpec<P, Q, B, typeof ProfileHeaders>,
  'tags' | 'headers'
> & {
  /** false: the route never calls the platform, so `problems` is all it may answer (default true). */
  callsPlatform?: boolean;
};

/**
 * Declares a group's routes, each with the group's tag and the X-Identity-Profile header every gateway route
 * takes; a route that calls the platform also documents what any platform call may answer.
 */
export function routesOf(api: Api, group: keyof typeof tags) {
  return <P extends Shape, Q extends Shape, B extends z.ZodType>({
    callsPlatform = true,
    ...spec
  }: GatewayRoute<P, Q, B>): void =>
    api.route({
      ...spec,
      tags: tags[group],
      headers: ProfileHeaders,
      problems: [...(spec.problems ?? []), ...(callsPlatform ? PLATFORM_PROBLEMS : [])],
    });
}

type Ctx = { principal: Principal; headers: { 'x-identity-profile': string } };

/** The caller's session under the profile they named; the credential is resolved on first use. */
export function sessionOf(parts: GatewayParts, ctx: Ctx): Session {
  // The token is verified already; its sid names the session credential it was minted with.
  const sid = decodeJwt(ctx.principal.token).sid;
  return new Session(
    parts.resolver,
    parts.platform,
    ctx.principal.account,
    ctx.headers['x-identity-profile'],
    ctx.principal.token,
    {
      ...(typeof sid === 'string' ? { session: sid } : {}),
    },
  );
}

export const full = (p: { owner: string; name: string }) => `${p.owner}/${p.name}`;

/** The repository a route's path names, as the platform's calls take it. */
export type RepoWhere = { owner: string; repo: string };

/**
 * Runs `call` once under the caller's session on the repository the path names; `about` says whether
 * it writes and what else it names, so a platform refusal names the right thing.
 */
export function onRepo<T>(
  parts: GatewayParts,
  ctx: Ctx & { params: { owner: string; name: string } },
  about: { write?: boolean; thing?: string },
  call: (o: PlatformClient, where: RepoWhere) => Promise<T>,
): Promise<T> {
  const { owner, name } = ctx.params;
  return sessionOf(parts, ctx).run({ repo: full(ctx.params), ...about }, (o) => call(o, { owner, repo: name }));
}

type State = 'open' | 'closed' | 'all';
type Page = { per_page: number; page: number };

/** A list of a repository's issues or pull requests in one state: at most limit, newest first, with the total. */
export function stateList<T>(
  route: ReturnType<typeof routesOf>,
  parts: GatewayParts,
  spec: {
    path: string;
    operationId: string;
    summary: string;
    /** The answer, in a word: "issues", "pull requests". */
    items: string;
    schema: z.ZodType;
    read: (
      o: PlatformClient,
      where: { owner: string; repo: string; state: State },
      page: Page,
    ) => Promise<{ data: T[]; headers: { link?: string } }>;
    project: (item: T) => unknown;
  },
): void {
  route({
    method: 'get',
    path: spec.path,
    operationId: spec.operationId,
    summary: spec.summary,
    params: RepoParams,
    query: z.object({ state: z.enum(['open', 'closed', 'all']).default('open'), limit: Limit }),
    responses: {
      200: { description: `At most limit ${spec.items}, newest first, and the total.`, schema: spec.schema },
    },
    handler: async (ctx) => {
      const r = await onRepo(parts, ctx, {}, (o, where) =>
        listWithTotal(ctx.query.limit, (page) => spec.read(o, { ...where, state: ctx.query.state }, page)),
      );
      return { body: { total: r.total, items: r.items.map(spec.project) } };
    },
  });
}
