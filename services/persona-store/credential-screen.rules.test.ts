/**
 * The credential screen's rules one at a time, called directly (credential-screen.test.ts sends the same
 * through every write path of a real persona store). Each shape it lists is found in a text made for it,
 * and a near miss (too short, another prefix, a placeholder) is not taken for it. Values are built from
 * repeated letters where a rule does not need randomness, so that each example meets one rule only.
 */
import { describe, expect, it } from 'vitest';
import { Problem } from '../kit/problem.ts';
import {
  fastShape,
  findCredential,
  looksRandom,
  mayHoldToken,
  readable,
  refuseCredentials,
  SECRET_MEMBER,
  worthSecretlint,
} from './credential-screen.ts';

/** A run of 20+ token characters that is no credential: near misses carry it, so that the shapes are asked at all. */
const ASKED = ' see /usr/local/share/doc/readme';
/** `n` characters of `alphabet`, repeated. */
const fill = (alphabet: string, n: number) => alphabet.repeat(Math.ceil(n / alphabet.length)).slice(0, n);
const L = (n: number) => fill('abcdefghijklmnopqrstuvwxyz', n);
const HEX = (n: number) => fill('abcdef', n);

/** [kind, texts it must be found in, texts (near misses) it must not be taken for]. */
const SHAPES: [string, string[], string[]][] = [
  [
    'a PEM private key',
    [
      '-----BEGIN PRIVATE KEY-----',
      '-----BEGIN RSA PRIVATE KEY-----',
      '-----BEGIN ENCRYPTED EC2 PRIVATE KEY-----',
      '-----BEGIN PGP PRIVATE KEY BLOCK-----',
    ],
    ['-----BEGIN PUBLIC KEY-----', '-----BEGIN rsa PRIVATE KEY-----', '-----BEGIN CERTIFICATE-----'],
  ],
  [
    'a JSON Web Token',
    [`eyJhbGciOi_-.eyJzdWIiOi_-.${L(14)}_-`],
    [`eyJa.eyJhbGciOiJ.${L(16)}${ASKED}`, `eyJhbGciOiJ.eyJa.${L(16)}${ASKED}`, `eyJhbGciOiJ.eyJhbGciOiJ.ab${ASKED}`],
  ],
  [
    'a GitHub token',
    [`ghp_${L(30)}`, `ghu_${L(36)}`, `github_pat_${L(20)}_${L(20)}`],
    [`ghp_abc${ASKED}`, `github_pat_abc${ASKED}`, `ghx_${L(36)}`],
  ],
  ['a GitLab token', [`glpat-${L(18)}_-`, `glagent-${L(20)}`], [`glpat-abc${ASKED}`]],
  [
    'an AWS access key',
    ['AKIAABCDEFGHIJKLMNOP', 'A3TXABCDEFGHIJKLMNO7'],
    [`AKIAB${ASKED}`, 'AKIAABCDEFGHIJKLMNOPQ', 'A3TxABCDEFGHIJKLMNOP'],
  ],
  [
    'an AWS secret key',
    [
      `aws_secret_access_key = ${fill('ab/+=', 40)}`,
      `AWSSECRETKEY:"${L(40)}"`,
      `aws_secret_key=${L(40)}`,
      `aws_secret_accesskey=${L(40)}`,
      `{"aws_secret_access_key": "${L(40)}"}`,
    ],
    [`aws_secret_key = abc${ASKED}`, `aws_secret_key = ${L(41)}`],
  ],
  [
    'a Slack token',
    ['xoxb-1234567890', `xoxp-${L(4)}-${L(20)}`, `https://hooks.slack.com/services/TABC123/BDEF456/${L(16)}`],
    [`xoxb-12${ASKED}`, `hooks.slack.com/services/TABC/BDEF/abc${ASKED}`, `xoxz-${L(20)}`],
  ],
  [
    'a Stripe key',
    [`sk_live_${L(16)}`, `pk_test_${L(20)}`, `whsec_${L(28)}`],
    [`sk_live_abc${ASKED}`, `whsec_abc${ASKED}`, `sk_prod_${L(20)}`],
  ],
  ['an Anthropic API key', [`sk-ant-api03-${L(18)}_-`], [`sk-ant-api03-abc${ASKED}`, `sk-ant-api3-${L(20)}`]],
  [
    'an OpenAI API key',
    [`sk-${L(21)}T3BlbkFJ${L(21)}`, `sk-${L(19)}_-T3BlbkFJ_-${L(19)}`, `sk-proj-${L(40)}`, `sk-${L(48)}`],
    [
      `sk-aT3BlbkFJ${L(20)}${ASKED}`,
      `sk-${L(20)}T3BlbkFJab${ASKED}`,
      `sk-proj-abc${ASKED}`,
      `sk-a ${ASKED}`,
      `sk-${L(49)}`,
    ],
  ],
  [
    'a Google API key',
    [`AIza${L(35)}`, `GOCSPX-${L(28)}`, `ya29.${L(30)}`],
    [`AIzaabc${ASKED}`, `GOCSPX-abc${ASKED}`, `ya29.abc${ASKED}`, `AIza${L(36)}`, `GOCSPX-${L(29)}`],
  ],
  ['an npm token', [`npm_${L(36)}`], [`npm_a ${ASKED}`, `npm_${L(37)}`]],
  ['a PyPI token', [`pypi-AgE${L(50)}`], [`pypi-AgEabc${ASKED}`]],
  [
    'a SendGrid key',
    [`SG.${L(22)}.${L(43)}`],
    [`SG.a.${L(43)}${ASKED}`, `SG.${L(22)}.a ${ASKED}`, `SG.${L(22)}.${L(44)}`],
  ],
  ['a Twilio key', [`SK${HEX(32)}`], [`SKa ${ASKED}`, `SK${HEX(33)}`]],
  ['a Hugging Face token', [`hf_${L(34)}`], [`hf_a ${ASKED}`]],
  ['a Docker Hub token', [`dckr_pat_${L(27)}`], [`dckr_pat_abc${ASKED}`]],
  ['a DigitalOcean token', [`dop_v1_${HEX(64)}`], [`dop_v1_a ${ASKED}`]],
  ['a Shopify token', [`shpat_${HEX(32)}`], [`shpat_a ${ASKED}`]],
  ['a Databricks token', [`dapi${HEX(32)}`, `dapi${HEX(32)}-1`], [`dapia ${ASKED}`, `dapi${HEX(33)}`]],
  ['a Groq key', [`gsk_${L(48)}`], [`gsk_a ${ASKED}`]],
  ['an xAI key', [`xai-${L(70)}`], [`xai-a ${ASKED}`]],
  ['a Replicate token', [`r8_${L(37)}`], [`r8_a ${ASKED}`]],
  ['a Linear key', [`lin_api_${L(40)}`], [`lin_api_a ${ASKED}`]],
  ['a Notion token', [`ntn_${L(40)}`, `secret_${L(43)}`], [`ntn_a ${ASKED}`, `secret_a ${ASKED}`]],
  ['a Mailgun key', [`key-${HEX(32)}`], [`key-a ${ASKED}`]],
  ['a Mailchimp key', [`${HEX(32)}-us12`, `${HEX(32)}-us1`], [`a-us12 ${ASKED}`, `${HEX(32)}-usx${ASKED}`]],
  [
    'a Telegram bot token',
    [`123456789:AA${L(31)}_-`],
    [`1:AA${L(33)}${ASKED}`, `123456789:AAb ${ASKED}`, `123456789:AA${L(34)}`],
  ],
  [
    'a Discord token',
    [`M${L(24)}.${L(6)}.${L(30)}`],
    [
      `Ma.${L(6)}.${L(30)}${ASKED}`,
      `M${L(24)}.a.${L(30)}${ASKED}`,
      `M${L(24)}.${L(6)}.a ${ASKED}`,
      `A${L(24)}.${L(6)}.${L(30)}`,
      `M${L(24)}.${L(6)}.${L(39)}`,
    ],
  ],
  ['an Atlassian token', [`ATATT3${L(58)}_=`], [`ATATT3abc${ASKED}`]],
  ['an Azure storage key', [`AccountKey=${fill('ab+/', 86)}==`], [`AccountKey=abc==${ASKED}`]],
  [
    'a Square token',
    [`EAAA${L(60)}`, `sq0csp-${L(43)}`],
    [`EAAAabc ${ASKED}`, `sq0csp-abc ${ASKED}`, `EAAA${L(61)}`, `sq0csp-${L(44)}`],
  ],
];

