import { SERVICE_CATALOGUE, TOKEN_AUDIENCES, tokenAudience } from '../../common/services.ts';
import { commonSettings, integerSetting, loadConfig, parse, setting } from '../kit/config.ts';

const IDENTITY = SERVICE_CATALOGUE.identity;
/** The gateway registers its service token under its audience (the supervisor does so for the app's own). */
const GATEWAY_REGISTRATION = tokenAudience('repohost-gateway');
/** What an audience may be: printable text without spaces, at most 200 characters. */
export const AUDIENCE_NAME = /^[\x21-\x7e]{1,200}$/;

export const identitySettings = {
  ...commonSettings(IDENTITY, { fallback: '64kb' }),
  publicUrl: setting(
    'PUBLIC_URL',
    parse.url(),
    undefined,
    'Base URL callers use to reach this service; tokens carry it as iss (default http://<HOST>:<PORT>).',
  ),
  tokenTtlSeconds: integerSetting(
    'TOKEN_TTL_SECONDS',
    { min: 30, max: 3600, fallback: 600 },
    'Lifetime of a minted service token in seconds.',
  ),
  sessionTtlSeconds: setting(
    'SESSION_TTL_SECONDS',
    parse.integer(0, 315_360_000).refine((v) => v === 0 || v >= 60, 'must be 0 (never) or 60 to 315360000 seconds'),
    '0',
    'Default lifetime of a new session credential in seconds when none is asked for (0: never expires); the local account\u2019s own credential never expires.',
  ),
  keyRotationDays: integerSetting(
    'KEY_ROTATION_DAYS',
    { min: 1, max: 365, fallback: 30 },
    'Days a signing key signs before a new one replaces it.',
  ),
  serviceTokens: setting(
    'SERVICE_TOKENS',
    parse.pairs(
      /^[^=\s]+\s*=\s*\S{16,}$/,
      'must be comma-separated name=token pairs with tokens of at least 16 characters',
      'a service',
    ),
    '',
    `Registered services as comma-separated name=token pairs, e.g. ${GATEWAY_REGISTRATION}=<token>; they may resolve platform credentials.`,
  ),
  platformUrl: setting(
    'PLATFORM_URL',
    parse.url(),
    'https://api.github.com',
    'API base URL of the code-hosting platform, used to mint app-installation tokens.',
  ),
  hubAudiences: setting(
    'HUB_AUDIENCES',
    parse
      .list()
      .refine(
        (l) => l.length > 0 && l.every((a) => AUDIENCE_NAME.test(a)),
        'must be one or more audiences (printable text without spaces), comma-separated',
      ),
    TOKEN_AUDIENCES.join(','),
    'Audiences a hub credential made over the API mints tokens for when it names none (comma-separated).',
  ),
};

export type IdentityConfig = ReturnType<typeof loadIdentityConfig>;

export function loadIdentityConfig(env: NodeJS.ProcessEnv = process.env) {
  const { serviceTokens: services, ...c } = loadConfig(IDENTITY.prefix, identitySettings, env);
  return { ...c, services };
}
