import { lintSource } from '@secretlint/core';
import { secretLintProfiler } from '@secretlint/profiler';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';
import type { SecretLintCoreConfig } from '@secretlint/types';
import { appSecretIn, randomPartsIn } from '../../common/secret-formats.ts';
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
  /** A value meant to be random (an `Idempotency-Key`): a random part there is not taken for one of this app's secrets. */
  random?: true;
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
  {
    name: 'an AWS secret key',
    pattern: /aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])/i,
  },
  {
    name: 'a Slack token',
    pattern: /\bxox[abposre]-[A-Za-z0-9-]{10,}|hooks\.slack\.com\/services\/T[A-Z0-9]+\/B[A-Z0-9]+\/[A-Za-z0-9]{16,}/,
  },
  { name: 'a Stripe key', pattern: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}/ },
  { name: 'an Anthropic API key', pattern: /\bsk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{20,}/ },
  {
    name: 'an OpenAI API key',
    pattern:
      /\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|\bsk-[A-Za-z0-9]{48}\b/,
  },
  {
    name: 'a Google API key',
    pattern:
      /\bAIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])|\bGOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])|\bya29\.[0-9A-Za-z_-]{30,}/,
  },
  { name: 'an npm token', pattern: /\bnpm_[A-Za-z0-9]{36}\b/ },
  { name: 'a PyPI token', pattern: /\bpypi-AgE[A-Za-z0-9_-]{50,}/ },
  { name: 'a SendGrid key', pattern: /\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/ },
  { name: 'a Twilio key', pattern: /\bSK[0-9a-f]{32}\b/ },
  { name: 'a Hugging Face token', pattern: /\bhf_[A-Za-z0-9]{34,}\b/ },
  { name: 'a Docker Hub token', pattern: /\bdckr_pat_[A-Za-z0-9_-]{27,}/ },
  { name: 'a DigitalOcean token', pattern: /\bdo[opr]_v1_[a-f0-9]{64}\b/ },
  { name: 'a Shopify token', pattern: /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b/ },
  // A `-1` suffix (the workspace) needs no pattern of its own: the word boundary before its `-` already ends the token.
  { name: 'a Databricks token', pattern: /\bdapi[a-f0-9]{32}\b/ },
  { name: 'a Groq key', pattern: /\bgsk_[A-Za-z0-9]{48,}\b/ },
  { name: 'an xAI key', pattern: /\bxai-[A-Za-z0-9]{70,}\b/ },
  { name: 'a Replicate token', pattern: /\br8_[A-Za-z0-9]{37}\b/ },
  { name: 'a Linear key', pattern: /\blin_api_[A-Za-z0-9]{40}\b/ },
  { name: 'a Notion token', pattern: /\b(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})\b/ },
  { name: 'a Mailgun key', pattern: /\bkey-[0-9a-f]{32}\b/ },
  { name: 'a Mailchimp key', pattern: /\b[0-9a-f]{32}-us\d{1,2}\b/ },
  { name: 'a Telegram bot token', pattern: /\b\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])/ },
  {
    name: 'a Discord token',
    pattern: /\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])/,
  },
  { name: 'an Atlassian token', pattern: /\bATATT3[A-Za-z0-9_=-]{60,}/ },
  { name: 'an Azure storage key', pattern: /AccountKey=[A-Za-z0-9+/]{86}==/ },
  {
    name: 'a Square token',
    pattern: /\bEAAA[A-Za-z0-9_-]{60}(?![A-Za-z0-9_-])|\bsq0csp-[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/,
  },
];

/** Whether the text holds `length` token characters in a row (A-Z a-z 0-9 _ + / = . -): a loop, several times faster here than a regex. */
function hasTokenRun(text: string, length: number): boolean {
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // a-z, A-Z, then - . / 0-9 (45-57), _ + =
    const token =
      (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 45 && c <= 57) || c === 95 || c === 43 || c === 61;
    run = token ? run + 1 : 0;
    if (run >= length) return true;
  }
  return false;
}

/**
 * Every shape above holds 15 or more token characters in a row (a Slack token, `xoxb-` and ten, is the
 * shortest) or a PEM header, and so does every random part of this app's secrets: a text with neither
 * (most prose) skips them all.
 */
export const mayHoldToken = (text: string) => hasTokenRun(text, 15) || text.includes('-----BEGIN');