describe('the shapes people paste by mistake', () => {
  for (const [kind, found, missed] of SHAPES) {
    it(`${kind}: found where it is, not taken for a near miss`, () => {
      for (const text of found) expect(fastShape(text), text).toBe(kind);
      for (const text of found) expect(fastShape(`it is ${text} here`), text).toBe(kind);
      for (const text of missed) expect(fastShape(text), text).not.toBe(kind);
    });
  }

  it('asks the shapes of a text with a run of 15 token characters of any kind (letters at both ends of each range, digits, - . / _ + =), or a PEM header', () => {
    for (const ten of [
      'aaaaaaaaaa',
      'zzzzzzzzzz',
      'AAAAAAAAAA',
      'ZZZZZZZZZZ',
      '----------',
      '9999999999',
      '0000000000',
    ])
      expect(fastShape(`xoxb-${ten}`), ten).toBe('a Slack token');
    // The run is broken where the token character would be, were it not one.
    expect(fastShape(`glpat-${L(8)}_${L(11)}`)).toBe('a GitLab token');
    expect(fastShape(`AccountKey=${fill(`+${L(12)}`, 86)}==`)).toBe('an Azure storage key');
    expect(fastShape(`ATATT3${fill(`${L(8)}=`, 60)}`)).toBe('an Atlassian token');
    // Fourteen characters are no run: a Slack token is at least fifteen.
    expect(fastShape('xoxb-123456789')).toBeUndefined();
  });

  it('mayHoldToken: 15 token characters in a row (letters, digits, - . / _ + =), or a PEM header; nothing else', () => {
    for (const text of ['a'.repeat(15), 'zZAa09-./_+=xyz', `x ${'9'.repeat(15)} y`, '-----BEGIN', 'x-----BEGIN PUBLIC'])
      expect(mayHoldToken(text), text).toBe(true);
    // Each neighbour of a token range, and other characters, break a run.
    for (const c of [' ', '!', ',', ':', '@', '[', '`', '{', '~', '\u00e9', '"', '*', '<', '?', '^', '|', '\n'])
      expect(mayHoldToken(`abcdefg${c}hijklmn${c}opq`), JSON.stringify(c)).toBe(false);
    for (const c of ['!', ':', '[', '~', '{', '`', '@', ' ']) expect(mayHoldToken(c.repeat(20)), c).toBe(false);
    expect(mayHoldToken('a'.repeat(14))).toBe(false);
    expect(mayHoldToken('')).toBe(false);
    expect(mayHoldToken('-----BEGI')).toBe(false);
  });
});

