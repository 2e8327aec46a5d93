/**
 * Every secret this app issues, by format: each issuer makes its secret from its entry here, and the
 * persona store refuses any string holding one (nothing this app issues is stored as a memory).
 * A format is a prefix and a random part of `bytes` random bytes written in `encoding`.
 */
export interface SecretFormat {
  /** How a refusal names it: "… looks like it holds <kind>". */
  readonly kind: string;
  readonly prefix: string;
  readonly bytes: number;
  readonly encoding: 'base64url' | 'base64';
}

export const SECRET_FORMATS = {
  /** identity: a session credential (the app's own, a hub's), also inside the `HUB_SESSION_CREDENTIAL=` line the hub page shows. */
  sessionCredential: {
    kind: 'a session credential of this app\u2019s identity service',
    prefix: 'hubs_',
    bytes: 32,
    encoding: 'base64url',
  },
  /** repohost-gateway: a subscription's signal secret (Standard Webhooks). */
  signalSecret: {
    kind: 'a signal secret of this app\u2019s repository gateway',
    prefix: 'whsec_',
    bytes: 24,
    encoding: 'base64',
  },
  /** the supervisor: the gateway's service token towards identity. */
  gatewayServiceToken: {
    kind: 'the service token of this app\u2019s repository gateway',
    prefix: 'hubsvc_',
    bytes: 32,
    encoding: 'base64url',
  },
  /** the console: the per-launch secret of the headless console. */
  consoleSecret: { kind: 'the console secret of this app', prefix: 'hubcon_', bytes: 32, encoding: 'base64url' },
} as const satisfies Record<string, SecretFormat>;

export type SecretFormatName = keyof typeof SECRET_FORMATS;

/** How many characters the random part takes: base64url without padding, base64 with it. */
const partLength = (format: SecretFormat) =>
  format.encoding === 'base64url' ? Math.ceil((format.bytes * 4) / 3) : Math.ceil(format.bytes / 3) * 4;

/** The random part as a pattern: base64url without padding, base64 with it. */
function bodyPattern(format: SecretFormat): string {
  if (format.encoding === 'base64url') return `[A-Za-z0-9_-]{${partLength(format)}}`;
  const padding = (3 - (format.bytes % 3)) % 3;
  return `[A-Za-z0-9+/]{${partLength(format) - padding}}${'='.repeat(padding)}`;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A format as a pattern that finds it anywhere in a text (bare, in a `NAME=` line, in JSON, in a URL's query). */
export function secretPattern(format: SecretFormat): RegExp {
  return new RegExp(`${escaped(format.prefix)}${bodyPattern(format)}`);
}

/** Every prefix this app's secrets start with: what a log line must never show the rest of (the services pass it to the kit's logger). */
export const SECRET_PREFIXES: readonly string[] = Object.values(SECRET_FORMATS).map((format) => format.prefix);

const PATTERNS = Object.values(SECRET_FORMATS).map((format) => ({
  format: format as SecretFormat,
  pattern: secretPattern(format),
}));

/**
 * The first of this app's secret formats the text holds, prefix and all, or undefined. The text is taken
 * as it is: what a person would read of it (escapes decoded, invisible characters gone) is the caller's
 * to make (the persona store's credential screen does).
 */
export function appSecretIn(text: string): SecretFormat | undefined {
  return PATTERNS.find(({ pattern }) => pattern.test(text))?.format;
}

/**
 * The random part of a format without its prefix, or behind another one (`HUBS_`, `hubs-`, `my_hubs_`), as
 * a pattern over one run of token characters (`randomPartsIn`) whose first group is the random part: exactly
 * as long as the format makes it, the run's end (so a run inside a longer token, a base64 image say, is
 * not one). Whether the group is random rather than a name is the caller's judgement.
 */
export function randomPartPattern(format: SecretFormat): RegExp {
  return new RegExp(`^(?:[A-Za-z][A-Za-z0-9]{0,11}[_-]){0,3}(${bodyPattern(format)})$`);
}

/** One pattern per distinct random part (the formats of equal size and encoding share one). */
const RANDOM_PARTS: readonly RegExp[] = [
  ...new Map(Object.values(SECRET_FORMATS).map((format) => [bodyPattern(format), randomPartPattern(format)])).values(),
];

/**
 * Runs of the characters a token of either encoding holds, long enough for a random part; a `=` ends one
 * (it pads base64, or ends a `NAME=`), and what follows it starts the next.
 */
const TOKEN_RUN = new RegExp(`[A-Za-z0-9_+/-]{${Math.min(...Object.values(SECRET_FORMATS).map(partLength))},}=*`, 'g');

/** Every run of token characters in `text` that is a random part of one of this app's formats (that part). */
export function* randomPartsIn(text: string): Generator<string> {
  for (const [run] of text.matchAll(TOKEN_RUN)) {
    for (const pattern of RANDOM_PARTS) {
      const part = pattern.exec(run)?.[1];
      if (part !== undefined) yield part;
    }
  }
}
