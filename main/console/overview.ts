/**
 * The overview, the console's first page: each service's state and what to do about it, counts of
 * what the services hold, the failures worth a person's attention, and the activity history for the
 * charts. Each part is read on its own: a service that does not answer makes its own counts say why,
 * never the whole page fail.
 */
import { spanWords, type ActivityView } from '../../common/activity.ts';
import type { Attention, Count, OverviewView, ServiceView } from '../../common/contract.ts';
import { CONNECTION_NEED, headline, serviceNeed, type Need } from '../../common/needs.ts';
import { SERVICE_CATALOGUE, type ServiceName } from '../../common/services.ts';
import { STATE_ADVICE, STATE_WORDS, TROUBLE_STATES } from '../../common/states.ts';
import { z } from 'zod';
import { MINUTES_KEPT, MINUTES_SHOWN } from './activity.ts';
import { method, personaPath, type MethodContext } from './method-spec.ts';
import type { ServiceClient } from './service-client.ts';
import type { ConnectionList, SessionCredentialList } from '../../services/identity/shapes.ts';
import type { Readiness } from '../../services/model-provider/shapes.ts';
import type { IdentityBlock, PersonaPage } from '../../services/persona-store/shapes.ts';
import type { SubscriptionList } from '../../services/repohost-gateway/shapes.ts';

/** Pages of personas read for the counts (at the store's page size); a person with more sees "at least". */
const PERSONA_PAGES = 5;
/** Identity blocks read for the field and note counts, a few at a time. */
const BLOCKS_COUNTED = 100;
const BLOCKS_AT_ONCE = 4;

