/**
 * Credential-shaped strings in current real formats, built at test time from random characters in
 * the right shape: none of them is a real secret. Each names its provider. Draws come from the
 * caller's seeded generator (`seededRandom()` of test/support/seed.ts), so a failing draw replays.
 *
 * Variants: `mixed` draws the random parts from the format's whole alphabet (with at least one digit
 * and one letter where the alphabet has both); `digit-free` and `letter-only` draw them without
 * digits / with letters only (hex: a-f). A random part has no reason to hold a digit, and a detector
 * that waits for one misses such a token now and then. Formats whose fixed or required parts hold
 * digits (Slack's numeric ids, `sk-ant-api03`, `ya29.`, `r8_`, a JWT's header, Notion's 11 digits,
 * Telegram's bot id, a Mailchimp data centre) are `mixed` only.
 */
export type Random = (n: number) => number;
export type Variant = 'mixed' | 'digit-free' | 'letter-only';
export const VARIANTS: Variant[] = ['mixed', 'digit-free', 'letter-only'];

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const HEX = '0123456789abcdef';
const B64URL = ALNUM + '-_';
const B64 = ALNUM + '+/';

export interface CorpusEntry {
  provider: string;
  secret: string;
  variant: Variant;
}

/** Every credential shape, drawn once with `random`; for `digit-free` and `letter-only`, the shapes whose format allows it. */
export function credentialCorpus(random: Random, variant: Variant = 'mixed'): CorpusEntry[] {
  const pick = (alphabet: string, n: number) => {
    if (variant === 'digit-free') alphabet = alphabet.replace(/[0-9]/g, '');
    if (variant === 'letter-only') alphabet = alphabet.replace(/[^A-Za-z]/g, '');
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[random(alphabet.length)];
    return s;
  };
  // Mixed draws make sure of a lower-case letter and a digit up front, as most real tokens have both.
  const alnum = (n: number) =>
    variant === 'mixed' ? pick(LOWER, 1) + pick(DIGITS, 1) + pick(ALNUM, n - 2) : pick(ALNUM, n);
  const b64url = (n: number) => pick(B64URL, n);
  const hex = (n: number) => pick(HEX, n);
  const digits = (n: number) => pick(DIGITS, n);

  const pem = (kind: string) => {
    const lines = Array.from({ length: 6 }, () => pick(B64, 64)).join('\n');
    return `-----BEGIN ${kind}-----\n${lines}\n-----END ${kind}-----`;
  };
  const jwt = () => {
    const header = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url');
    const payload = Buffer.from(JSON.stringify({ sub: alnum(10), iat: 1_700_000_000, scope: 'read write' })).toString(
      'base64url',
    );
    return `${header}.${payload}.${b64url(86)}`;
  };

  // [provider, draw, the format needs digits]
  const shapes: [string, () => string, boolean?][] = [
    ['GitHub', () => `ghp_${alnum(36)}`],
    ['GitHub', () => `gho_${alnum(36)}`],
    ['GitHub', () => `ghs_${alnum(36)}`],
    ['GitHub', () => `github_pat_11${pick(UPPER + DIGITS, 20)}_${alnum(59)}`, true],
    ['GitLab', () => `glpat-${b64url(20)}`],
    ['GitLab', () => `glrt-${b64url(20)}`],
    ['AWS', () => `AKIA${pick(UPPER + DIGITS, 16)}`],
    ['AWS', () => `ASIA${pick(UPPER + DIGITS, 16)}`],
    ['AWS', () => `aws_secret_access_key = ${pick(B64, 40)}`],
    ['Slack', () => `xoxb-${digits(12)}-${digits(13)}-${alnum(24)}`, true],
    ['Slack', () => `xoxp-${digits(12)}-${digits(12)}-${digits(13)}-${hex(32)}`, true],
    [
      'Slack',
      () => `https://hooks.slack.com/services/T${pick(UPPER + DIGITS, 10)}/B${pick(UPPER + DIGITS, 10)}/${alnum(24)}`,
    ],
    ['Stripe', () => `sk_live_${alnum(99)}`],
    ['Stripe', () => `rk_live_${alnum(99)}`],
    ['Stripe', () => `whsec_${alnum(32)}`],
    ['OpenAI', () => `sk-proj-${b64url(74)}T3BlbkFJ${b64url(74)}`, true],
    ['OpenAI', () => `sk-svcacct-${b64url(74)}T3BlbkFJ${b64url(74)}`, true],
    ['OpenAI', () => `sk-${alnum(20)}T3BlbkFJ${alnum(20)}`, true],
    ['Anthropic', () => `sk-ant-api03-${b64url(93)}AA`, true],
    ['Anthropic', () => `sk-ant-admin01-${b64url(93)}AA`, true],
    ['Google', () => `AIza${b64url(35)}`],
    ['Google', () => `GOCSPX-${b64url(28)}`],
    ['Google', () => `ya29.${b64url(120)}`, true],
    ['npm', () => `npm_${alnum(36)}`],
    ['PyPI', () => `pypi-AgEIcHlwaS5vcmc${b64url(70)}`, true],
    ['SendGrid', () => `SG.${b64url(22)}.${b64url(43)}`],
    ['Twilio', () => `SK${hex(32)}`],
    ['Hugging Face', () => `hf_${alnum(34)}`],
    ['Docker Hub', () => `dckr_pat_${b64url(27)}`],
    ['DigitalOcean', () => `dop_v1_${hex(64)}`, true],
    ['Shopify', () => `shpat_${hex(32)}`],
    ['Databricks', () => `dapi${hex(32)}`],
    ['Groq', () => `gsk_${alnum(52)}`],
    ['Replicate', () => `r8_${alnum(37)}`, true],
    ['Linear', () => `lin_api_${alnum(40)}`],
    ['Notion', () => `ntn_${digits(11)}${alnum(35)}`, true],
    ['Mailgun', () => `key-${hex(32)}`],
    ['Mailchimp', () => `${hex(32)}-us${1 + random(20)}`, true],
    ['Telegram', () => `${100_000_000 + random(900_000_000)}:AA${b64url(33)}`, true],
    [
      'Azure',
      () =>
        `DefaultEndpointsProtocol=https;AccountName=store1;AccountKey=${pick(B64, 86)}==;EndpointSuffix=core.windows.net`,
    ],
    ['JWT', jwt, true],
    ['PEM', () => pem('RSA PRIVATE KEY')],
    ['PEM', () => pem('PRIVATE KEY')],
    ['PEM', () => pem('OPENSSH PRIVATE KEY')],
    ['PEM', () => pem('EC PRIVATE KEY')],
    ['PostgreSQL', () => `postgres://app:${alnum(16)}@db.internal:5432/app`],
    ['MySQL', () => `mysql://root:${alnum(14)}@10.0.0.5:3306/shop`],
    ['MongoDB', () => `mongodb+srv://admin:${alnum(18)}@cluster0.abcde.mongodb.net/test`],
    ['Redis', () => `redis://default:${alnum(20)}@cache.example.com:6379`],
    ['generic', () => `password = "${alnum(16)}"`],
    ['generic', () => `{"client_secret": "${alnum(24)}"}`],
    // Shapes that only secretlint's recommended rules know (the service's own regexes do not list them).
    ['Figma', () => `figd_${b64url(48)}`],
    ['Grafana', () => `glsa_${alnum(32)}_${hex(8)}`],
    ['Grafana', () => `glc_eyJ${pick(B64, 60)}`],
    ['HashiCorp Vault', () => `hvs.${b64url(100)}`],
    ['Vercel', () => `vcp_${alnum(56)}`],
  ];
  return shapes
    .filter(([, , needsDigits]) => variant === 'mixed' || !needsDigits)
    .map(([provider, draw]) => ({ provider, secret: draw(), variant }));
}

/** Providers only secretlint's rules know: the service's own shapes must not find them (the test of the detector's second stage). */
export const SECRETLINT_ONLY = ['Figma', 'Grafana', 'HashiCorp Vault', 'Vercel'];