const CONNECTION_STRING = /\b([a-z][a-z0-9+.-]{1,24}):\/\/([^\s:/@'"]+):([^\s@/'"]+)@[^\s/'"]+/gi;

/** Names under which a value is a secret: alone, or at the end of a longer name (`DB_PASSWORD`, `clientSecret`, `OPENAI_API_KEY`). */
const SECRET_NAME =
  '(?:password|passwd|pwd|secret|api[_-]?key|private[_-]?key|(?:access|auth|refresh|session|bearer)[_-]?token)';
/** Whether a member name names a secret, so that its string value is checked as an assignment (`{"password": "..."}`, `{"Authorization": "Bearer ..."}`). */
export const SECRET_MEMBER = new RegExp(`^[A-Za-z0-9_-]{0,40}(?:${SECRET_NAME}|authorization)$`, 'i');

/** An Authorization header and its credentials: `Bearer <token>`, `token <token>`, `Basic <base64 of user:password>`. */
const AUTHORIZATION = /\bauthorization["']?\s*[:=]\s*["']?(bearer|token|basic)\s+([A-Za-z0-9._~+/-]+=*)/gi;

// `password = "..."`-style assignments of 12+ characters: the name, `=` or `:`, the opening quote if any, the value.
// The value takes the punctuation generated passwords hold (`. , ; ?` too), but no bracket or colon: a call or a URL ends it.
const ASSIGNMENT = new RegExp(
  `(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{0,40}?${SECRET_NAME}["']?\\s*[:=]\\s*(["']?)([A-Za-z0-9_\\-+/=!@#$%^&*.,;?]{12,})`,
  'gi',
);
/** What an assignment or an Authorization header holds between the name and the value. */
const ASSIGNED = /[:=]/;
/** One word as people write names: lower case, upper case or capitalised, at most 12 letters (`your`, `CLIENT`, `Here`). */
const PLAIN_WORD = /^(?:[a-z]{1,12}|[A-Z]{1,12}|[A-Z][a-z]{1,11})$/;
/** Plain words joined by - _ . / (`your-api-key-here`, `YOUR_CLIENT_SECRET`), at most 128 characters; a part at a time, so no pattern backtracks far. */
const plainName = (value: string) =>
  value.length <= 128 && value.split(/[-_./]/).every((part) => PLAIN_WORD.test(part));
/** The pieces of a name in code: capitals before a capital or the end (an acronym), an optional capital with lower-case letters, anything else. */
const CODE_PIECE = /[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^A-Za-z]+/g;
/** A name in code (at most 128 characters): camelCase, PascalCase or snake_case words of at most 12 letters, acronyms of 2-12 capitals (`getAccessToken`, `HTTPServerError`). */
const codeName = (value: string) =>
  value.length <= 128 &&
  value
    .split(/[-_.]/)
    .every((part) =>
      (part.match(CODE_PIECE) ?? []).every((piece) => /^(?:[A-Z]?[a-z]{1,12}|[A-Z]{2,12})$/.test(piece)),
    );

/**
 * A path of words (`/home/ada/projects`, `./config/secrets.yaml`): where something is, not a secret (the
 * shell's `pwd`, a key's file). Two parts at least, each plain words or a name in code, a dot file's dot
 * allowed, so a password that merely starts with a slash is not one.
 */
function wordPath(value: string): boolean {
  const parts = /^\.{0,2}\/(.+?)\/?$/.exec(value)?.[1]?.split('/');
  return (
    parts !== undefined &&
    parts.length >= 2 &&
    parts.every((part) => {
      const name = part.replace(/^\./, '');
      return name !== '' && (plainName(name) || codeName(name));
    })
  );
}

/**
 * Whether the value assigned to a secret's name is the secret itself rather than a placeholder or a
 * reference to one or a path of words. With a digit: when it has letters too.
 * Without a digit (a random value has no reason to hold one): quoted, it is a literal, so it is the
 * secret unless it is plain words (`"your-api-key-here"`); unquoted, unless it reads as a name in code
 * (`getAccessToken`, `process_env_value`).
 */
function assignedSecret(value: string, quoted: boolean): boolean {
  if (placeholder.test(value) || !/[A-Za-z]/.test(value) || wordPath(value)) return false;
  if (/[0-9]/.test(value)) return true;
  return quoted ? !plainName(value) : !codeName(value);
}

/**
 * Whether an Authorization header's value is a credential rather than a placeholder: a token as an
 * assigned secret is judged (`YOUR_ACCESS_TOKEN` is a name); Basic's user:password, decoded, by its password.
 */
function authorizationCredential(scheme: string, value: string): boolean {
  if (scheme.toLowerCase() !== 'basic') {
    const token = value.replace(/[.,;?]+$/, '');
    return token.length >= 12 && assignedSecret(token, false);
  }
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1 || !/^[\x20-\x7e]+$/.test(decoded)) return false;
  const password = decoded.slice(colon + 1);
  return password.length > 0 && !placeholder.test(password) && (/[0-9]/.test(password) || !plainName(password));
}

/** Printable ASCII without `%`: a person reads exactly these characters, so the text is screened as it is. */
const PLAIN_TEXT = /^[\x20-\x24\x26-\x7e]*$/;
/** ASCII without `%`: only control characters (line breaks among them) can hide anything; NFKC changes no ASCII. */
const ASCII_TEXT = /^[^%\u0080-\uffff]*$/;
/** A control character other than the tab (`\P{Cc}` is any other character). */
const CONTROL = /[^\t\P{Cc}]/gu;
/**
 * What a person does not see, or sees as nothing inside a word: Unicode's default-ignorable characters
 * (zero-width space and joiners, word joiner, BOM, soft hyphen, bidi marks and isolates, variation
 * selectors, tags, Hangul fillers), control characters but the tab (line breaks among them), the line and
 * paragraph separators, and marks that sit on a letter (a strikethrough over each letter reads the same).
 */
const UNSEEN = /[\p{Default_Ignorable_Code_Point}\u2028\u2029\p{Mn}\p{Me}]|[^\t\P{Cc}]/gu;
/** A run of percent-escapes: bytes of UTF-8 text as a URL writes them (`%5F` for `_`, or every character so). */
const PERCENT_ESCAPES = /(?:%[0-9A-Fa-f]{2})+/g;
const utf8 = new TextDecoder('utf-8');
const decodePercent = (text: string) =>
  text.includes('%')
    ? text.replace(PERCENT_ESCAPES, (run) => utf8.decode(Buffer.from(run.replace(/%/g, ''), 'hex')))
    : text;

/**
 * The text as a person would read it: compatibility forms folded (NFKC: fullwidth `ｈｕｂｓ＿` is `hubs_`),
 * what is not seen removed (above; a tab stays, as a visible gap), percent-escapes decoded, again until
 * nothing changes (an escape may decode to a fullwidth or invisible character; at most four rounds).
 * Plain printable ASCII without `%`, nearly every string a store sees, is returned as it is at the cost of
 * one scan.
 */
export function readable(text: string): string {
  if (PLAIN_TEXT.test(text)) return text;
  if (ASCII_TEXT.test(text)) return text.replace(CONTROL, '');
  let seen = text;
  for (let round = 0; round < 4; round++) {
    const next = decodePercent(seen.normalize('NFKC').replace(UNSEEN, ''));
    if (next === seen) break;
    seen = next;
  }
  return seen;
}

/** Upper case, lower case, digit or other: a random text changes class at about two in three characters, a name far less. */
const classOf = (c: number) => (c >= 65 && c <= 90 ? 0 : c >= 97 && c <= 122 ? 1 : c >= 48 && c <= 57 ? 2 : 3);
/**
 * Whether a random part's characters look drawn at random rather than written: capitals, small letters and
 * digits, changing class at least once in three characters. About one random part in 1,400 of 43
 * characters (one in 200 of 32, mostly for want of a digit) does not; its prefixed form is still refused.
 */
export function looksRandom(part: string): boolean {
  if (!/[A-Z]/.test(part) || !/[a-z]/.test(part) || !/[0-9]/.test(part)) return false;
  let changes = 0;
  for (let i = 1; i < part.length; i++) if (classOf(part.charCodeAt(i)) !== classOf(part.charCodeAt(i - 1))) changes++;
  return changes >= 0.35 * (part.length - 1);
}

/** A random part of this app's secrets without its prefix (or behind another one): alone, as long as the format makes it, and looking random. */
function appRandomPartIn(text: string): boolean {
  for (const part of randomPartsIn(text)) if (looksRandom(part)) return true;
  return false;
}

/** The kind of credential `text` holds as written, by the fast checks alone; undefined when none. */
function shapeOf(text: string): string | undefined {
  if (mayHoldToken(text)) for (const shape of SHAPES) if (shape.pattern.test(text)) return shape.name;
  // Each pattern below needs a character most prose lacks: asked first, so that such a text skips it.
  if (text.includes('://')) {
    for (const m of text.matchAll(CONNECTION_STRING)) {
      if (!placeholder.test(m[3]!)) return 'a connection string with a password';
    }
  }
  if (!ASSIGNED.test(text)) return undefined;
  for (const m of text.matchAll(AUTHORIZATION)) {
    if (authorizationCredential(m[1]!, m[2]!)) return 'an Authorization header';
  }
  for (const m of text.matchAll(ASSIGNMENT)) {
    // Punctuation at the end ends the statement or sentence (`secret = config.WEBHOOK_SECRET;`), not the value.
    const value = m[2]!.replace(/[.,;?]+$/, '');
    if (value.length >= 12 && assignedSecret(value, m[1] !== '')) return 'a password or key assignment';
  }
  return undefined;
}

/**
 * The fast check alone (no secretlint), of the text as written and as a person reads it (`readable`):
 * for places that must decide synchronously, like log lines.
 */
export function fastShape(text: string, seen = readable(text), random = false): string | undefined {
  const texts = seen === text ? [text] : [text, seen];
  // This app's own secrets first, in either: a refusal then says which of them it is.
  for (const t of texts) {
    const own = appSecretIn(t);
    if (own) return own.kind;
  }
  if (!random && texts.some((t) => mayHoldToken(t) && appRandomPartIn(t)))
    return 'the random part of a secret this app issues';
  for (const t of texts) {
    const kind = shapeOf(t);
    if (kind) return kind;
  }
  return undefined;
}

/**
 * Every secretlint rule looks for a URL with credentials, a key block, or a long token: a prefix joined
 * to a random body (`figd_...`, `hvs....`, `glsa_..._...`), and a random body has no reason to hold a
 * digit. So secretlint reads a string unless each run of 16+ token characters in it is made of plain
 * words: lower case (a capital may start each), at most 12 letters, joined by -, _ or /. Prose and
 * snake_case names skip it, which keeps writes fast (see the README's figures); a token does not,
 * with or without digits (a random body of 20+ characters is almost never plain words).
 */
const LONG_TOKEN = /[A-Za-z0-9_\-+/=]{16,}/g;
const PLAIN_WORDS = /^[A-Z]?[a-z]{1,12}(?:[-_/][A-Z]?[a-z]{1,12})*$/;
export function worthSecretlint(text: string): boolean {
  if (text.includes('://') || text.includes('-----BEGIN') || text.includes('@')) return true;
  for (const m of text.matchAll(LONG_TOKEN)) if (!PLAIN_WORDS.test(m[0])) return true;
  return false;
}

/**
 * secretlint times every run with performance marks, which Node keeps until cleared, and its profiler
 * keeps every mark, measure and pending measure too, searching its marks once per mark: memory and
 * time that grew with every write this service screened (a run of the credential tests ended in a
 * minutes-long search). Nothing here reads the profile, so its marks are never made.
 */
secretLintProfiler.mark = () => undefined;

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
  // Each string as written and as a person reads it (the same string, nearly always).
  const suspects: { s: WrittenString; texts: string[] }[] = [];
  for (const s of strings) {
    const seen = readable(s.text);
    const kind = fastShape(s.text, seen, s.random);
    if (kind) return { kind, where: whereOf(s) };
    const texts = (seen === s.text ? [s.text] : [s.text, seen]).filter(worthSecretlint);
    if (texts.length > 0) suspects.push({ s, texts });
  }
  const joined = suspects.flatMap(({ texts }) => texts).join('\n');
  if (joined.length === 0 || !(await secretlintFinds(joined))) return undefined;
  // Rare path: find which string it was, so the refusal can name the member.
  for (const { s, texts } of suspects)
    if (await secretlintFinds(texts.join('\n'))) return { kind: 'a credential', where: whereOf(s) };
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