async function count(read: () => Promise<number | { value: number; more: boolean }>): Promise<Count> {
  try {
    const n = await read();
    return typeof n === 'number' ? { value: n } : n.more ? n : { value: n.value };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

async function personaProfiles(services: ServiceClient): Promise<{ profiles: string[]; more: boolean }> {
  const profiles: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < PERSONA_PAGES; page++) {
    const body = (await services.call<PersonaPage>('persona-store', { path: '/v1/personas', query: { after } })).body;
    profiles.push(...body.personas.map((p) => p.profile));
    if (!body.next_after) return { profiles, more: false };
    after = body.next_after;
  }
  return { profiles, more: true };
}

async function entryCounts(services: ServiceClient, profiles: string[]): Promise<{ fields: number; notes: number }> {
  const totals = { fields: 0, notes: 0 };
  const queue = profiles.slice(0, BLOCKS_COUNTED);
  await Promise.all(
    Array.from({ length: BLOCKS_AT_ONCE }, async () => {
      for (let profile = queue.shift(); profile !== undefined; profile = queue.shift()) {
        const block = (await services.call<IdentityBlock>('persona-store', { path: personaPath(profile) })).body;
        totals.fields += block.field_count;
        totals.notes += block.note_count;
      }
    }),
  );
  return totals;
}

/** What the provider's /ready says a person must fix: no CLI, not signed in, lockdown not proven. */
export function providerAttention(ready: Pick<Readiness, 'checks'>): Attention[] {
  const out: Attention[] = [];
  const { cli, lockdown, login } = ready.checks;
  if (!cli.ok)
    out.push({ severity: 'error', text: `The chat-model provider finds no CLI: ${cli.detail}.`, place: 'provider' });
  if (login.state === 'not_signed_in') {
    out.push({
      severity: 'error',
      text: 'The CLI is not signed in, so the provider cannot answer: run it once in a terminal and sign in (/login).',
      place: 'provider',
    });
  }
  if (!lockdown.ok && lockdown.state !== 'pending' && lockdown.state !== 'no_cli') {
    out.push({
      severity: 'error',
      text: `The provider is not locked down, so it runs nothing: ${lockdown.detail}.`,
      place: 'provider',
    });
  }
  return out;
}

function serviceAttention(s: ServiceView): Attention | undefined {
  if (!TROUBLE_STATES.has(s.state) && s.state !== 'stopped') return undefined;
  const facts = SERVICE_CATALOGUE[s.name];
  const why = s.lastError ? ` ${s.lastError.replace(/\.?$/, '.')}` : '';
  return {
    severity: s.state === 'gave-up' || s.state === 'crashed' ? 'error' : 'warning',
    // "Persona store: gave up.", as the tray says it ("is gave up", "is crashed, restarting soon" would not read).
    text: `${facts.title}: ${STATE_WORDS[s.state]}.${why} ${STATE_ADVICE[s.state]}`.trim(),
    place: 'services',
  };
}

/** The span the overview's charts show, in minutes (what "Needs attention" names errors over): an hour unless asked. */
const Span = z
  .object({ minutes: z.number().int().min(1).max(MINUTES_KEPT).optional() })
  .strict()
  .optional();

async function overview(ctx: MethodContext, minutes = MINUTES_SHOWN): Promise<OverviewView> {
  const { services, supervisor, crashes } = ctx;
  const current = supervisor.status();
  const personas = personaProfiles(services);
  const blocks = personas.then((p) => entryCounts(services, p.profiles));
  const subscriptions = services
    .call<ConnectionList>('identity', { path: '/v1/connections' })
    .then((a) => a.body.connections);
  const profile = subscriptions.then((c) => c[0]?.profile ?? 'default').catch(() => 'default');
  const listed = profile.then(
    async (p) =>
      (
        await services.call<SubscriptionList>('repohost-gateway', {
          path: '/v1/subscriptions',
          headers: { 'x-identity-profile': p },
          query: { limit: 100 },
        })
      ).body,
  );
  const credentials = services
    .call<SessionCredentialList>('identity', { path: '/v1/session-credentials' })
    .then((a) => a.body.credentials);
  const [personaCount, fields, notes, openSubscriptions, connections, hubCredentials, signals, ready] =
    await Promise.all([
      count(async () => {
        const p = await personas;
        return { value: p.profiles.length, more: p.more };
      }),
      count(async () => {
        const [b, p] = await Promise.all([blocks, personas]);
        return { value: b.fields, more: p.more || p.profiles.length > BLOCKS_COUNTED };
      }),
      count(async () => {
        const [b, p] = await Promise.all([blocks, personas]);
        return { value: b.notes, more: p.more || p.profiles.length > BLOCKS_COUNTED };
      }),
      count(async () => {
        const p = await profile;
        return (
          await services.call<SubscriptionList>('repohost-gateway', {
            path: '/v1/subscriptions',
            headers: { 'x-identity-profile': p },
            query: { state: 'active', limit: 1 },
          })
        ).body.total;
      }),
      count(async () => (await subscriptions).length),
      count(async () => {
        const now = Date.now();
        return (await credentials).filter(
          (c) => !c.current && c.purpose !== 'owner' && (!c.expires_at || Date.parse(c.expires_at) > now),
        ).length;
      }),
      listed.catch(() => undefined),
      services
        .call<Readiness>('model-provider', { path: '/ready', acceptStatus: [503] })
        .then((a) => a.body)
        .catch(() => undefined),
    ]);

  // A gateway that is up with no connection acts for nobody: it waits for the person too.
  const connectionCount = 'value' in connections ? connections.value : undefined;
  const statuses = current.map((s) => {
    const lastCrash = crashes.lastCrash(s.name);
    const gatewayUp = s.name === 'repohost-gateway' && (s.state === 'ready' || s.state === 'waiting');
    const need = serviceNeed(s) ?? (gatewayUp && connectionCount === 0 ? { ...CONNECTION_NEED } : undefined);
    return { ...s, ...(lastCrash ? { lastCrash } : {}), advice: STATE_ADVICE[s.state], ...(need ? { need } : {}) };
  });
  const needs: Need[] = statuses.flatMap((s) => (s.need ? [s.need] : []));
  const attention: Attention[] = statuses.map(serviceAttention).filter((a): a is Attention => a !== undefined);
  // A signal whose delivery failed and is being tried again needs attention now, not only once it gives up.
  const retrying = (signals?.items ?? []).filter((s) => s.signal === 'pending' && s.signal_attempts > 0).length;
  if (retrying > 0) {
    attention.push({
      severity: 'warning',
      text: `${retrying === 1 ? 'One signal is' : `${retrying} signals are`} failing to reach the hub and being tried again; see the subscriptions on the Platform page.`,
      place: 'platform',
    });
  }
  const failed = (signals?.items ?? []).filter((s) => s.signal === 'failed').length;
  if (failed > 0) {
    attention.push({
      severity: 'warning',
      text: `${failed === 1 ? 'One signal' : `${failed} signals`} could not be delivered to the hub after every attempt; see the subscriptions on the Platform page.`,
      place: 'platform',
    });
  }
  // Every error a chart draws in red is named here too, over the span the charts show: the hubs' (the
  // app's own are not drawn; the console says so where its own call failed).
  const shown = ctx.activity.view(minutes);
  for (const [name, service] of Object.entries(shown.services)) {
    const errors = (service?.minutes ?? []).reduce((n, m) => n + m.errors, 0);
    if (errors === 0) continue;
    attention.push({
      severity: 'warning',
      text: `The ${SERVICE_CATALOGUE[name as ServiceName].label} failed ${errors === 1 ? 'one request' : `${errors} requests`} of hubs in the ${spanWords(shown.services[name]!.minutes.length)} (the red in its chart); its log says why.`,
      place: 'services',
    });
  }
  // A hub credential about to expire, a week ahead, so the person makes the next one before the hub is cut off.
  for (const c of expiringSoon(await credentials.catch(() => []), new Date())) {
    attention.push({
      severity: 'warning',
      text: `The hub credential \u201c${c.label ?? c.id}\u201d expires on ${new Date(c.expires_at!).toLocaleString()}: make a new one on Connect a hub, give it to the hub, then revoke this one.`,
      place: 'hub',
    });
  }
  // A provider that waits says so as its need (card and headline), not a second time here.
  if (ready && !needs.some((n) => n.service === 'model-provider')) attention.push(...providerAttention(ready));
  return {
    headline: headline(statuses, needs),
    services: statuses,
    needs,
    counts: { personas: personaCount, fields, notes, openSubscriptions, connections, hubCredentials },
    attention,
  };
}

/** How long before a hub credential expires the app says so. */
export const EXPIRY_NOTICE_MS = 7 * 86_400_000;

/** The hub credentials that expire within a week from `now` (and have not yet). */
export function expiringSoon<C extends { purpose: string; expires_at: string | null; current?: boolean }>(
  credentials: C[],
  now: Date,
): C[] {
  return credentials.filter((c) => {
    if (c.purpose !== 'hub' || !c.expires_at) return false;
    const left = Date.parse(c.expires_at) - now.getTime();
    return left > 0 && left <= EXPIRY_NOTICE_MS;
  });
}

export const OVERVIEW_METHODS = {
  // `minutes`: the span the page's charts show, so that every error they draw is named.
  'overview.get': method(Span, async (p, ctx) => overview(ctx, p?.minutes)),
  // Read now, so the chart's last minute is current when the page asks.
  'overview.activity': method(Span, async (p, ctx): Promise<ActivityView> => {
    await ctx.activity.sample();
    return ctx.activity.view(p?.minutes);
  }),
};
