import { z } from 'zod';
import type { Api } from '../../kit/api.ts';
import {
  OpenedSubscription,
  Subscription,
  SubscriptionList,
  SUBSCRIPTION_STATES,
  SubscriptionKind,
} from '../shapes.ts';
import { MAX_LIFETIME_SECONDS } from '../subscriptions.ts';
import { type GatewayParts, Number_, Ref, RepoFullName, routesOf, sessionOf } from './common.ts';

const SubscriptionParams = z.object({
  id: z.string().regex(/^sub_[A-Za-z0-9_-]{16}$/, 'id is a subscription id (sub_...)'),
});

export function subscriptionRoutes(api: Api, parts: GatewayParts): void {
  const route = routesOf(api, 'subscriptions');
  route({
    method: 'post',
    path: '/v1/subscriptions',
    operationId: 'open_subscription',
    summary: 'Watch for checks settling, a pull request merging, a review landing or a run completing',
    description:
      'The subscription is watched at once, by a background sweep and on every read; when the event happens it ends and exactly one signal, signed per Standard Webhooks with the secret in this answer (shown once), is POSTed to signal_url.',
    body: z.object({
      kind: SubscriptionKind,
      repo: RepoFullName,
      pull: Number_.optional().meta({
        description: 'Pull request number (pull_merged, review_landed, or checks_settled on its head).',
      }),
      ref: Ref.optional().meta({ description: 'Branch or commit SHA (checks_settled).' }),
      run_id: Number_.optional().meta({ description: 'Workflow run id (run_completed).' }),
      signal_url: z.string().url('signal_url must be an absolute URL').max(2048).meta({
        description:
          'Where the one signal is POSTed: an http(s) address under REPOHOST_SIGNAL_URL_PREFIXES (loopback on any port by default), without user information or a fragment, never on this app\u2019s own service ports (REPOHOST_SIGNAL_REFUSED_PORTS).',
      }),
      expires_in_seconds: z.coerce
        .number()
        .int()
        .min(1)
        .max(MAX_LIFETIME_SECONDS, 'a subscription lives at most one week (604800 seconds)')
        .default(86_400)
        .meta({ description: 'Lifetime, at most one week; default one day.' }),
    }),
    responses: {
      201: { description: 'The subscription, with its signing secret (shown once).', schema: OpenedSubscription },
    },
    problems: [422],
    handler: async (ctx) => ({
      status: 201,
      body: await parts.subscriptions.open(sessionOf(parts, ctx), ctx.body),
      headers: { 'Cache-Control': 'no-store' },
    }),
  });

  route({
    method: 'get',
    path: '/v1/subscriptions',
    operationId: 'list_subscriptions',
    summary: 'Your subscriptions, newest first; active ones of this profile are watched first',
    query: z.object({
      state: z.enum(SUBSCRIPTION_STATES).optional(),
      limit: z.coerce.number().int().min(1, 'limit must be 1 to 100').max(100, 'limit must be 1 to 100').default(20),
    }),
    responses: { 200: { description: 'At most limit subscriptions and the total.', schema: SubscriptionList } },
    problems: [404, 503],
    callsPlatform: false,
    handler: async (ctx) => ({
      body: await parts.subscriptions.list(sessionOf(parts, ctx), ctx.query.limit, ctx.query.state),
    }),
  });

  route({
    method: 'get',
    path: '/v1/subscriptions/{id}',
    operationId: 'get_subscription',
    summary: 'Read a subscription (and watch it)',
    params: SubscriptionParams,
    responses: { 200: { description: 'The subscription.', schema: Subscription } },
    problems: [404, 503],
    callsPlatform: false,
    handler: async (ctx) => ({ body: await parts.subscriptions.read(sessionOf(parts, ctx), ctx.params.id) }),
  });

  route({
    method: 'delete',
    path: '/v1/subscriptions/{id}',
    operationId: 'cancel_subscription',
    summary: 'Cancel a subscription: it ends as cancelled, with its one signal',
    description:
      'Only under the profile it was opened with (its profile member); another account\u2019s or profile\u2019s subscription answers 404 like a missing one. An active subscription ends with state and event cancelled, and its one signal (data.state and data.event cancelled, signed with its own secret) is sent in the background; the answer does not wait for the receiver. One that has already ended, expired or been cancelled is answered as it is (200, its state says which), and no further signal is sent. The platform is not asked.',
    params: SubscriptionParams,
    responses: {
      200: {
        description: 'The subscription after the cancel: cancelled, or the state it had already ended in.',
        schema: Subscription,
      },
    },
    problems: [404, 503],
    callsPlatform: false,
    handler: async (ctx) => ({ body: await parts.subscriptions.cancel(sessionOf(parts, ctx), ctx.params.id) }),
  });
}
