/**
 * The console API's answers that carry a service's shape, as types only: each service member's type is
 * inferred from the service's zod schema (services/<name>/shapes.ts), so the console
 * and its page read one declaration. The page imports this file with `import type`; answers of the
 * console's own (states, logs, overview, first run) are in common/contract.ts.
 */
import type { HubService } from '../../common/contract.ts';
import type { NewSessionCredential, SessionCredential } from '../../services/identity/shapes.ts';
import type { ModelList, Readiness, StreamMode } from '../../services/model-provider/shapes.ts';
import type { Event, Export, IdentityBlock } from '../../services/persona-store/shapes.ts';
import type { Subscription } from '../../services/repohost-gateway/shapes.ts';

/** A subscription as the console shows it: the gateway's, without its `signal_url` (a hub may put its own secret there). */
export type SubscriptionView = Omit<Subscription, 'signal_url'>;

/** `subscriptions.list`: every subscription of the account, and the profile the gateway acted under to list them. */
export interface SubscriptionListView {
  profile: string;
  total: number;
  items: SubscriptionView[];
}

/**
 * How the provider sends a streamed completion, as the console shows and changes it: the mode kept in the
 * app's settings (applied when the provider restarts) and the one the running provider reports; also
 * `provider.setStream`'s answer.
 */
export interface ProviderStreamView {
  setting: StreamMode;
  running: StreamMode | null;
  /** MODELPROV_STREAM set in the environment the services start from: it wins over the setting. */
  fromEnvironment: boolean;
}

/** `provider.status`: the provider's `/ready` body (200 or 503) and `/v1/models` as it answered them, and the stream mode. */
export interface ProviderStatus {
  ready: Readiness;
  models: ModelList;
  stream: ProviderStreamView;
}

/** `personas.get`: the identity block, with the card's ETag (sent back with `personas.update`). */
export type PersonaView = IdentityBlock & { etag?: string };

/**
 * One entry of `personas.events`: the store's, with `label` (a note's first words; "a destroyed note") and,
 * when the person keeps replaced values, `after`: what the change left of each member it replaced.
 */
export type ChangeLogEntryView = Event & { label?: string; after?: Record<string, unknown> };
export interface ChangeLogPageView {
  events: ChangeLogEntryView[];
  next_after: number | null;
}

/** `personas.export`: the persona store's export, every page joined (both cursors null). */
export type WholeExport = Export & { fields_next_after: null; notes_next_after: null };

/** A session credential of the local account as identity lists it (never its secret), with what it may do in a sentence. */
export type SessionCredentialView = SessionCredential & { may: string };

/** `hub.createCredential`: the new credential, with its secret; the only answer of the console that carries one, shown once. */
export type NewHubCredential = NewSessionCredential & { may: string };

/** `hub.get`: how a hub connects, and the local account's session credentials. */
export interface HubView {
  /** Days a new hub credential lives unless the person picks another (Settings); null: never. */
  defaultDays: number | null;
  services: HubService[];
  credentials: SessionCredentialView[];
  /** Where the credentials could not be listed (identity down), the sentence saying so. */
  credentialsError?: string;
}
