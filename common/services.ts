/**
 * The one service catalogue: every fact about the four services that more than one part of the app
 * needs (names, words for a person, environment prefix, default port, token audience, session file).
 * Imports nothing, so the supervisor, the console, the renderer, the tray and `services/run.ts` can all
 * read it; `catalogue.test.ts` pins it against each service's own configuration.
 */

export const SERVICE_NAMES = ['identity', 'persona-store', 'repohost-gateway', 'model-provider'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

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
  /** The stem of the variables a hub is configured with for it: `HUB_<stem>_BASE_URL`. */
  readonly hubStem: string;
}

export const SERVICE_CATALOGUE: Readonly<Record<ServiceName, ServiceFacts>> = {
  identity: {
    name: 'identity',
    title: 'Identity',
    label: 'identity service',
    prefix: 'IDENTITY_',
    port: 8001,
    audience: null,
    hubStem: 'IDENTITY',
  },
  'persona-store': {
    name: 'persona-store',
    title: 'Persona store',
    label: 'persona store',
    prefix: 'PERSONA_',
    port: 8004,
    audience: 'persona',
    hubStem: 'PERSONA',
  },
  'repohost-gateway': {
    name: 'repohost-gateway',
    title: 'Repository gateway',
    label: 'repository-hosting gateway',
    prefix: 'REPOHOST_',
    port: 8011,
    audience: 'repohost-api',
    hubStem: 'REPOHOST',
  },
  'model-provider': {
    name: 'model-provider',
    title: 'Chat-model provider',
    label: 'chat-model provider',
    prefix: 'MODELPROV_',
    port: 8127,
    audience: null,
    hubStem: 'MODELPROV',
  },
};

/** The services in the order a person reads them (the order of SERVICE_NAMES). */
export const SERVICES: readonly ServiceFacts[] = SERVICE_NAMES.map((name) => SERVICE_CATALOGUE[name]);

/** Titles by name, for menus and headings. */
export const SERVICE_TITLES: Readonly<Record<ServiceName, string>> = Object.fromEntries(SERVICES.map((s) => [s.name, s.title])) as Record<ServiceName, string>;

/** The file in identity's data folder that holds the local account's session credential (owner-only). */
export const LOCAL_SESSION_FILE = 'local-session';

export function isServiceName(value: unknown): value is ServiceName {
  return typeof value === 'string' && (SERVICE_NAMES as readonly string[]).includes(value);
}