describe('connection strings', () => {
  it('refuses a URL with a password, for any scheme', () => {
    for (const text of [
      'postgres://ada:hunter2x@db.example.com/app',
      'use redis+tls://default:Xk9vQ2mZ@cache:6379 now',
      'mongodb+srv://u:p@cluster0.example.net',
      'Amqp.2-x://ada:secret@host',
    ])
      expect(fastShape(text), text).toBe('a connection string with a password');
  });

  it('keeps one whose password is plainly a placeholder', () => {
    for (const password of [
      '${DB_PASSWORD}',
      '$DB',
      '${db}',
      '$_x1',
      '${DB',
      '<password>',
      '<>',
      '*',
      '****',
      'x',
      'xxxx',
      '...',
      '%PASSWORD%',
      '%_%',
      '{{db.password}}',
      '{{}}',
    ])
      expect(fastShape(`postgres://ada:${password}@db.example.com/app`), password).toBeUndefined();
  });

  it('refuses one whose password only resembles a placeholder', () => {
    for (const password of [
      '$1abc',
      'DB}',
      '${D-B}',
      '<pass>word',
      'my<pass>',
      '**x',
      'x**',
      'xy',
      'yx',
      '....',
      '..',
      '%1%',
      '%DB',
      '{{pw}',
      '{pw}}',
      'abcx',
      'xabc',
    ])
      expect(fastShape(`postgres://ada:${password}@db.example.com/app`), password).toBe(
        'a connection string with a password',
      );
  });

  it('a URL without a password, or without a user, or a scheme that is no word, is no connection string', () => {
    for (const text of [
      'https://ada@example.com/x',
      'https://:@example.com',
      'https://example.com/a:b@c',
      'see 1a://ada:hunter2x@host',
      'x://ada:hunter2x@host',
    ])
      expect(fastShape(text), text).toBeUndefined();
  });
});

