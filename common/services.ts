/**
 * The one service catalogue: every fact about the four services that more than one part of the app
 * needs (names, words for a person, environment prefix, default port, token audience, session file).
 * Imports nothing, so the supervisor, the console, the renderer, the tray and `services/run.ts` can all
 * read it; `catalogue.test.ts` pins it against each service's own configuration.
 */

export const SERVICE_NAMES = ['identity', 'persona-store', 'repohost-gateway', 'model-provider'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** What a caller presents to a service: identity's session credential itself, a token for the service's audience, or nothing. */
export type CallerCredential = 'session-credential' | 'token' | 'none';

/** What a hub variable holds: the service's base URL for a hub, its audience, a profile of the gateway, identity's session credential. */
export type HubValue = 'base-url' | 'audience' | 'profile' | 'session-credential';

/**
 * A setting the supervisor fills in for a service (unless the user set it), by its name after the prefix:
 * identity's URL, identity's public keys file and socket (in identity's data folder), the gateway's
 * service token (and identity's register of it), the ports a signal must never reach, the provider's
 * stream mode from the app's settings, the persona store's settings service (identity, where the
 * person's own choices are kept: its base URL and the persona store's token there).
 */
export type WiredSetting =
  | 'IDENTITY_URL'
  | 'IDENTITY_KEYS_FILE'
  | 'IDENTITY_SOCKET'
  | 'IDENTITY_SERVICE_TOKEN'
  | 'SERVICE_TOKENS'
  | 'SIGNAL_REFUSED_PORTS'
  | 'STREAM'
  | 'SETTINGS_API_BASE_URL'
  | 'SETTINGS_API_TOKEN';

export interface ServiceFacts {
  /** The program's name: `npm run service -- <name>`, its folder under services/, its data sub-folder. */
  readonly name: ServiceName;
  /** How a person names it in a heading or menu: "Persona store". */
  readonly title: string;
  /** How a sentence names it, without an article: "the persona store answered 404". */
  readonly label: string;
  /** Prefix of every environment variable it reads: "PERSONA_". */
  readonly prefix: string;
  /** Port it listens on unless `<prefix>PORT` says otherwise. */
  readonly port: number;
  /** The `aud` its tokens must carry; null for a service that checks no token. */
  readonly audience: string | null;
  /** What a caller of its API presents (the console's client, a hub). */
  readonly credential: CallerCredential;
  /** The /ready checks whose failure waits on something outside it (a person, the network, another service): the `waiting` state. */
  readonly waitsOn: readonly string[];
  /** The settings the supervisor wires for it (see WiredSetting). */
  readonly wired: readonly WiredSetting[];
  /** The path a hub's base URL for it ends in (the provider's OpenAI-style `/v1`); empty for its root. */
  readonly hubPath: string;
  /** The variables a hub is configured with for it, each with what it holds, in the order the hub page shows them. */
  readonly hubVariables: readonly (readonly [variable: string, holds: HubValue])[];
  /** How a hub calls it, one sentence on the hub page. */
  readonly hubNote: string;
}

export const SERVICE_CATALOGUE: Readonly<Record<ServiceName, ServiceFacts>> = {
  identity: {
    name: 'identity',
    title: 'Identity',
    label: 'identity service',
    prefix: 'IDENTITY_',
    port: 8001,
    audience: null,
    credential: 'session-credential',
    waitsOn: [],
    wired: ['SERVICE_TOKENS'],
    hubPath: '',
    hubVariables: [
      ['HUB_IDENTITY_URL', 'base-url'],
      ['HUB_SESSION_CREDENTIAL', 'session-credential'],
    ],
    hubNote:
      'The hub trades its session credential for short-lived tokens: POST $HUB_IDENTITY_URL/v1/auth/service-token with "Authorization: Bearer $HUB_SESSION_CREDENTIAL" and {"audience": "\u2026"}.',
  },
  'persona-store': {
    name: 'persona-store',
    title: 'Persona store',
    label: 'persona store',
    prefix: 'PERSONA_',
    port: 8004,
    audience: 'persona',
    credential: 'token',
    waitsOn: ['identity_keys', 'identity'],
    // The settings service first: it applies only where the user did not point IDENTITY_URL elsewhere themselves.
    wired: ['SETTINGS_API_BASE_URL', 'SETTINGS_API_TOKEN', 'IDENTITY_URL', 'IDENTITY_KEYS_FILE', 'IDENTITY_SOCKET'],
    hubPath: '',
    hubVariables: [
      ['HUB_PERSONA_BASE_URL', 'base-url'],
      ['HUB_PERSONA_AUDIENCE', 'audience'],
    ],
    hubNote: 'Every /v1 call carries "Authorization: Bearer <token>" with a token minted for this audience.',
  },
  'repohost-gateway': {
    name: 'repohost-gateway',
    title: 'Repository gateway',
    label: 'repository-hosting gateway',
    prefix: 'REPOHOST_',
    port: 8011,
    audience: 'repohost-api',
    credential: 'token',
    waitsOn: ['platform', 'identity_keys', 'identity', 'service_token'],
    wired: ['IDENTITY_URL', 'IDENTITY_KEYS_FILE', 'IDENTITY_SOCKET', 'IDENTITY_SERVICE_TOKEN', 'SIGNAL_REFUSED_PORTS'],
    hubPath: '',
    hubVariables: [
      ['HUB_REPOHOST_BASE_URL', 'base-url'],
      ['HUB_REPOHOST_AUDIENCE', 'audience'],
      ['HUB_REPOHOST_PROFILE', 'profile'],
    ],
    hubNote:
      'Every /v1 call carries a token for this audience and the header X-Identity-Profile naming a profile whose platform connection it acts under (Platform page).',
  },
  'model-provider': {
    name: 'model-provider',
    title: 'Chat-model provider',
    label: 'chat-model provider',
    prefix: 'MODELPROV_',
    port: 8127,
    audience: null,
    credential: 'none',
    waitsOn: ['login', 'cli', 'lockdown'],
    wired: ['STREAM'],
    hubPath: '/v1',
    hubVariables: [['HUB_MODELPROV_BASE_URL', 'base-url']],
    hubNote:
      'An OpenAI-compatible chat-completions endpoint; it takes no token (an OpenAI client that insists on an API key may send any value).',
  },
};

/** The services in the order a person reads them (the order of SERVICE_NAMES). */
export const SERVICES: readonly ServiceFacts[] = SERVICE_NAMES.map((name) => SERVICE_CATALOGUE[name]);

/** Titles by name, for menus and headings. */
export const SERVICE_TITLES: Readonly<Record<ServiceName, string>> = Object.fromEntries(
  SERVICES.map((s) => [s.name, s.title]),
) as Record<ServiceName, string>;

/** The file in identity's data folder that holds the local account's session credential (owner-only). */
export const LOCAL_SESSION_FILE = 'local-session';

/**
 * Where identity's callers find it, in its data folder: its public keys (a JWK set it rewrites at every
 * rotation) and its socket (on Windows, a file naming its pipe). services/kit/README.md says why.
 */
export const IDENTITY_PLACES = { keysFile: 'public-keys.json', socket: 'identity.sock' } as const;

/**
 * The provider's socket in its data folder (on Windows, a file naming its pipe), where the console
 * calls it: the provider takes no credential, so the channel is what tells the app's own calls from a
 * hub's in its counters (services/kit/callers.ts).
 */
export const PROVIDER_SOCKET = 'provider.sock';

/** The audiences of the services that check tokens: what a hub credential mints tokens for unless it names others. */
export const TOKEN_AUDIENCES: readonly string[] = SERVICES.flatMap((s) => (s.audience === null ? [] : [s.audience]));

/** Every default port of the app's services: a signal is never sent to one. */
export const SERVICE_PORTS: readonly number[] = SERVICES.map((s) => s.port);

/** The audience of a service that checks tokens; a service that checks none has no audience to ask for. */
export function tokenAudience(name: ServiceName): string {
  const { audience, label } = SERVICE_CATALOGUE[name];
  if (audience === null) throw new Error(`The ${label} checks no token, so it has no audience.`);
  return audience;
}

export function isServiceName(value: unknown): value is ServiceName {
  return typeof value === 'string' && (SERVICE_NAMES as readonly string[]).includes(value);
}

/**
 * The services a service calls and trusts, which must be this app's own before it starts: identity, for
 * every service wired to identity's URL. A port of one of them held by another program keeps it unstarted.
 */
export function dependsOn(name: ServiceName): ServiceName[] {
  return SERVICE_CATALOGUE[name].wired.includes('IDENTITY_URL') ? ['identity'] : [];
}
