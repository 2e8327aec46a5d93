import { IDENTITY_PLACES, SERVICE_CATALOGUE, SERVICE_PORTS, tokenAudience } from '../../common/services.ts';
import { commonSettings, integerSetting, ConfigError, loadConfig, parse, setting } from '../kit/config.ts';
import { identityTrustSettings, trustIdentity } from '../kit/identity-trust.ts';
import { DEFAULT_ETAG_CACHE_BYTES, ENTRY_OVERHEAD_BYTES } from './platform/etag-cache.ts';
import { parseSignalPrefix } from './signal-addresses.ts';

const REPOHOST = SERVICE_CATALOGUE['repohost-gateway'];
export const REPOHOST_AUDIENCE = tokenAudience('repohost-gateway');

/** Loopback receivers on any port only, unless the installation says otherwise: signals never leave the machine by default. */
export const DEFAULT_SIGNAL_PREFIXES = 'http://127.0.0.1:*,http://localhost:*,http://[::1]:*';
/** The default ports of this app's services (the catalogue's): never a signal's destination. */
const DEFAULT_SIGNAL_REFUSED_PORTS = SERVICE_PORTS.join(',');

/** 4 GiB: far above anything a desktop service should hold, low enough that a typo of a few digits is caught. */
const MAX_ETAG_CACHE_BYTES = 4 * 1024 * 1024 * 1024;

export const repohostSettings = {
  ...commonSettings(REPOHOST, { fallback: '2mb', why: 'commits carry file contents' }),
  ...identityTrustSettings(
    SERVICE_CATALOGUE.identity,
    'Base URL of the identity service whose tokens this service takes (their iss) and which resolves platform credentials.',
  ),
  platformUrl: setting(
    'PLATFORM_URL',
    parse.url(),
    'https://api.github.com',
    'API base URL of the code-hosting platform; https://<host>/api/v3 for GitHub Enterprise Server.',
  ),
  identityServiceToken: setting(
    'IDENTITY_SERVICE_TOKEN',
    z16(),
    undefined,
    `This service\u2019s own token at the identity service: the value registered as ${REPOHOST_AUDIENCE}=<token> in IDENTITY_SERVICE_TOKENS.`,
  ),
  signalUrlPrefixes: setting(
    'SIGNAL_URL_PREFIXES',
    parse.listOf(parseSignalPrefix).refine((list) => list.length > 0, 'name at least one prefix'),
    DEFAULT_SIGNAL_PREFIXES,
    'Comma-separated scheme://host[:port|:*][/path] prefixes a subscription\u2019s signal_url must be under: same scheme, host and port (the scheme\u2019s default when none is written; * for any), path at a segment boundary.',
  ),
  signalRefusedPorts: setting(
    'SIGNAL_REFUSED_PORTS',
    parse.ports(),
    DEFAULT_SIGNAL_REFUSED_PORTS,
    'Comma-separated ports a signal is never sent to, whatever the prefixes allow: this app\u2019s own services (the gateway\u2019s own port is always added).',
  ),
  sweepSeconds: integerSetting(
    'SWEEP_SECONDS',
    { min: 1, max: 3600, fallback: 30 },
    'Seconds between background sweeps of active subscriptions.',
  ),
  credentialHoldSeconds: integerSetting(
    'CREDENTIAL_HOLD_SECONDS',
    { min: 60, max: 86_400, fallback: 3600 },
    'How long a subscription keeps the caller\u2019s platform credential in memory for background sweeps (never on disk).',
  ),
  credentialRecheckMs: integerSetting(
    'CREDENTIAL_RECHECK_MS',
    { min: 0, max: 300_000, fallback: 5000 },
    'A held platform credential is confirmed with the identity service at most this often (and once per sweep) before it is used again; 0: before every use. After a connection is removed or replaced, or the caller\u2019s session credential revoked, the gateway stops using it within this time.',
  ),
  signalRetryBaseMs: integerSetting(
    'SIGNAL_RETRY_BASE_MS',
    { min: 10, max: 3_600_000, fallback: 5000 },
    'First retry delay of a failed signal; each further retry waits four times longer.',
  ),
  signalAttempts: integerSetting(
    'SIGNAL_ATTEMPTS',
    { min: 1, max: 20, fallback: 8 },
    'Delivery attempts of a signal before it is given up as failed.',
  ),
  writeSpacingMs: integerSetting(
    'WRITE_SPACING_MS',
    { min: 0, max: 10_000, fallback: 1000 },
    'Least time between two writes under one credential (GitHub asks for at least one second).',
  ),
  platformTimeoutMs: integerSetting(
    'PLATFORM_TIMEOUT_MS',
    { min: 100, max: 600_000, fallback: 30000 },
    'Longest wait for one platform request (answer and body); past it the caller gets 504 and a background sweep moves on.',
  ),
  etagCacheBytes: integerSetting(
    'ETAG_CACHE_BYTES',
    { min: 0, max: MAX_ETAG_CACHE_BYTES, fallback: DEFAULT_ETAG_CACHE_BYTES },
    `Bytes of platform answers kept for ETag revalidation, all connections together (0 keeps none): each answer's body, headers and a fixed ${ENTRY_OVERHEAD_BYTES} bytes; an answer over an eighth of it is not kept. Keep it above what one sweep reads, or sweeps spend quota.`,
  ),
};

function z16() {
  return parse.text().pipe(parse.text().min(16, 'must be at least 16 characters'));
}

export type RepohostConfig = ReturnType<typeof loadRepohostConfig>;

export function loadRepohostConfig(env: NodeJS.ProcessEnv = process.env) {
  // Replaced, not silently ignored: whoever set it wanted a bound, and an entry count never bounded memory.
  if (env.REPOHOST_ETAG_CACHE_ENTRIES !== undefined) {
    throw new ConfigError(
      'REPOHOST_ETAG_CACHE_ENTRIES is no longer read: the ETag cache is bounded by bytes now, all connections together. ' +
        `Remove it and set REPOHOST_ETAG_CACHE_BYTES instead (default ${DEFAULT_ETAG_CACHE_BYTES}, 32 MiB; about the number of answers you meant times their size, ` +
        `e.g. 5,000 answers of 6 KB is 30000000).`,
    );
  }
  const c = loadConfig(REPOHOST.prefix, repohostSettings, env);
  return {
    ...c,
    identity: trustIdentity(REPOHOST.prefix, c, { identity: SERVICE_CATALOGUE.identity, ...IDENTITY_PLACES }),
  };
}
