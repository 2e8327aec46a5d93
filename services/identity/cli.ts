import { parseArgs } from 'node:util';
import { calculateJwkThumbprint } from 'jose';
import { MAX_SESSION_SECONDS, SESSION_ID } from './accounts.ts';
import { AUDIENCE_NAME, loadIdentityConfig } from './config.ts';
import { openIdentityStore } from './service.ts';

const USAGE = `Usage: npm run -s identity -- <command>
  account add <name> [--label <text>] [--expires-in <duration>]
                           create an account; prints its owner credential as the only line on stdout
  account list             list accounts (id and name)
  account remove <name>    remove an account: its session credentials are revoked and its platform
                           connections deleted (their encrypted secrets erased from the database)
  session add <name> [--label <text>] [--expires-in <duration>] [--owner | --audience <a,b>]
                           print a new session credential for an existing account (its id goes to stderr):
                           a hub credential that mints tokens for the audiences given (default
                           IDENTITY_HUB_AUDIENCES) and nothing else, or with --owner one that also
                           makes and revokes credentials and manages platform connections
  session list <name>      list an account's session credentials: id, label, created, last used, expires,
                           what it may do
  session revoke <id>      revoke one session credential (any account's) by its id (ses_...)
  session revoke-all <name>
                           revoke every session credential of an account
  keys rotate              make a new signing key; the old one stays published until its tokens expire
  keys list                the published keys: id, SHA-256 thumbprint (RFC 7638; what a service pins in
                           *_IDENTITY_KEY_THUMBPRINTS for an identity elsewhere), signing or retired
A duration is seconds, or a number with s, m, h or d (90d, 12h); 60 s to ten years. Without --expires-in a
credential gets IDENTITY_SESSION_TTL_SECONDS (0, the default: it never expires).
Reads the same IDENTITY_ variables as the service (IDENTITY_DATA_DIR above all).`;

/** "90d", "12h", "30m", "3600s" or "3600" as seconds. */
function parseDuration(text: string): number {
  const m = /^(\d{1,10})([smhd]?)$/.exec(text.trim());
  const seconds = m
    ? Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd']
    : NaN;
  if (!Number.isSafeInteger(seconds) || seconds < 60 || seconds > MAX_SESSION_SECONDS) {
    throw new Error(
      `--expires-in takes a duration from 60 seconds to ten years, such as 3600, 12h or 90d (not "${text}").`,
    );
  }
  return seconds;
}

class Usage extends Error {}

const { values: options, positionals } = (() => {
  try {
    return parseArgs({
      options: {
        label: { type: 'string' },
        'expires-in': { type: 'string' },
        owner: { type: 'boolean' },
        audience: { type: 'string' },
      },
      allowPositionals: true,
    });
  } catch (err) {
    process.stderr.write(`identity: ${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    process.exit(2);
  }
})();
const [group, verb, name] = positionals;

try {
  const config = loadIdentityConfig(process.env);
  const store = openIdentityStore(config.dataDir, config);
  const { accounts } = store;
  const newSession = () => ({
    label: options.label ?? null,
    expiresInSeconds:
      options['expires-in'] !== undefined ? parseDuration(options['expires-in']) : config.sessionTtlSeconds || null,
  });
  const hubAudiences = (): string[] => {
    if (options.audience === undefined) return [...config.hubAudiences];
    const audiences = options.audience
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean);
    if (audiences.length === 0 || !audiences.every((a) => AUDIENCE_NAME.test(a))) {
      throw new Error(
        `--audience takes one or more audiences, comma-separated, such as persona,repohost-api (not "${options.audience}").`,
      );
    }
    return audiences;
  };
  const out = (line: string) => process.stdout.write(`${line}\n`);
  try {
    const command = `${group ?? ''} ${verb ?? ''}`;
    if (command === 'account add' && name) out((await accounts.add(name, newSession())).credential);
    else if (command === 'account list') for (const a of await accounts.list()) out(`${a.id}\t${a.name}`);
    else if (command === 'account remove' && name) {
      const removed = await accounts.remove(name);
      out(
        `removed account ${name}: ${removed.sessions} session credential(s) revoked, ${removed.connections} platform connection(s) deleted ` +
          '(their encrypted secrets erased from the database file and its log).',
      );
      out(
        `Tokens already minted for ${name} stop working on every service within seconds, and the repository-hosting gateway stops using its connections.`,
      );
    } else if (command === 'session add' && name) {
      if (options.owner && options.audience !== undefined)
        throw new Error('--owner credentials mint tokens for any audience; give --owner or --audience, not both.');
      const made = await accounts.addSession(name, {
        ...newSession(),
        ...(options.owner ? { purpose: 'owner' } : { purpose: 'hub', audiences: hubAudiences() }),
      });
      out(made.credential);
      process.stderr.write(`session credential ${made.session} for ${name}\n`);
    } else if (command === 'session list' && name) {
      const now = Date.now();
      for (const s of await accounts.sessionsOf(name)) {
        const expiry =
          s.expires_at === null ? 'never' : Date.parse(s.expires_at) <= now ? `expired ${s.expires_at}` : s.expires_at;
        const may =
          s.purpose === 'owner'
            ? 'owner: manages credentials and connections'
            : `hub: mints tokens for ${(s.audiences ?? []).join(', ')}`;
        out([s.id, s.label ?? '-', s.created_at, s.last_used_at ?? 'never used', expiry, may].join('\t'));
      }
    } else if (command === 'session revoke' && name) {
      if (!SESSION_ID.test(name))
        throw new Error(
          `"${name}" is not a session credential id (ses_ and 24 hexadecimal digits; see "session list <account>").`,
        );
      if (!(await accounts.revokeSession(name)))
        throw new Error(`There is no session credential ${name}; see "session list <account>".`);
      out(`revoked ${name}; tokens minted with it stop working on every service within seconds.`);
    } else if (command === 'session revoke-all' && name) {
      const n = await accounts.revokeAllOf(name);
      out(
        `revoked ${n} session credential(s) of ${name}; tokens minted with them stop working on every service within seconds.`,
      );
    } else if (command === 'keys rotate') {
      await store.keys.prepare();
      process.stderr.write(`new signing key ${await store.keys.rotate()}\n`);
    } else if (command === 'keys list') {
      await store.keys.prepare();
      const active = store.keys.activeKid;
      for (const key of store.keys.publicSet().keys)
        out(
          [key.kid, await calculateJwkThumbprint(key, 'sha256'), key.kid === active ? 'signing' : 'retired'].join('\t'),
        );
    } else throw new Usage();
  } finally {
    await store.database.close();
  }
} catch (err) {
  if (err instanceof Usage) {
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`identity: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
