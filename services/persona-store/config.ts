import { z } from 'zod';
import {
  DEFAULT_FORGET_MODE,
  DEFAULT_GRACE_PERIOD_SECONDS,
  FORGET_MODES,
  MAX_GRACE_PERIOD_SECONDS,
} from '../../common/change-log.ts';
import { IDENTITY_PLACES, SERVICE_CATALOGUE, tokenAudience } from '../../common/services.ts';
import { ConfigError, commonSettings, integerSetting, loadConfig, parse, setting } from '../kit/config.ts';
import { identityTrustSettings, trustIdentity } from '../kit/identity-trust.ts';

export { FORGET_MODES, type ForgetMode } from '../../common/change-log.ts';

const PERSONA = SERVICE_CATALOGUE['persona-store'];

/**
 * The part of a database URL whose percent-escapes do not decode (`%ZZ`, or bytes that are not UTF-8),
 * as PostgreSQL's driver decodes it: the login, the password, the host, the database. Named, never shown:
 * the URL may hold a password.
 */
function undecodablePart(url: string): string | undefined {
  const { username, password, hostname, pathname } = new URL(url);
  const parts: [string, string][] = [
    ['login', username],
    ['password', password],
    ['host', hostname],
    ['database name', pathname],
  ];
  for (const [name, text] of parts) {
    try {
      decodeURIComponent(text);
    } catch {
      return name;
    }
  }
  return undefined;
}
export const PERSONA_AUDIENCE = tokenAudience('persona-store');

export const DATABASE_TLS_MODES = ['off', 'verify', 'require'] as const;

/** One pair of PERSONA_SHARED_ACCOUNTS: an account id (a token's sub) and the name its rows go under. */
const SHARED_ACCOUNT = /^[^=\s,]{1,200}=[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

export const personaSettings = {
  ...commonSettings(PERSONA, { fallback: '256kb' }),
  ...identityTrustSettings(
    SERVICE_CATALOGUE.identity,
    'Base URL of the identity service whose tokens this service takes (their iss).',
  ),
  sessionRecheckMs: integerSetting(
    'SESSION_RECHECK_MS',
    { min: 0, max: 60_000, fallback: 5000 },
    'How often the identity service is asked whether the session credential behind a caller\u2019s token still stands (ms, per session; 0: every request). A revoke reaches this service within this time.',
  ),
  settingsApiBaseUrl: setting(
    'SETTINGS_API_BASE_URL',
    parse.url(),
    undefined,
    'Base URL of the settings service; with PERSONA_SETTINGS_API_TOKEN, each request reads the caller\u2019s persona settings from it.',
  ),
  settingsApiToken: setting(
    'SETTINGS_API_TOKEN',
    parse.text(),
    undefined,
    'Bearer token this service presents to the settings service.',
  ),
  settingsTimeoutMs: integerSetting(
    'SETTINGS_TIMEOUT_MS',
    { min: 50, max: 30_000, fallback: 2000 },
    'How long to wait for the settings service (ms) before refusing with 503.',
  ),
  forgetMode: setting(
    'FORGET_MODE',
    parse.oneOf(FORGET_MODES),
    DEFAULT_FORGET_MODE,
    `What forgetting does when the person chose nothing: ${FORGET_MODES.join(', ')}.`,
  ),
  gracePeriodSeconds: integerSetting(
    'GRACE_PERIOD_SECONDS',
    { min: 1, max: MAX_GRACE_PERIOD_SECONDS, fallback: DEFAULT_GRACE_PERIOD_SECONDS },
    'Grace period before destruction, in seconds (default 7 days).',
  ),
  sweepIntervalSeconds: integerSetting(
    'SWEEP_INTERVAL_SECONDS',
    { min: 1, max: 86_400, fallback: 60 },
    'How often the sweeper destroys entries whose grace period ended (seconds).',
  ),
  keepReplacedValues: setting(
    'KEEP_REPLACED_VALUES',
    parse.boolean(),
    'false',
    'Whether the change log keeps what a change replaced (the person may choose).',
  ),
  pageSize: integerSetting(
    'PAGE_SIZE',
    { min: 1, max: 1000, fallback: 100 },
    'Largest page of a list, export or change log; a person may lower it.',
  ),
  pinCapFields: integerSetting(
    'PIN_CAP_FIELDS',
    { min: 0, max: 1000, fallback: 25 },
    'Most pinned fields per persona; a person may lower it.',
  ),
  pinCapNotes: integerSetting(
    'PIN_CAP_NOTES',
    { min: 0, max: 1000, fallback: 25 },
    'Most pinned notes per persona; a person may lower it.',
  ),
  maxValueBytes: integerSetting(
    'MAX_VALUE_BYTES',
    { min: 16, max: 1_048_576, fallback: 16384 },
    'Largest field value, as compact JSON in UTF-8 bytes.',
  ),
  maxNoteChars: integerSetting(
    'MAX_NOTE_CHARS',
    { min: 16, max: 1_000_000, fallback: 8000 },
    'Longest note content, in characters.',
  ),
  maxKeyLength: integerSetting(
    'MAX_KEY_LENGTH',
    { min: 8, max: 256, fallback: 64 },
    'Longest field key after normalisation, in characters.',
  ),
  verifiedTokensBytes: integerSetting(
    'VERIFIED_TOKENS_BYTES',
    { min: 0, max: 67_108_864, fallback: 1048576 },
    'Most memory (bytes) the tokens remembered as verified may take; the least recently used go first (0 remembers none).',
  ),
  maxImportBytes: integerSetting(
    'MAX_IMPORT_BYTES',
    { min: 1024, max: 1_073_741_824, fallback: 67108864 },
    'Largest export file the import command reads, in bytes (64 MiB); an import holds four to five times the file\u2019s size in memory, up to about eleven times for a file of very many tiny entries.',
  ),
  databaseUrl: setting(
    'DATABASE_URL',
    z
      .string()
      .min(1)
      .refine((v) => /^postgres(ql)?:\/\//.test(v) && URL.canParse(v), {
        message: 'must be a postgres:// (or postgresql://) URL',
      })
      .superRefine((v, ctx) => {
        const part = undecodablePart(v);
        if (part)
          ctx.addIssue({
            code: 'custom',
            message: `its ${part} holds a % that does not start an escape: a % is followed by two hex digits of UTF-8, as in %40 for @; write a % itself as %25`,
          });
      }),
    undefined,
    'PostgreSQL to keep personas in (postgres://user:password@host:port/database), shared by every copy of the app pointed at it; unset, the SQLite file in the data folder.',
  ),
  sharedAccounts: setting(
    'SHARED_ACCOUNTS',
    parse.pairs(
      SHARED_ACCOUNT,
      "must be comma-separated <account id>=<shared name> pairs (the account id is the token's sub; the name 1-100 letters, digits, '.', '_', '@' or '-')",
      'an account id',
    ),
    undefined,
    "With PostgreSQL: accounts of this machine's identity service whose rows are kept under a name shared with the person's other machines, as <account id>=<name> pairs.",
  ),
  databasePoolSize: integerSetting(
    'DATABASE_POOL_SIZE',
    { min: 1, max: 100, fallback: 10 },
    'Most connections this copy opens to PostgreSQL at once.',
  ),
  databaseTls: setting(
    'DATABASE_TLS',
    parse.oneOf(DATABASE_TLS_MODES),
    'off',
    'TLS to PostgreSQL: off, verify (the server certificate is checked against the system CAs or PERSONA_DATABASE_CA_FILE), or require (encrypted, certificate not checked).',
  ),
  databaseCaFile: setting(
    'DATABASE_CA_FILE',
    parse.text(),
    undefined,
    'PEM file of the CA that signed the PostgreSQL server certificate (with PERSONA_DATABASE_TLS=verify).',
  ),
  databaseConnectTimeoutMs: integerSetting(
    'DATABASE_CONNECT_TIMEOUT_MS',
    { min: 100, max: 120_000, fallback: 10000 },
    'How long to wait for a PostgreSQL connection (ms).',
  ),
};