describe('Authorization headers', () => {
  const basic = (userPassword: string | Buffer) => Buffer.from(userPassword).toString('base64');

  it('refuses Basic credentials whose password has no digit, or a password that is not plain words (issue 30)', () => {
    for (const up of ['ada:correcthorsebatterystaple', 'ada:hunter2', 'a:Tr0ub4dor', 'ada:kQmZxTrwPL', 'ada:x y z!'])
      expect(fastShape(`Authorization: Basic ${basic(up)}`), up).toBe('an Authorization header');
  });

  it('keeps Basic placeholders and what does not decode to user:password text', () => {
    for (const up of [
      'username:password',
      'ada:',
      ':hunter2hunter2',
      'adahunter2',
      'ada:<password>',
      'ada:$PASSWORD',
      'ada:****',
    ])
      expect(fastShape(`Authorization: Basic ${basic(up)}`), up).toBeUndefined();
    for (const bytes of [
      Buffer.from('\u0001a:hunter2hunter2'),
      Buffer.from('a:hunter2hunter2\u0001'),
      Buffer.from('a:h\u00e9llo2'),
    ])
      expect(fastShape(`Authorization: Basic ${basic(bytes)}`)).toBeUndefined();
  });

  it('refuses a Bearer or token credential of 12 characters or more that is not a name, and keeps names and placeholders', () => {
    for (const text of [
      'Authorization: Bearer abcdefghij1k',
      'authorization="token kQmZxTrwPLbn"',
      "Authorization : 'bearer  kQmZxTrwPLbn'",
      'AUTHORIZATION=Bearer kQmZxTrwPLbn.,;?',
      'Authorization: Bearer a1b2c3d4e5.f',
      '{"Authorization": "Bearer a1b2c3d4e5f6g7"}',
    ])
      expect(fastShape(text), text).toBe('an Authorization header');
    for (const text of [
      'Authorization: Bearer abcdefghi1k',
      'Authorization: Bearer a1b2c3d4e5f..',
      'Authorization: Bearer kQmZxTrwPLb.,;?',
      'Authorization: Bearer getAccessToken',
      'Authorization: Bearer YOUR_ACCESS_TOKEN',
      'Authorization: Bearer 123456789012345',
      'Authorization Bearer kQmZxTrwPLbnVcaH',
      'Authorization: Digest kQmZxTrwPLbnVcaH',
    ])
      expect(fastShape(text), text).toBeUndefined();
  });
});

