import { randomInt } from 'node:crypto';

/**
 * Credential-shaped strings in current real formats, built at test time from random characters in
 * the right shape: none of them is a real secret. Each names its provider.
 */
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const HEX = '0123456789abcdef';
const B64URL = ALNUM + '-_';
const B64 = ALNUM + '+/';

function pick(alphabet: string, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[randomInt(alphabet.length)];
  // Random strings of one alphabet sometimes miss a class a detector looks for; make sure of a digit and a letter.
  return s;
}
const alnum = (n: number) => pick(LOWER, 1) + pick(DIGITS, 1) + pick(ALNUM, n - 2);
const b64url = (n: number) => pick(B64URL, n);
const hex = (n: number) => pick(HEX, n);

function jwt(): string {
  const header = Buffer.from(JSON.stringify({ alg: 'RS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify({ sub: alnum(10), iat: 1_700_000_000, scope: 'read write' })).toString('base64url');
  return `${header}.${payload}.${b64url(86)}`;
}

function pem(kind: string): string {
  const lines = Array.from({ length: 6 }, () => pick(B64, 64)).join('\n');
  return `-----BEGIN ${kind}-----\n${lines}\n-----END ${kind}-----`;
}

export interface CorpusEntry {
  provider: string;
  secret: string;
}

export function credentialCorpus(): CorpusEntry[] {
  return [
    { provider: 'GitHub', secret: `ghp_${alnum(36)}` },
    { provider: 'GitHub', secret: `gho_${alnum(36)}` },
    { provider: 'GitHub', secret: `ghs_${alnum(36)}` },
    { provider: 'GitHub', secret: `github_pat_11${pick(UPPER + DIGITS, 20)}_${alnum(59)}` },
    { provider: 'GitLab', secret: `glpat-${b64url(20)}` },
    { provider: 'GitLab', secret: `glrt-${b64url(20)}` },
    { provider: 'AWS', secret: `AKIA${pick(UPPER + DIGITS, 16)}` },
    { provider: 'AWS', secret: `ASIA${pick(UPPER + DIGITS, 16)}` },
    { provider: 'AWS', secret: `aws_secret_access_key = ${pick(B64, 40)}` },
    { provider: 'Slack', secret: `xoxb-${pick(DIGITS, 12)}-${pick(DIGITS, 13)}-${alnum(24)}` },
    { provider: 'Slack', secret: `xoxp-${pick(DIGITS, 12)}-${pick(DIGITS, 12)}-${pick(DIGITS, 13)}-${hex(32)}` },
    { provider: 'Slack', secret: `https://hooks.slack.com/services/T${pick(UPPER + DIGITS, 10)}/B${pick(UPPER + DIGITS, 10)}/${alnum(24)}` },
    { provider: 'Stripe', secret: `sk_live_${alnum(99)}` },
    { provider: 'Stripe', secret: `rk_live_${alnum(99)}` },
    { provider: 'Stripe', secret: `whsec_${alnum(32)}` },
    { provider: 'OpenAI', secret: `sk-proj-${b64url(74)}T3BlbkFJ${b64url(74)}` },
    { provider: 'OpenAI', secret: `sk-svcacct-${b64url(74)}T3BlbkFJ${b64url(74)}` },
    { provider: 'OpenAI', secret: `sk-${alnum(20)}T3BlbkFJ${alnum(20)}` },
    { provider: 'Anthropic', secret: `sk-ant-api03-${b64url(93)}AA` },
    { provider: 'Anthropic', secret: `sk-ant-admin01-${b64url(93)}AA` },
    { provider: 'Google', secret: `AIza${b64url(35)}` },
    { provider: 'Google', secret: `GOCSPX-${b64url(28)}` },
    { provider: 'Google', secret: `ya29.${b64url(120)}` },
    { provider: 'npm', secret: `npm_${alnum(36)}` },
    { provider: 'PyPI', secret: `pypi-AgEIcHlwaS5vcmc${b64url(70)}` },
    { provider: 'SendGrid', secret: `SG.${b64url(22)}.${b64url(43)}` },
    { provider: 'Twilio', secret: `SK${hex(32)}` },
    { provider: 'Hugging Face', secret: `hf_${alnum(34)}` },
    { provider: 'Docker Hub', secret: `dckr_pat_${b64url(27)}` },
    { provider: 'DigitalOcean', secret: `dop_v1_${hex(64)}` },
    { provider: 'Shopify', secret: `shpat_${hex(32)}` },
    { provider: 'Databricks', secret: `dapi${hex(32)}` },
    { provider: 'Groq', secret: `gsk_${alnum(52)}` },
    { provider: 'Replicate', secret: `r8_${alnum(37)}` },
    { provider: 'Linear', secret: `lin_api_${alnum(40)}` },
    { provider: 'Notion', secret: `ntn_${alnum(46)}` },
    { provider: 'Mailgun', secret: `key-${hex(32)}` },
    { provider: 'Mailchimp', secret: `${hex(32)}-us${randomInt(1, 21)}` },
    { provider: 'Telegram', secret: `${randomInt(100_000_000, 999_999_999)}:AA${b64url(33)}` },
    { provider: 'Azure', secret: `DefaultEndpointsProtocol=https;AccountName=store1;AccountKey=${pick(B64, 86)}==;EndpointSuffix=core.windows.net` },
    { provider: 'JWT', secret: jwt() },
    { provider: 'PEM', secret: pem('RSA PRIVATE KEY') },
    { provider: 'PEM', secret: pem('PRIVATE KEY') },
    { provider: 'PEM', secret: pem('OPENSSH PRIVATE KEY') },
    { provider: 'PEM', secret: pem('EC PRIVATE KEY') },
    { provider: 'PostgreSQL', secret: `postgres://app:${alnum(16)}@db.internal:5432/app` },
    { provider: 'MySQL', secret: `mysql://root:${alnum(14)}@10.0.0.5:3306/shop` },
    { provider: 'MongoDB', secret: `mongodb+srv://admin:${alnum(18)}@cluster0.abcde.mongodb.net/test` },
    { provider: 'Redis', secret: `redis://default:${alnum(20)}@cache.example.com:6379` },
    { provider: 'generic', secret: `password = "${alnum(16)}"` },
    // Shapes that only secretlint's recommended rules know (the service's own regexes do not list them).
    { provider: 'Figma', secret: `figd_${b64url(48)}` },
    { provider: 'Grafana', secret: `glsa_${alnum(32)}_${hex(8)}` },
    { provider: 'HashiCorp Vault', secret: `hvs.${b64url(100)}` },
  ];
}
