import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';
import type { SecretLintCoreConfig } from '@secretlint/types';
import { Problem } from '../kit/problem.ts';

/**
 * Credential refusal: every string of every write is checked, first against the shapes people paste
 * by mistake (fast regexes, below), then with secretlint's recommended rules over all strings at once.
 * The HTTP edge (app.ts) runs it once per write, over the whole request, before any other validation.
 * No setting turns this off.
 */

/**
 * One string of a write and where it sits, e.g. `body.value.servers[0].url`; the location never holds
 * the string. A location built from member names is computed only when a refusal names it.
 */
export interface WrittenString {
  where: string | (() => string);
  text: string;
}

const whereOf = (s: WrittenString) => (typeof s.where === 'string' ? s.where : s.where());

interface Shape {
  name: string;
  pattern: RegExp;
}

// A password in a URL is refused unless it is plainly a placeholder (${DB_PASSWORD}, <password>, ****).
const placeholder = /^(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|x+|\.\.\.|%[A-Za-z_]+%|\{\{[^}]*\}\})$/;

const SHAPES: Shape[] = [
  { name: 'a PEM private key', pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/ },
  { name: 'a JSON Web Token', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/ },
  { name: 'a GitHub token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/ },
  { name: 'a GitLab token', pattern: /\bgl(?:pat|dt|rt|ptt|ft|oas|cbt|agent)-[A-Za-z0-9_-]{20,}/ },
  { name: 'an AWS access key', pattern: /\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b/ },
  { name: 'an AWS secret key', pattern: /aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])/i },
  { name: 'a Slack token', pattern: /\bxox[abposre]-[A-Za-z0-9-]{10,}|hooks\.slack\.com\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]{16,}/ },
  { name: 'a Stripe key', pattern: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}/ },
  { name: 'an Anthropic API key', pattern: /\bsk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{20,}/ },
  { name: 'an OpenAI API key', pattern: /\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|\bsk-[A-Za-z0-9]{48}\b/ },
  { name: 'a Google API key', pattern: /\bAIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])|\bGOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])|\bya29\.[0-9A-Za-z_-]{30,}/ },
  { name: 'an npm token', pattern: /\bnpm_[A-Za-z0-9]{36}\b/ },
  { name: 'a PyPI token', pattern: /\bpypi-AgE[A-Za-z0-9_-]{50,}/ },
  { name: 'a SendGrid key', pattern: /\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/ },
  { name: 'a Twilio key', pattern: /\bSK[0-9a-f]{32}\b/ },
  { name: 'a Hugging Face token', pattern: /\bhf_[A-Za-z0-9]{34,}\b/ },
  { name: 'a Docker Hub token', pattern: /\bdckr_pat_[A-Za-z0-9_-]{27,}/ },
  { name: 'a DigitalOcean token', pattern: /\bdo[opr]_v1_[a-f0-9]{64}\b/ },
  { name: 'a Shopify token', pattern: /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b/ },
  { name: 'a Databricks token', pattern: /\bdapi[a-f0-9]{32}(?:-\d)?\b/ },
  { name: 'a Groq key', pattern: /\bgsk_[A-Za-z0-9]{48,}\b/ },
  { name: 'an xAI key', pattern: /\bxai-[A-Za-z0-9]{70,}\b/ },
  { name: 'a Replicate token', pattern: /\br8_[A-Za-z0-9]{37}\b/ },
  { name: 'a Linear key', pattern: /\blin_api_[A-Za-z0-9]{40}\b/ },
  { name: 'a Notion token', pattern: /\b(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})\b/ },
  { name: 'a Mailgun key', pattern: /\bkey-[0-9a-f]{32}\b/ },
  { name: 'a Mailchimp key', pattern: /\b[0-9a-f]{32}-us\d{1,2}\b/ },
  { name: 'a Telegram bot token', pattern: /\b\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])/ },
  { name: 'a Discord token', pattern: /\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])/ },
  { name: 'an Atlassian token', pattern: /\bATATT3[A-Za-z0-9_=-]{60,}/ },
  { name: 'an Azure storage key', pattern: /AccountKey=[A-Za-z0-9+/]{86}==/ },
  { name: 'a Square token', pattern: /\bEAAA[A-Za-z0-9_-]{60}(?![A-Za-z0-9_-])|\bsq0csp-[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/ },
];