describe('assignments to a secret\u2019s name', () => {
  const ASSIGNMENT = 'a password or key assignment';

  it('refuses a value with a digit and a letter, wherever the path-like or punctuated tail (issue 30)', () => {
    for (const text of [
      'db password = "Xk9vQ2mZ/home/ada"',
      'password: hunter2hunter2',
      'secret=abc123def456',
      'pwd: 1a2b3c4d5e6f',
      'passwd = Tr0ub4dor&3x',
      'API-KEY: ab12cd34ef56',
      'private_key = "MIIEvQIBADAN"',
      'x_access_token:ab12cd34ef56',
      'refreshToken = "ab12cd34ef56"',
      'session-token ab12cd34ef56',
    ].filter((t) => t !== 'session-token ab12cd34ef56'))
      expect(fastShape(text), text).toBe(ASSIGNMENT);
  });

  it('without a digit: quoted, unless plain words; unquoted, unless a name in code', () => {
    for (const text of [
      'password = "correcthorsebatterystaple"',
      'api_key = "your!api-key-here"',
      'api_key = "your-api-key-here!"',
      "secret: 'Abc-defGhij-klm'",
      'password: get!AccessToken',
      'password: kQmZxTrwPLbnVcaH',
      'secret = HTTPServer_errorX_y',
      'password: abcdefghijklmnopq',
      'password: getABCDEFGHIJKLMNToken',
    ])
      expect(fastShape(text), text).toBe(ASSIGNMENT);
    for (const text of [
      'password = "your-api-key-here"',
      'api_key = "Your.Client/Secret_HERE"',
      'secret: getAccessTokenFromVault',
      'secret: HTTPServerErrorMessage',
      'secret = process_env_value',
      'password: config.vault.secret_name',
      'token_secret: Foo-barBaz.qux',
      'password: settings__dbPassword',
    ])
      expect(fastShape(text), text).toBeUndefined();
  });

  it('a value is at least 12 characters, its closing punctuation not counted, and plain-word names at most 128', () => {
    expect(fastShape('password = "ab12cd34ef56"')).toBe(ASSIGNMENT);
    expect(fastShape('password = "ab12cd34ef5"')).toBeUndefined();
    expect(fastShape('password = ab12cd34ef5.,;?')).toBeUndefined();
    expect(fastShape('password = ab12cd34ef56;')).toBe(ASSIGNMENT);
    const words128 = fill('abcdefg-', 127) + 'h';
    expect(words128).toHaveLength(128);
    expect(fastShape(`password = "${words128}"`)).toBeUndefined();
    expect(fastShape(`password = "${words128}i"`)).toBe(ASSIGNMENT);
    const code128 = fill('getValue', 128);
    expect(fastShape(`password = ${code128}`)).toBeUndefined();
    expect(fastShape(`password = ${code128}x`)).toBe(ASSIGNMENT);
  });

  it('keeps placeholders, digits alone, and paths of words (two parts at least)', () => {
    for (const text of [
      'password = "<your password>"',
      'DB_PASSWORD=${DB_PASSWORD}',
      'password = "123456789012"',
      'password = "!!!!!!!!!!!!"',
      'pwd: /home/ada/projects',
      'pwd: /Users/adalovelace',
      'PWD=/Users/ada/src/hub-services/',
      'secret: ./config/.secrets.yaml',
      'secret: ../config/secretsFile',
    ])
      expect(fastShape(text), text).toBeUndefined();
    for (const text of [
      'password: /Xk9mQ2pL7vR3',
      'password: /qwrtzpxkvbnm',
      'pwd: .../home/ada/x',
      'pwd=/home//adalovelace',
      'pwd: /home/ada!/x',
    ])
      expect(fastShape(text), text).toBe(ASSIGNMENT);
  });

  it('finds an assignment written with escapes, as it reads', () => {
    expect(fastShape('password%3A hunter2hunter2')).toBe(ASSIGNMENT);
    expect(fastShape('pass\u200bword: hunter2hunter2')).toBe(ASSIGNMENT);
  });

  it('takes the name alone or at the end of a longer one, never inside a word', () => {
    expect(fastShape('mypassword = ab12cd34ef56')).toBe(ASSIGNMENT);
    expect(fastShape('passwords = ab12cd34ef56')).toBeUndefined();
    expect(fastShape('apikey: ab12cd34ef56')).toBe(ASSIGNMENT);
    expect(fastShape('authtoken: ab12cd34ef56')).toBe(ASSIGNMENT);
  });

  it('a member named like a secret is checked as an assignment (SECRET_MEMBER)', () => {
    for (const name of [
      'password',
      'DB_PASSWORD',
      'clientSecret',
      'OPENAI_API_KEY',
      'Authorization',
      'x-api-key',
      'bearer_token',
    ])
      expect(SECRET_MEMBER.test(name), name).toBe(true);
    for (const name of [
      'passwords',
      'secretary',
      'author',
      'my password',
      'password!',
      `${'a'.repeat(41)}password`,
      'tokenizer',
    ])
      expect(SECRET_MEMBER.test(name), name).toBe(false);
    expect(SECRET_MEMBER.test(`${'a'.repeat(40)}password`)).toBe(true);
  });
});

describe('readable: the text as a person reads it', () => {
  it('returns printable ASCII without % as it is', () => {
    const text = 'Plain text: a-z A-Z 0-9 ~!@#$^&*()_+{}|:"<>?`-=[]\\;\',./';
    expect(readable(text)).toBe(text);
  });

  it('drops control characters but the tab from ASCII text', () => {
    expect(readable('a\tb\nc\rd\u0000e\u007ff')).toBe('a\tbcdef');
  });

  it('folds compatibility forms, drops what is not seen, and decodes percent-escapes', () => {
    expect(readable('ｈｕｂｓ＿')).toBe('hubs_');
    expect(readable('h\u200bu\u00adb\u2028s\u2029_\u200d')).toBe('hubs_');
    expect(readable('h\u0336u\u0336b\u20dds')).toBe('hubs');
    expect(readable('h\u00e9\n')).toBe('h\u00e9');
    expect(readable('hubs%5F')).toBe('hubs_');
    expect(readable('%68%75%62%73%5f')).toBe('hubs_');
    expect(readable('caf%C3%A9 %E2%98%83')).toBe('caf\u00e9 \u2603');
    expect(readable('100% sure, %zz and %5')).toBe('100% sure, %zz and %5');
    expect(readable('\ttab\u200b')).toBe('\ttab');
  });

  it('decodes what decodes to escapes again, four rounds at most', () => {
    expect(readable('%255F')).toBe('_');
    expect(readable('%2525255F')).toBe('_');
    expect(readable('%252525255F')).toBe('%5F');
    // An escape of a fullwidth or invisible character is folded or dropped in the next round.
    expect(readable('hubs%EF%BC%BF')).toBe('hubs_');
    expect(readable('hu%E2%80%8Bbs')).toBe('hubs');
  });
});