export type PersonaConfig = ReturnType<typeof loadPersonaConfig>;

export function loadPersonaConfig(env: NodeJS.ProcessEnv = process.env) {
  const c = loadConfig(PERSONA.prefix, personaSettings, env);
  if ((c.settingsApiBaseUrl === undefined) !== (c.settingsApiToken === undefined)) {
    throw new ConfigError(
      'Set both PERSONA_SETTINGS_API_BASE_URL and PERSONA_SETTINGS_API_TOKEN to read per-person settings, or neither to use this deployment\u2019s configuration.',
    );
  }
  if (c.databaseUrl === undefined && c.sharedAccounts !== undefined) {
    throw new ConfigError(
      'PERSONA_SHARED_ACCOUNTS applies to PostgreSQL only (a SQLite file is one machine\u2019s); set PERSONA_DATABASE_URL too, or remove it.',
    );
  }
  if (c.databaseUrl === undefined && (env.PERSONA_DATABASE_TLS || c.databaseCaFile !== undefined)) {
    throw new ConfigError(
      'PERSONA_DATABASE_TLS and PERSONA_DATABASE_CA_FILE apply to PostgreSQL only; set PERSONA_DATABASE_URL too, or remove them.',
    );
  }
  if (c.databaseCaFile !== undefined && c.databaseTls !== 'verify') {
    throw new ConfigError(
      'PERSONA_DATABASE_CA_FILE is used only to verify the server; set PERSONA_DATABASE_TLS=verify, or remove it.',
    );
  }
  return {
    ...c,
    identity: trustIdentity(PERSONA.prefix, c, { identity: SERVICE_CATALOGUE.identity, ...IDENTITY_PLACES }),
  };
}
