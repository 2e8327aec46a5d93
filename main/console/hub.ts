/**
 * Connecting a hub: for each service its base URL, the audience of the tokens it checks and the
 * environment lines a hub is configured with; and the local account's session credentials, where a
 * person makes one for the hub (its secret answered once, never kept by the console) and revokes it.
 */
import { z } from 'zod';
import type { HubService } from '../../common/contract.ts';
import type { HubView, NewHubCredential, SessionCredentialView } from './answers.ts';
import { SERVICES, TOKEN_AUDIENCES, type HubValue, type ServiceFacts } from '../../common/services.ts';
import { urlPath } from '../../common/url-path.ts';
import { method, NoParams, type MethodContext } from './method-spec.ts';
import { ConsoleError } from './service-client.ts';

/** The placeholder in the identity block until a credential is made; the page puts the new one there, once. */
export const CREDENTIAL_PLACEHOLDER = '<make a hub credential above>';
const SessionId = z.string().regex(/^ses_[A-Za-z0-9_-]{1,64}$/, 'a session credential id starts with ses_');
const DAY = 86_400;

/** A hub variable's value: the catalogue says what each holds (common/services.ts). */
function hubValue(holds: HubValue, s: ServiceFacts, baseUrl: string, profile: string | undefined): string {
  if (holds === 'base-url') return baseUrl;
  if (holds === 'audience') return s.audience ?? '';
  if (holds === 'profile') return profile ?? '<a profile with a platform connection>';
  return CREDENTIAL_PLACEHOLDER;
}

function hubServices(ctx: MethodContext, profile: string | undefined): HubService[] {
  return SERVICES.map((s) => {
    const baseUrl = `${ctx.supervisor.url(s.name).replace(/\/+$/, '')}${s.hubPath}`;
    return {
      name: s.name,
      title: s.title,
      baseUrl,
      audience: s.audience,
      env: s.hubVariables.map(
        ([variable, holds]) => [variable, hubValue(holds, s, baseUrl, profile)] as [string, string],
      ),
      note: s.hubNote,
    };
  });
}

/** What a credential may do, as the hub page says it. */
function mayOf(current: boolean, purpose: 'owner' | 'hub', audiences: string[] | null): string {
  if (purpose === 'hub') return `Mints tokens for ${(audiences ?? []).join(', ')}; nothing else.`;
  return current
    ? 'This app\u2019s own: mints tokens, manages credentials and connections.'
    : 'Owner (made at the command line): mints tokens, manages credentials and connections.';
}

function credentialView(row: Record<string, unknown>): SessionCredentialView {
  // Only these members, whatever identity sends: never a secret.
  const current = row.current === true;
  // Anything but an explicit hub is shown with the owner's powers: a page must not understate what a credential can do.
  const purpose = row.purpose === 'hub' ? 'hub' : 'owner';
  const audiences = Array.isArray(row.audiences)
    ? row.audiences.filter((a): a is string => typeof a === 'string')
    : null;
  return {
    id: String(row.id),
    label: typeof row.label === 'string' ? row.label : null,
    created_at: String(row.created_at),
    last_used_at: typeof row.last_used_at === 'string' ? row.last_used_at : null,
    expires_at: typeof row.expires_at === 'string' ? row.expires_at : null,
    current,
    purpose,
    audiences: purpose === 'hub' ? audiences : null,
    may: mayOf(current, purpose, audiences),
  };
}

async function listCredentials(ctx: MethodContext): Promise<SessionCredentialView[]> {
  const body = (await ctx.services.call('identity', { path: '/v1/session-credentials' })).body as {
    credentials?: Record<string, unknown>[];
  };
  return (body.credentials ?? []).map(credentialView);
}

export const HUB_METHODS = {
  'hub.get': method(NoParams, async (_p, ctx): Promise<HubView> => {
    const [credentials, connections] = await Promise.allSettled([
      listCredentials(ctx),
      ctx.services
        .call('identity', { path: '/v1/connections' })
        .then((a) => (a.body as { connections?: { profile: string }[] }).connections ?? []),
    ]);
    const profile = connections.status === 'fulfilled' ? connections.value[0]?.profile : undefined;
    return {
      defaultDays: ctx.preferences.hubCredentialDays(),
      services: hubServices(ctx, profile),
      credentials: credentials.status === 'fulfilled' ? credentials.value : [],
      ...(credentials.status === 'rejected' ? { credentialsError: (credentials.reason as Error).message } : {}),
    };
  }),
  'hub.createCredential': method(
    z
      .object({
        label: z
          .string()
          .trim()
          .min(1, 'name the credential, e.g. "hub"')
          .max(100)
          .refine((l) => ![...l].some((c) => c < ' ' || c === '\u007f'), 'a label is text without control characters'),
        // Absent: the default of Settings (90 days unless the person chose another, or never).
        expiresInDays: z.number().int().min(1).max(3650).nullable().optional(),
      })
      .strict(),
    async ({ label, expiresInDays: asked }, ctx): Promise<NewHubCredential> => {
      const expiresInDays = asked === undefined ? ctx.preferences.hubCredentialDays() : asked;
      const body = (
        await ctx.services.call('identity', {
          method: 'POST',
          path: '/v1/session-credentials',
          body: {
            label,
            expires_in_seconds: expiresInDays === null ? null : expiresInDays * DAY,
            audiences: TOKEN_AUDIENCES,
          },
        })
      ).body as Record<string, unknown>;
      if (typeof body.credential !== 'string')
        throw new ConsoleError(
          'The identity service made the credential but did not answer its secret; revoke it and make another.',
          502,
        );
      return { ...credentialView(body), credential: body.credential };
    },
  ),
  'hub.revokeCredential': method(z.object({ id: SessionId }).strict(), async ({ id }, ctx) => {
    const own = (await listCredentials(ctx)).find((c) => c.id === id);
    // The console's own credential is the app's way in: revoking it here would cut this very page off.
    if (own?.current)
      throw new ConsoleError(
        'That is this app\u2019s own credential; the console cannot work without it. Revoke the hub\u2019s credentials instead.',
        409,
      );
    if (own?.purpose === 'owner')
      throw new ConsoleError(
        `That is an owner credential; the console revokes hub credentials only. Revoke it at the command line: npm run identity -- session revoke ${id}`,
        409,
      );
    await ctx.services.call('identity', { method: 'DELETE', path: urlPath`/v1/session-credentials/${id}` });
    return { revoked: id };
  }),
};