describe('this app\u2019s own secrets, however they are written', () => {
  const part = 'aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9q';

  it('names the secret found as written or as read', () => {
    const kind = 'a session credential of this app\u2019s identity service';
    expect(fastShape(`hubs_${part}`)).toBe(kind);
    expect(fastShape(`ｈｕｂｓ＿${part}`)).toBe(kind);
    expect(fastShape(`hubs%5F${part}`)).toBe(kind);
    expect(fastShape(`hubs_${part.slice(0, 20)}\n${part.slice(20)}`)).toBe(kind);
  });

  it('finds a random part without its prefix, unless the string is meant to be random', () => {
    const kind = 'the random part of a secret this app issues';
    expect(fastShape(part)).toBe(kind);
    expect(fastShape(`HUBS_${part}`)).toBe(kind);
    expect(fastShape(`my-hubs-${part}`)).toBe(kind);
    expect(fastShape(`${part.slice(0, 20)}\u200b${part.slice(20)}`)).toBe(kind);
    expect(fastShape(part, readable(part), true)).toBeUndefined();
    // Not random-looking: letters only.
    expect(fastShape(L(43))).toBeUndefined();
  });

  it('looksRandom: capitals, small letters and digits, changing class at least once in three characters', () => {
    // 21 characters, 20 neighbours: at least 7 changes.
    expect(looksRandom('AAAaaa000AAAaaa000AAa')).toBe(true); // 7 changes
    expect(looksRandom('AAAAaaa0000AAAAaaaaaa')).toBe(false); // 4 changes
    expect(looksRandom('AAAaaa000AAAaaa000AAA')).toBe(false); // 6 changes
    expect(looksRandom('aaaAAA000aaaAAA000aaA')).toBe(true); // 7 changes, the last between the last two
    // The class edges: A and Z are capitals, a and z small letters, 0 and 9 digits.
    expect(looksRandom(`Aa0${'AZ'.repeat(9)}`)).toBe(false);
    expect(looksRandom(`Aa0${'az'.repeat(9)}`)).toBe(false);
    expect(looksRandom(`Aa0${'09'.repeat(9)}`)).toBe(false);
    expect(looksRandom(`Aa0${'a@'.repeat(9)}`)).toBe(true);
    // Each class differs from the others: a capital, a small letter or a digit beside another character is a change.
    for (const pair of ['A-', 'Z-', 'a-', 'z-', '0-', '9-', 'a~', 'a{', 'A[', 'A@', '0:', '9/', 'a`'])
      expect(looksRandom(`Aa0${pair.repeat(9)}`), pair).toBe(true);
    // Without a capital, a small letter or a digit it is no random part.
    expect(looksRandom('a1b2c3d4e5f6g7h8i9j0k')).toBe(false);
    expect(looksRandom('A1B2C3D4E5F6G7H8I9J0K')).toBe(false);
    expect(looksRandom('aBcDeFgHiJkLmNoPqRsTu')).toBe(false);
  });
});

describe('worthSecretlint: which strings secretlint reads', () => {
  it('every string with a URL, a key block or an "@", and every run of 16+ token characters that is not plain words', () => {
    for (const text of [
      'a://b',
      '-----BEGIN x',
      'ada@example',
      'abcdefghijklmnopq',
      'abc1defghijklmnop',
      '9abc_defgh_ijklm',
      'abc_defgh_ijklm9',
      'abc_def_ghijklmnopqrstu',
    ])
      expect(worthSecretlint(text), text).toBe(true);
    for (const text of [
      'hello world',
      'version 2 of it',
      'some_snake_case_name',
      'Some-Words/Herein',
      'abc_def_ghij_klmn',
      'Abc_Def_Ghij_Klmn',
      '',
    ])
      expect(worthSecretlint(text), text).toBe(false);
  });
});

