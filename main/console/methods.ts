/**
 * Every method of the console API: its params (zod) and what it does. The renderer calls these by name
 * over IPC or HTTP; the results are plain JSON without tokens or secrets.
 */
import { z } from 'zod';
import { SERVICE_NAMES } from '../../common/services.ts';
import { urlPath } from '../../common/url-path.ts';
import type { LogLine, LogPage, ServiceView } from '../../common/contract.ts';
import type { ConnectionList, ConnectionSummary } from '../../services/identity/shapes.ts';
import type { ModelList, Readiness } from '../../services/model-provider/shapes.ts';
import type { EventPage, IdentityBlock, RecallResult } from '../../services/persona-store/shapes.ts';
import type { Subscription, SubscriptionList } from '../../services/repohost-gateway/shapes.ts';
import { ServiceSettings } from '../supervisor/wiring.ts';
import type {
  PersonaView,
  ProviderStatus,
  ProviderStreamView,
  SubscriptionListView,
  SubscriptionView,
} from './answers.ts';
import {
  Cursor,
  Limit,
  method,
  NoParams,
  Profile,
  personaPath,
  type MethodContext,
  type MethodSpec,
} from './method-spec.ts';
import { readableChangeLog } from './change-log.ts';
import { FIRST_RUN_METHODS } from './first-run.ts';
import { HUB_METHODS } from './hub.ts';
import { SETTINGS_METHODS } from './settings.ts';
import { OVERVIEW_METHODS } from './overview.ts';
import { PERSONA_ACTIONS } from './persona-actions.ts';
import { ConsoleError, reasonOf, type ServiceClient } from './service-client.ts';

export type { MethodContext };

const Service = z.enum(SERVICE_NAMES);

/** The supervisor's refusals (a busy port, a service that gave up) are sentences for a person: pass them on. */
async function control<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n')[0]!.slice(0, 500) : '';
    throw new ConsoleError(
      message || 'The supervisor could not do that; see the service log in the Services panel.',
      409,
    );
  }
}

async function firstProfile(services: ServiceClient): Promise<string | undefined> {
  return (await services.call<ConnectionList>('identity', { path: '/v1/connections' })).body.connections[0]?.profile;
}

/**
 * What the console shows of a subscription: never its signal URL, which may carry the hub's own secrets.
 * `profile` is the connection it was opened under (a cancel must name it); `event` what ended it; the
 * last four say how its one signal's delivery went and when the next attempt is due.
 */
const SUBSCRIPTION_MEMBERS = [
  'id',
  'kind',
  'repo',
  'target',
  'profile',
  'state',
  'created_at',
  'expires_at',
  'ended_at',
  'signal',
  'signal_attempts',
  'event',
  'signal_last_status',
  'signal_last_error',
  'signal_last_at',
  'signal_next_at',
] as const satisfies readonly (keyof SubscriptionView)[];
const SubscriptionId = z.string().regex(/^sub_[A-Za-z0-9_-]{1,64}$/, 'a subscription id starts with sub_');

/** The profile the gateway acts under for an account-wide read: the one asked for, else the first connection's. */
async function gatewayProfile(services: ServiceClient, asked: string | undefined): Promise<string> {
  return asked ?? (await firstProfile(services)) ?? 'default';
}
function subscriptionView(item: Subscription): SubscriptionView {
  return Object.fromEntries(SUBSCRIPTION_MEMBERS.filter((m) => m in item).map((m) => [m, item[m]])) as SubscriptionView;
}

type Query = Record<string, string | number | undefined> & { limit?: number };

/**
 * A page of a persona store list. The store refuses a limit over its page size (422 with `page_size`),
 * which a person or PERSONA_PAGE_SIZE may have lowered under the console's own; the console then asks
 * again at the store's page size (next_after still pages on) rather than showing the refusal.
 */
