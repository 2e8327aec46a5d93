import { z } from 'zod';
import type { Principal } from '../../kit/auth.ts';
import type { CredentialResolver } from '../credentials.ts';
import { Session, type Platform } from '../platform.ts';
import type { Subscriptions } from '../subscriptions.ts';

export interface GatewayParts {
  resolver: CredentialResolver;
  platform: Platform;
  subscriptions: Subscriptions;
}

export const ProfileHeaders = z.object({
  'x-identity-profile': z
    .string({ error: 'missing; send the header X-Identity-Profile naming which of your platform connections (profile) to use' })
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'X-Identity-Profile must be a profile name: 1-64 letters, digits, dot, dash or underscore')
    .meta({ description: 'Which of your platform connections to act under.' }),
});

export const Owner = z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/, 'owner must be a platform account name').meta({ description: 'Account that owns the repository.' });
export const RepoName = z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'name must be a repository name').meta({ description: 'Repository name.' });
export const RepoParams = z.object({ owner: Owner, name: RepoName });
export const Number_ = z.coerce.number().int('must be a whole number').positive('must be positive');
export const Sha = z.string().regex(/^[0-9a-f]{40}$/, 'must be a 40-character commit SHA');
export const Ref = z.string().min(1).max(250).regex(/^[^\s~^:?*[\\]+$/, 'must be a branch name or commit SHA');

export const tags = {
  identity: ['identity'],
  repos: ['repositories'],
  pulls: ['pull requests'],
  issues: ['issues'],
  ci: ['ci'],
  files: ['files and commits'],
  subscriptions: ['subscriptions'],
};

type Ctx = { principal: Principal; headers: { 'x-identity-profile': string } };

/** The caller's session under the profile they named; the credential is resolved on first use. */
export function sessionOf(parts: GatewayParts, ctx: Ctx): Session {
  return new Session(parts.resolver, parts.platform, ctx.principal.account, ctx.headers['x-identity-profile'], ctx.principal.token);
}

export const raw = (x: unknown) => x as Record<string, unknown>;
export const full = (p: { owner: string; name: string }) => `${p.owner}/${p.name}`;
