import { Api } from '../../kit/api.ts';
import { ciRoutes } from './ci.ts';
import type { GatewayParts } from './common.ts';
import { fileRoutes } from './files.ts';
import { issueRoutes } from './issues.ts';
import { pullRoutes } from './pulls.ts';
import { identityRoutes, repoRoutes } from './repos.ts';
import { subscriptionRoutes } from './subscriptions.ts';

export type { GatewayParts };

/** Every /v1 route of the gateway, one group per resource. */
export function gatewayApi(parts: GatewayParts): Api {
  const api = new Api(
    {
      title: 'Repository-hosting gateway',
      version: '1.0.0',
      description:
        'The code-hosting platform as small public models, under the caller\u2019s own credential (resolved per request from the identity service for the profile named in X-Identity-Profile).',
    },
    parts.verifier,
  );
  identityRoutes(api, parts);
  repoRoutes(api, parts);
  pullRoutes(api, parts);
  issueRoutes(api, parts);
  ciRoutes(api, parts);
  fileRoutes(api, parts);
  subscriptionRoutes(api, parts);
  return api;
}