async function personaPage<T = unknown>(services: ServiceClient, path: string, query: Query): Promise<T> {
  const answer = await services.call<T>('persona-store', { path, query, acceptStatus: [422] });
  if (answer.status !== 422) return answer.body;
  const pageSize = (answer.body as { page_size?: unknown } | undefined)?.page_size;
  if (typeof pageSize === 'number' && pageSize >= 1 && query.limit !== undefined && pageSize < query.limit) {
    return (await services.call<T>('persona-store', { path, query: { ...query, limit: pageSize } })).body;
  }
  throw new ConsoleError(`The persona store refused it: ${reasonOf(answer.body)}`, 422);
}

/** pino's numeric levels; a line that is not JSON on stderr counts as a warning (Node's own warnings, a crash). */
const LEVEL_AT_LEAST = { warn: 40, error: 50 } as const;
function levelOf(line: LogLine): number {
  try {
    const level = (JSON.parse(line.text) as { level?: unknown }).level;
    if (typeof level === 'number') return level;
  } catch {
    /* not JSON */
  }
  return line.stream === 'stderr' ? 40 : 30;
}

/** Pages back through the log (at most 20 pages of the supervisor's) until `limit` lines of the level are found. */
function logPageAtLevel(
  read: (page: { before?: number; after?: number }) => LogPage,
  level: 'warn' | 'error',
  limit: number,
): LogPage {
  const lines: LogLine[] = [];
  let page = read({});
  for (let round = 0; ; round++) {
    lines.push(...page.lines.filter((l) => levelOf(l) >= LEVEL_AT_LEAST[level]));
    if (lines.length >= limit || page.next_before === null || round >= 20) break;
    page = read({ before: page.next_before, after: undefined });
  }
  return { ...page, lines: lines.slice(0, limit) };
}

/** Members that carry secrets are dropped from platform answers, whatever a service sends. */
const SECRET_MEMBERS = new Set(['token', 'secret', 'password', 'private_key', 'authorization', 'credential']);
export function withoutSecrets<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutSecrets) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !SECRET_MEMBERS.has(k.toLowerCase()))
        .map(([k, v]) => [k, withoutSecrets(v)]),
    ) as T;
  }
  return value;
}

