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

/** The random part as text: base64url without padding, base64 with it. */
function bodyPattern(format: SecretFormat): string {
  if (format.encoding === 'base64url') return `[A-Za-z0-9_-]{${Math.ceil((format.bytes * 4) / 3)}}`;
  const padding = (3 - (format.bytes % 3)) % 3;
  return `[A-Za-z0-9+/]{${Math.ceil(format.bytes / 3) * 4 - padding}}${'='.repeat(padding)}`;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A format as a pattern that finds it anywhere in a text (bare, in a `NAME=` line, in JSON, in a URL's query). */
export function secretPattern(format: SecretFormat): RegExp {
  return new RegExp(`${escaped(format.prefix)}${bodyPattern(format)}`);
}

const PATTERNS = Object.values(SECRET_FORMATS).map((format) => ({
  format: format as SecretFormat,
  pattern: secretPattern(format),
}));

/** base64's own characters as a URL's query writes them (a signal secret pasted from a link). */
const ENCODED = /%(2B|2F|3D)/gi;
const DECODED: Record<string, string> = { '2B': '+', '2F': '/', '3D': '=' };

/** The first of this app's secret formats the text holds (as written, or percent-encoded in a URL), or undefined. */
export function appSecretIn(text: string): SecretFormat | undefined {
  const plain = text.includes('%') ? text.replace(ENCODED, (_m, hex: string) => DECODED[hex.toUpperCase()]!) : text;
  return PATTERNS.find(({ pattern }) => pattern.test(text) || (plain !== text && pattern.test(plain)))?.format;
}