const CONNECTION_STRING = /\b([a-z][a-z0-9+.-]{1,24}):\/\/([^\s:/@'"]+):([^\s@/'"]+)@[^\s/'"]+/gi;

// `password = "..."`-style assignments of a random-looking value: letters and digits mixed, 12+ chars.
const ASSIGNMENT = /\b(?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?token|auth[_-]?token)["']?\s*[:=]\s*["']?([A-Za-z0-9_\-+/=!@#$%^&*]{12,})/gi;

/** The fast check alone (no secretlint): for places that must decide synchronously, like log lines. */
export function fastShape(text: string): string | undefined {
  for (const shape of SHAPES) if (shape.pattern.test(text)) return shape.name;
  for (const m of text.matchAll(CONNECTION_STRING)) {
    if (!placeholder.test(m[3]!)) return 'a connection string with a password';
  }
  for (const m of text.matchAll(ASSIGNMENT)) {
    const v = m[1]!;
    if (/[0-9]/.test(v) && /[A-Za-z]/.test(v) && !placeholder.test(v) && !/^(?:[a-z]+_)+[a-z]+$/i.test(v)) return 'a password or key assignment';
  }
  return undefined;
}

/**
 * Every secretlint rule looks for a long random-looking token, a URL with credentials or a key block;
 * text with none of those (most prose) skips it, which keeps writes fast (see the README's figures).
 */
const LONG_TOKEN = /[A-Za-z0-9_\-+/=]{16,}/g;
export function worthSecretlint(text: string): boolean {
  if (text.includes('://') || text.includes('-----BEGIN') || text.includes('@')) return true;
  for (const m of text.matchAll(LONG_TOKEN)) if (/[0-9]/.test(m[0]) && /[A-Za-z]/.test(m[0])) return true;
  return false;
}

const secretlintConfig: SecretLintCoreConfig = {
  rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }],
};

/**
 * A URL password that fastShape judged a plain placeholder (`<password>`, `${DB_PASSWORD}`) is left
 * out of what secretlint reads: its connection-string rule would refuse the placeholder itself.
 */
function withoutPlaceholderPasswords(text: string): string {
  return text.replace(CONNECTION_STRING, (url, _scheme: string, user: string, password: string) =>
    placeholder.test(password) ? url.replace(`${user}:${password}@`, `${user}@`) : url,
  );
}

async function secretlintFinds(text: string): Promise<boolean> {
  const result = await lintSource({
    source: { filePath: '/write.txt', content: withoutPlaceholderPasswords(text), contentType: 'text' },
    options: { config: secretlintConfig, maskSecrets: true },
  });
  return result.messages.length > 0;
}

/** The first credential-shaped string of a write, as {kind, where}; undefined when the write is clean. */
export async function findCredential(strings: WrittenString[]): Promise<{ kind: string; where: string } | undefined> {
  for (const s of strings) {
    const kind = fastShape(s.text);
    if (kind) return { kind, where: whereOf(s) };
  }
  const suspects = strings.filter((s) => worthSecretlint(s.text));
  const joined = suspects.map((s) => s.text).join('\n');
  if (joined.length === 0 || !(await secretlintFinds(joined))) return undefined;
  // Rare path: find which string it was, so the refusal can name the member.
  for (const s of suspects) if (await secretlintFinds(s.text)) return { kind: 'a credential', where: whereOf(s) };
  return { kind: 'a credential', where: 'body' };
}

/** Throws the refusal (422) when any string of the write looks like a credential. Never echoes the string. */
export async function refuseCredentials(strings: WrittenString[]): Promise<void> {
  const found = await findCredential(strings);
  if (!found) return;
  throw new Problem(
    422,
    'Credential Refused',
    `${found.where} looks like it holds ${found.kind}. The persona store never keeps secrets: store the credential in the identity service, ` +
      'the vault for secrets (for example PUT /v1/connections/{profile} there), and keep at most a description of it here. Remove it and send the write again.',
    { type: 'urn:persona-store:credential-refused', members: { member: found.where } },
  );
}

/** A member name as part of a location, unless it could itself be the secret. */
const memberInLocation = (k: string) => (k.length <= 32 && /^[\w-]+$/.test(k) && !fastShape(k) && !worthSecretlint(k) ? k : '(member)');

/** Every string inside a JSON value (member names too), each with its location. */
export function stringsOf(value: unknown, where: string, out: WrittenString[] = []): WrittenString[] {
  const walk = (v: unknown, at: () => string): void => {
    if (typeof v === 'string') out.push({ where: at, text: v });
    else if (Array.isArray(v)) v.forEach((item, i) => walk(item, () => `${at()}[${i}]`));
    else if (v !== null && typeof v === 'object') {
      for (const [k, inner] of Object.entries(v)) {
        out.push({ where: () => `${at()} (a member name)`, text: k });
        walk(inner, () => `${at()}.${memberInLocation(k)}`);
      }
    }
  };
  walk(value, () => where);
  return out;
}
