/**
 * Each answer the console and its page read, from the real services under the real supervisor, checked
 * against the schema its consumer's type is inferred from (services/<name>/shapes.ts), strictly: a member
 * added, missing or of another type fails, so a service cannot change an answer while the console shows blanks.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { ConnectionList, SessionCredentialList } from '../services/identity/shapes.ts';
import { ModelList, Readiness } from '../services/model-provider/shapes.ts';
import {
  Export,
  FieldPage,
  IdentityBlock,
  NotePage,
  PersonaPage,
  EventPage,
  RecallResult,
} from '../services/persona-store/shapes.ts';
import { Me, Subscription, SubscriptionList } from '../services/repohost-gateway/shapes.ts';
import {
  SETTLE_MS,
  seedConsoleData,
  startConsoleStack,
  type ConsoleStack,
  type Seeded,
} from './support/console-stack.ts';

vi.setConfig({ testTimeout: 60_000, hookTimeout: SETTLE_MS + 60_000 });

/** The schema with every object strict, all the way down: an unknown member is a failure, not dropped. */
function strictly(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodObject)
    return z.strictObject(
      Object.fromEntries(Object.entries(schema.shape as Record<string, z.ZodType>).map(([k, v]) => [k, strictly(v)])),
    );
  if (schema instanceof z.ZodArray) return z.array(strictly(schema.element as z.ZodType));
  if (schema instanceof z.ZodOptional) return strictly(schema.unwrap() as z.ZodType).optional();
  if (schema instanceof z.ZodNullable) return strictly(schema.unwrap() as z.ZodType).nullable();
  if (schema instanceof z.ZodUnion)
    return z.union((schema.options as z.ZodType[]).map(strictly) as [z.ZodType, z.ZodType]);
  return schema;
}

/** The issues of an answer against a schema, as `path: message` lines (empty: it matches). */
function drift(schema: z.ZodType, answer: unknown): string[] {
  const parsed = strictly(schema).safeParse(answer);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.') || '(answer)'}: ${i.message}`);
}

let stack: ConsoleStack;
let seeded: Seeded;
let credential: string;
const tokens = new Map<string, string>();

async function token(audience: string): Promise<string> {
  if (!tokens.has(audience)) {
    const res = await fetch(`${stack.supervisor.url('identity')}/v1/auth/service-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
      body: JSON.stringify({ audience }),
    });
    tokens.set(audience, ((await res.json()) as { token: string }).token);
  }
  return tokens.get(audience)!;
}

/** What a service answers to a GET, read the way the console reads it (its credential, the profile header). */
type Service = 'identity' | 'persona-store' | 'repohost-gateway' | 'model-provider';
async function answer(service: Service, path: string): Promise<unknown> {
  const authorization =
    service === 'identity'
      ? `Bearer ${credential}`
      : service === 'persona-store'
        ? `Bearer ${await token('persona')}`
        : service === 'repohost-gateway'
          ? `Bearer ${await token('repohost-api')}`
          : undefined;
  const res = await fetch(`${stack.supervisor.url(service)}${path}`, {
    headers: { ...(authorization ? { authorization } : {}), 'x-identity-profile': seeded.connectionProfile },
  });
  expect([200, 503], `${service} ${path} answered ${res.status}`).toContain(res.status);
  return res.json();
}

beforeAll(async () => {
  stack = await startConsoleStack();
  credential = await stack.supervisor.localCredential();
  seeded = await seedConsoleData({
    identityUrl: stack.supervisor.url('identity'),
    personaUrl: stack.supervisor.url('persona-store'),
    gatewayUrl: stack.supervisor.url('repohost-gateway'),
    credential,
    platform: stack.platform,
  });
});

afterAll(async () => {
  await stack?.close();
});

describe('each answer the console reads matches its service\u2019s declared shape exactly', () => {
  const profile = () => seeded.profile;
  const cases: [string, Service, () => string, z.ZodType][] = [
    ['the provider\u2019s readiness', 'model-provider', () => '/ready', Readiness],
    ['the provider\u2019s models', 'model-provider', () => '/v1/models', ModelList],
    ['identity\u2019s connections', 'identity', () => '/v1/connections', ConnectionList],
    ['identity\u2019s session credentials', 'identity', () => '/v1/session-credentials', SessionCredentialList],
    ['a page of personas', 'persona-store', () => '/v1/personas', PersonaPage],
    ['an identity block', 'persona-store', () => `/v1/personas/${profile()}`, IdentityBlock],
    ['a page of fields', 'persona-store', () => `/v1/personas/${profile()}/fields`, FieldPage],
    ['a page of notes', 'persona-store', () => `/v1/personas/${profile()}/notes`, NotePage],
    ['a page of the change log', 'persona-store', () => `/v1/personas/${profile()}/events?order=newest`, EventPage],
    ['recall', 'persona-store', () => '/v1/recall?q=tea', RecallResult],
    ['an export page', 'persona-store', () => `/v1/personas/${profile()}/export`, Export],
    ['the gateway\u2019s subscriptions', 'repohost-gateway', () => '/v1/subscriptions', SubscriptionList],
    ['a subscription', 'repohost-gateway', () => `/v1/subscriptions/${seeded.subscriptionId}`, Subscription],
    ['the connection through the gateway', 'repohost-gateway', () => '/v1/me', Me],
  ];
  it.each(cases)('%s', async (_what, service, path, schema) => {
    expect(drift(schema, await answer(service, path()))).toEqual([]);
  });

  it('the check itself fails on a member added, missing or retyped', () => {
    const ready = {
      status: 'ready',
      ready: true,
      checks: {
        cli: { ok: true, path: '/bin/claude', source: 'PATH' },
        lockdown: { ok: true, state: 'ok', tools: [], mcp_servers: [], hooks: [], probed_at: null, detail: 'ok' },
        login: { ok: true, state: 'signed_in' },
      },
      runs: { running: 0, queued: 0, cap: 1, max_queue: 1 },
      stream: 'whole',
    };
    expect(drift(Readiness, ready)).toEqual([]);
    expect(
      drift(Readiness, { ...ready, checks: { ...ready.checks, lockdown: { ...ready.checks.lockdown, skills: [] } } }),
    ).toEqual([expect.stringContaining('checks.lockdown')]);
    expect(drift(Readiness, { ...ready, runs: { running: 0, queued: 0, cap: 1 } })).toEqual([
      expect.stringContaining('runs.max_queue'),
    ]);
    expect(drift(Readiness, { ...ready, ready: 'yes' })).toEqual([expect.stringContaining('ready')]);
  });
});