export const METHODS = {
  // Services: the supervisor's view and controls.
  'services.list': method(NoParams, async (_p, { supervisor, crashes }): Promise<ServiceView[]> =>
    supervisor.status().map((s) => {
      const lastCrash = crashes.lastCrash(s.name);
      return lastCrash ? { ...s, lastCrash } : s;
    }),
  ),
  'services.start': method(z.object({ name: Service }).strict(), async ({ name }, { supervisor }) => {
    await control(() => supervisor.start(name));
    return supervisor.status().find((s) => s.name === name);
  }),
  'services.stop': method(z.object({ name: Service }).strict(), async ({ name }, { supervisor }) => {
    await control(() => supervisor.stop(name));
    return supervisor.status().find((s) => s.name === name);
  }),
  'services.restart': method(z.object({ name: Service }).strict(), async ({ name }, { supervisor }) => {
    await control(() => supervisor.restart(name));
    return supervisor.status().find((s) => s.name === name);
  }),
  'services.startAll': method(NoParams, async (_p, { supervisor }) => {
    await control(() => supervisor.startAll());
    return supervisor.status();
  }),
  'services.stopAll': method(NoParams, async (_p, { supervisor }) => {
    await control(() => supervisor.stopAll());
    return supervisor.status();
  }),
  'services.logs': method(
    z.object({ name: Service, filter: z.string().max(200).optional(), limit: Limit }).strict(),
    async ({ name, filter, limit }, { supervisor }) =>
      supervisor.logs(name, { filter: filter || undefined, limit: limit ?? 200 }),
  ),
  // Newest first; `before` pages back, `after` follows new lines; the probes' request lines only when asked.
  'services.logPage': method(
    z
      .object({
        name: Service,
        filter: z.string().max(200).optional(),
        limit: Limit,
        before: z.number().int().min(0).optional(),
        after: z.number().int().min(0).optional(),
        probes: z.boolean().optional(),
        /** Only lines of this level or worse: warn (warnings and errors) or error. */
        level: z.enum(['warn', 'error']).optional(),
      })
      .strict()
      .refine(
        (p) => p.before === undefined || p.after === undefined,
        'ask for older lines (before) or newer ones (after), not both',
      ),
    async ({ name, filter, level, ...page }, { supervisor }) => {
      const ask = { ...page, ...(filter ? { filter } : {}) };
      if (!level) return supervisor.logPage(name, ask);
      return logPageAtLevel((p) => supervisor.logPage(name, { ...ask, ...p }), level, page.limit ?? 100);
    },
  ),

  // Personas of the local account (persona store, audience `persona`).
  'personas.list': method(z.object({ after: Cursor, limit: Limit }).strict().optional(), async (p, { services }) =>
    personaPage(services, '/v1/personas', { after: p?.after, limit: p?.limit }),
  ),
  'personas.get': method(
    z.object({ profile: Profile }).strict(),
    async ({ profile }, { services }): Promise<PersonaView> => {
      const answer = await services.call<IdentityBlock>('persona-store', { path: personaPath(profile) });
      // The card's ETag, for an edit made only if the card is still as read.
      return { ...answer.body, ...(answer.etag ? { etag: answer.etag } : {}) };
    },
  ),
  'personas.fields': method(
    z.object({ profile: Profile, after: Cursor, limit: Limit }).strict(),
    async ({ profile, after, limit }, { services }) =>
      personaPage(services, urlPath`/v1/personas/${profile}/fields`, { after, limit }),
  ),
  'personas.notes': method(
    z
      .object({
        profile: Profile,
        after: Cursor,
        limit: Limit,
        kind: z.enum(['episode', 'observation', 'lesson']).optional(),
      })
      .strict(),
    async ({ profile, after, limit, kind }, { services }) =>
      personaPage(services, urlPath`/v1/personas/${profile}/notes`, { after, limit, kind }),
  ),
  // The change log, newest first (or oldest), paged by `after` (the previous page's next_after); filters as the persona store names them.
  'personas.events': method(
    z
      .object({
        profile: Profile,
        target_kind: z.enum(['persona', 'field', 'note']).optional(),
        action: z
          .string()
          .regex(/^[a-z_]+(,[a-z_]+)*$/, 'actions are names like field_set, comma-separated')
          .max(500)
          .optional(),
        target: z.string().max(300).optional(),
        since: z.iso.datetime({ offset: true }).optional(),
        until: z.iso.datetime({ offset: true }).optional(),
        after: z.number().int().min(0).optional(),
        limit: Limit,
        order: z.enum(['newest', 'oldest']).optional(),
      })
      .strict(),
    // Newest first unless asked: the action just taken is on the first page.
    async ({ profile, order, ...query }, { services }) =>
      readableChangeLog(
        services,
        profile,
        await personaPage<EventPage>(services, urlPath`/v1/personas/${profile}/events`, {
          ...query,
          order: order ?? 'newest',
        }),
      ),
  ),
  'personas.recall': method(
    z
      .object({ q: z.string().trim().min(1, 'type something to search for').max(500), profile: Profile.optional() })
      .strict(),
    async ({ q, profile }, { services }) =>
      (
        await services.call<RecallResult>('persona-store', {
          path: profile ? urlPath`/v1/personas/${profile}/recall` : '/v1/recall',
          query: { q },
        })
      ).body,
  ),

  // Platform connections (identity, with the session credential) and subscriptions (gateway).
  'connections.list': method(NoParams, async (_p, { services }) =>
    withoutSecrets((await services.call<ConnectionList>('identity', { path: '/v1/connections' })).body),
  ),
  'connections.put': method(
    z
      .object({
        profile: Profile,
        token: z.string().trim().min(20, 'a personal access token is at least 20 characters').max(500),
      })
      .strict(),
    async ({ profile, token }, { services }) =>
      withoutSecrets(
        (
          await services.call<ConnectionSummary>('identity', {
            method: 'PUT',
            path: urlPath`/v1/connections/${profile}`,
            body: { kind: 'token', token },
          })
        ).body,
      ),
  ),
  'connections.remove': method(z.object({ profile: Profile }).strict(), async ({ profile }, { services }) => {
    await services.call('identity', { method: 'DELETE', path: urlPath`/v1/connections/${profile}` });
    return { removed: profile };
  }),
  // The gateway lists every subscription of the account; it wants a profile to act under, so the console
  // names the one asked for, else the first connection's (any valid name serves when there is none).
  'subscriptions.list': method(
    z
      .object({
        profile: Profile.optional(),
        state: z.enum(['active', 'ended', 'cancelled', 'expired']).optional(),
        limit: z.number().int().min(1).max(100).optional(),
      })
      .strict()
      .optional(),
    async (p, { services }): Promise<SubscriptionListView> => {
      const profile = await gatewayProfile(services, p?.profile);
      const answer = await services.call<SubscriptionList>('repohost-gateway', {
        path: '/v1/subscriptions',
        headers: { 'x-identity-profile': profile },
        query: { state: p?.state, limit: p?.limit ?? 100 },
      });
      return { profile, total: answer.body.total, items: answer.body.items.map(subscriptionView) };
    },
  ),

  'subscriptions.get': method(
    z.object({ id: SubscriptionId, profile: Profile.optional() }).strict(),
    async ({ id, profile }, { services }) => {
      const answer = await services.call<Subscription>('repohost-gateway', {
        path: urlPath`/v1/subscriptions/${id}`,
        headers: { 'x-identity-profile': await gatewayProfile(services, profile) },
      });
      return subscriptionView(answer.body);
    },
  ),
  // The gateway cancels only under the profile a subscription was opened with (X-Identity-Profile), so the
  // caller names it; it ends as cancelled and the hub gets its one signal saying so (data.state and
  // data.event cancelled). One that already ended, expired or was cancelled comes back as it is, nothing sent.
  'subscriptions.cancel': method(
    z.object({ id: SubscriptionId, profile: Profile }).strict(),
    async ({ id, profile }, { services }) => {
      const answer = await services.call<Subscription>('repohost-gateway', {
        method: 'DELETE',
        path: urlPath`/v1/subscriptions/${id}`,
        headers: { 'x-identity-profile': profile },
        acceptStatus: [404],
      });
      if (answer.status === 404) {
        throw new ConsoleError(
          `There is no subscription ${id} under profile \u201c${profile}\u201d: the gateway cancels a subscription only under the connection it was opened with. Read the list again and cancel it from there.`,
          404,
        );
      }
      return subscriptionView(answer.body);
    },
  ),

  // The provider: readiness (CLI, login, lockdown), models and the stream mode. Its /ready answers 503 with the same body.
  'provider.status': method(NoParams, async (_p, ctx): Promise<ProviderStatus> => {
    const [ready, models] = await Promise.all([
      ctx.services.call<Readiness>('model-provider', { path: '/ready', acceptStatus: [503] }),
      ctx.services.call<ModelList>('model-provider', { path: '/v1/models' }),
    ]);
    return { ready: ready.body, models: models.body, stream: streamView(ctx, ready.body) };
  }),
  // Kept in the app's settings; the provider gets it as MODELPROV_STREAM when it next starts.
  'provider.setStream': method(
    z.object({ mode: ServiceSettings.shape.providerStream.unwrap() }).strict(),
    async ({ mode }, ctx) => {
      ctx.supervisor.settings.set({ providerStream: mode });
      const ready = await ctx.services
        .call<Readiness>('model-provider', { path: '/ready', acceptStatus: [503] })
        .catch(() => undefined);
      return streamView(ctx, ready?.body);
    },
  ),
  ...PERSONA_ACTIONS,
  ...HUB_METHODS,
  ...OVERVIEW_METHODS,
  ...FIRST_RUN_METHODS,
  ...SETTINGS_METHODS,
} satisfies Record<string, MethodSpec<z.ZodType>>;

export type MethodName = keyof typeof METHODS;

/** The stream mode kept in the settings beside the one the running provider reports in its readiness body. */
function streamView(ctx: MethodContext, ready: Readiness | undefined): ProviderStreamView {
  return {
    setting: ctx.supervisor.settings.get().providerStream,
    running: ready?.stream ?? null,
    fromEnvironment: Boolean(ctx.env.MODELPROV_STREAM),
  };
}
export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];