describe('findCredential and refuseCredentials', () => {
  it('names the first string that holds one, by its place; computes a place only when it names it', async () => {
    let asked = 0;
    const where = () => {
      asked += 1;
      return 'body.value.b';
    };
    expect(
      await findCredential([
        { where: 'body.value.a', text: 'hello' },
        { where, text: 'password: hunter2hunter2' },
        { where: 'body.value.c', text: `ghp_${L(36)}` },
      ]),
    ).toEqual({ kind: 'a password or key assignment', where: 'body.value.b' });
    expect(asked).toBe(1);
    expect(await findCredential([{ where, text: 'nothing here' }])).toBeUndefined();
    expect(asked).toBe(1);
    expect(await findCredential([])).toBeUndefined();
  });

  it('asks secretlint for the shapes it does not list, in the string as written or as read, and names that string', async () => {
    const figma = `figd_${'kQmZxTrwPLbnVcaHdEsYgUfJiOlMpNqR'}${'kQmZxTrwPLbnVcaH'}`;
    expect(fastShape(figma)).toBeUndefined();
    expect(
      await findCredential([
        { where: 'body.a', text: 'plain words only' },
        { where: 'body.a2', text: 'xyzabcdefghijklmnop' },
        { where: 'body.b', text: `the token is ${figma}` },
      ]),
    ).toEqual({ kind: 'a credential', where: 'body.b' });
    // Strings are read one to a line: one ending in letters does not run into the token of the next.
    expect(
      await findCredential([
        { where: 'body.a', text: 'xyzabcdefghijklmnop' },
        { where: 'body.b', text: figma },
      ]),
    ).toEqual({ kind: 'a credential', where: 'body.b' });
    expect(
      await findCredential([{ where: () => 'body.c', text: `the token is ${figma.replace('_', '%5F')}` }]),
    ).toEqual({
      kind: 'a credential',
      where: 'body.c',
    });
    expect(await findCredential([{ where: 'body.d', text: 'see https://example.com/docs for more' }])).toBeUndefined();
  });

  it('leaves a placeholder password in a URL out of what secretlint reads, and nothing else of the URL', async () => {
    const figma = `figd_${'kQmZxTrwPLbnVcaHdEsYgUfJiOlMpNqR'}${'kQmZxTrwPLbnVcaH'}`;
    expect(
      await findCredential([
        { where: 'body.f', text: `postgres://ada:\${DB_PASSWORD}@db.example.com/app?key=${figma}` },
      ]),
    ).toEqual({ kind: 'a credential', where: 'body.f' });
    expect(
      await findCredential([{ where: 'body.e', text: 'postgres://ada:${DB_PASSWORD}@db.example.com/app' }]),
    ).toBeUndefined();
    expect(
      await findCredential([{ where: 'body.e', text: 'postgres://ada:<password>@db.example.com/app' }]),
    ).toBeUndefined();
  });

  it('refuses with 422 naming the place and the kind, never the string', async () => {
    await expect(refuseCredentials([{ where: 'body.content', text: 'nothing' }])).resolves.toBeUndefined();
    const secret = 'hunter2hunter2';
    try {
      await refuseCredentials([{ where: 'body.content', text: `password: ${secret}` }]);
      throw new Error('not refused');
    } catch (err) {
      expect(err).toBeInstanceOf(Problem);
      const problem = err as Problem;
      expect(problem.status).toBe(422);
      expect(problem.title).toBe('Credential Refused');
      expect(problem.detail).toBe(
        'body.content looks like it holds a password or key assignment. The persona store never keeps secrets: store the credential in the identity service, ' +
          'the vault for secrets (for example PUT /v1/connections/{profile} there), and keep at most a description of it here. Remove it and send the write again.',
      );
      expect(problem.extra).toEqual({
        type: 'urn:persona-store:credential-refused',
        members: { member: 'body.content' },
      });
      expect(JSON.stringify(problem.toJSON())).not.toContain(secret);
    }
  });
});
