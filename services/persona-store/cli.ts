import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { IDENTITY_PLACES, LOCAL_SESSION_FILE, SERVICE_CATALOGUE } from '../../common/services.ts';
import { urlPath } from '../../common/url-path.ts';
import { ConfigError, isLoopbackHost } from '../kit/config.ts';
import { overSocket } from '../kit/identity-channel.ts';
import { loadPersonaConfig, type PersonaConfig } from './config.ts';
import type { PersonaEngine } from './engines/engine.ts';
import { openEngine, postgresOptions } from './engines/open.ts';
import { openPostgresEngine } from './engines/postgres.ts';
import { importExport, readExportFile } from './import.ts';
import { moveIn, readSource, sourceFile } from './move-in.ts';
import { DATABASE_FILE } from './service.ts';

const USAGE = `Usage: npm run -s persona-store -- <command>
  move-in [--from <data folder or file>] [--to <postgres://...>] [--account <id>] [--source-account <id>]
        copy this computer's persona data (the SQLite ${DATABASE_FILE}) into PostgreSQL: every persona, field,
        note and change-log entry, forgotten-but-kept ones included, as they are, in one transaction.
        --from defaults to PERSONA_DATA_DIR (the app's data folder), --to to PERSONA_DATABASE_URL.
        A persona the target already has is never overwritten: the whole move-in is refused and nothing is
        written. Run again after a success, it says everything is already there and changes nothing.
        --account gives the rows to that account on the target (default: the account they belong to here);
        --source-account copies only that account's rows (a file may hold several accounts).
  import <export.json> [--account <id>] [--profile <profile>] [--to <postgres://...>]
        add a persona from an export file (persona-export/1, as the console's Export downloads it), on the
        engine PERSONA_DATABASE_URL or PERSONA_DATA_DIR choose (or --to). Every string is checked for
        credentials as a write would be; an existing profile is never overwritten (use --profile to import
        under another name); all or nothing. --account defaults to the local account (asked of the identity
        service on its socket, PERSONA_IDENTITY_SOCKET, with the app's own session credential); \`npm run identity -- account
        list\` prints each account's id.
Reads the same PERSONA_ variables as the service (PERSONA_DATABASE_TLS, PERSONA_DATABASE_CA_FILE too); with
PERSONA_SHARED_ACCOUNTS, rows go under the shared name the service on PostgreSQL keeps that account under.
Exit code 0 when done (or nothing was left to do), 1 when refused or failed, 2 for a usage error.`;

class Usage extends Error {}

/** A postgres:// URL given on the command line, checked by the same rule as PERSONA_DATABASE_URL. */
function targetConfig(to: string | undefined): PersonaConfig {
  try {
    return loadPersonaConfig(to === undefined ? process.env : { ...process.env, PERSONA_DATABASE_URL: to });
  } catch (err) {
    if (err instanceof ConfigError && to !== undefined && /DATABASE_URL/.test(err.message)) {
      // The setting's reason (never the URL itself) when there is one: the part that does not decode.
      const why = /\(its ([^)]*)\)/.exec(err.message)?.[0] ?? '';
      throw new Usage(
        `--to takes a postgres:// (or postgresql://) URL, such as postgres://user:password@127.0.0.1:5432/personas${why ? ` ${why}` : ''}.`,
      );
    }
    throw err;
  }
}

/** Opens PostgreSQL; what a failure says names the server, never the URL (it may hold a password). */
async function openPostgres(config: PersonaConfig, url: string): Promise<PersonaEngine> {
  try {
    return await openPostgresEngine(postgresOptions(config, url));
  } catch (err) {
    const where = new URL(url);
    throw new Error(
      `cannot use PostgreSQL at ${where.hostname}:${where.port || 5432}${where.pathname}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * The local account: the identity service says whose the app's own session credential is (GET
 * /v1/account), read from identity's data folder beside the persona store's, as the app lays them out.
 */
async function localAccount(config: PersonaConfig): Promise<{ id: string; name: string }> {
  const file = join(dirname(config.dataDir), SERVICE_CATALOGUE.identity.name, LOCAL_SESSION_FILE);
  const why = (reason: string) =>
    new Error(
      `no --account given, and the local account could not be found (${reason}). Pass --account <id>: \`npm run identity -- account list\` prints each account's id.`,
    );
  let credential: string;
  try {
    credential = readFileSync(file, 'utf8').trim();
  } catch {
    throw why(`no session credential at ${file}`);
  }
  // The app's own credential goes only to identity where it proves itself (its socket), never to its port:
  // the socket beside the session file, unless the settings place identity elsewhere.
  const beside =
    config.identitySocket === undefined &&
    config.identityKeysFile === undefined &&
    isLoopbackHost(new URL(config.identityUrl).hostname);
  const identity = beside
    ? overSocket(config.identityUrl, join(dirname(file), IDENTITY_PLACES.socket))
    : config.identity.channel;
  let res;
  try {
    res = await identity.call({
      path: urlPath`/v1/account`,
      headers: { authorization: `Bearer ${credential}` },
      timeoutMs: 10_000,
    });
  } catch {
    throw why(
      `the identity service does not answer on ${identity.where}; start the app, or PERSONA_IDENTITY_SOCKET names another one`,
    );
  }
  if (res.status !== 200) throw why(`the identity service at ${identity.url} answered ${res.status}`);
  return res.body as { id: string; name: string };
}

async function runMoveIn(options: {
  from?: string;
  to?: string;
  account?: string;
  'source-account'?: string;
}): Promise<void> {
  const config = targetConfig(options.to);
  const url = config.databaseUrl;
  if (url === undefined) throw new Usage('move-in needs a target: --to postgres://... or PERSONA_DATABASE_URL.');
  const source = await readSource(sourceFile(options.from ?? config.dataDir));
  const target = await openPostgres(config, url);
  try {
    const people = source.personas.length;
    process.stdout.write(
      `${source.file}: ${people} persona(s), ${source.deletedLogs.length} change-log entr${source.deletedLogs.length === 1 ? 'y' : 'ies'} of deleted personas\n`,
    );
    const report = await moveIn(source, target, {
      account: options.account,
      sourceAccount: options['source-account'],
      limits: {
        maxValueBytes: config.maxValueBytes,
        maxNoteChars: config.maxNoteChars,
        maxKeyLength: config.maxKeyLength,
      },
    });
    for (const p of report.copied) {
      process.stdout.write(
        `copied "${p.profile}" (account ${p.account}): ${p.fields} field(s), ${p.notes} note(s), ${p.events} change-log entr${p.events === 1 ? 'y' : 'ies'}\n`,
      );
    }
    for (const p of report.alreadyThere)
      process.stdout.write(`already there, left as it is: "${p.profile}" (account ${p.account})\n`);
    if (report.deletedLogs > 0)
      process.stdout.write(`copied the change-log entries of ${report.deletedLogs} deleted persona(s)\n`);
    if (report.renumbered.length > 0) {
      process.stdout.write(
        `the target already had rows numbered like these, so ${report.renumbered.join(', ')} got new numbers there (in the same order)\n`,
      );
    }
    if (report.copied.length === 0 && report.deletedLogs === 0)
      process.stdout.write('Everything is already there; nothing was changed.\n');
    else process.stdout.write('Done. Point every copy of the app at this database with PERSONA_DATABASE_URL.\n');
  } finally {
    await target.close();
  }
}

async function runImport(file: string, options: { to?: string; account?: string; profile?: string }): Promise<void> {
  const config = targetConfig(options.to);
  const document = readExportFile(file, config.maxImportBytes);
  let account = options.account;
  if (account === undefined) {
    const local = await localAccount(config);
    account = local.id;
    process.stdout.write(`importing for the local account ${local.id} (${local.name})\n`);
  }
  const target =
    config.databaseUrl === undefined
      ? await openEngine(config, join(config.dataDir, DATABASE_FILE))
      : await openPostgres(config, config.databaseUrl);
  try {
    const report = await importExport(document, target, {
      account,
      profile: options.profile,
      limits: {
        maxValueBytes: config.maxValueBytes,
        maxNoteChars: config.maxNoteChars,
        maxKeyLength: config.maxKeyLength,
      },
    });
    process.stdout.write(
      `imported "${report.profile}" (account ${report.account}) into ${target.name === 'postgres' ? 'PostgreSQL' : join(config.dataDir, DATABASE_FILE)}: `,
    );
    process.stdout.write(`${report.fields} field(s), ${report.notes} note(s)\n`);
    if (report.newNoteIds > 0)
      process.stdout.write(`${report.newNoteIds} note(s) got a new id: theirs was already used in this database\n`);
  } finally {
    await target.close();
  }
}

try {
  const { values, positionals } = (() => {
    try {
      return parseArgs({
        options: {
          from: { type: 'string' },
          to: { type: 'string' },
          account: { type: 'string' },
          'source-account': { type: 'string' },
          profile: { type: 'string' },
          help: { type: 'boolean', short: 'h' },
        },
        allowPositionals: true,
      });
    } catch (err) {
      throw new Usage(err instanceof Error ? err.message : String(err));
    }
  })();
  const [command, ...rest] = positionals;
  if (values.help) process.stdout.write(`${USAGE}\n`);
  else if (command === 'move-in' && rest.length === 0) {
    if (values.profile !== undefined)
      throw new Usage('--profile is for import; move-in copies every profile as it is.');
    await runMoveIn(values);
  } else if (command === 'import' && rest.length === 1) {
    if (values.from !== undefined || values['source-account'] !== undefined)
      throw new Usage('--from and --source-account are for move-in; import takes the export file as its argument.');
    await runImport(rest[0]!, values);
  } else throw new Usage(command === undefined ? '' : `unknown command or arguments: ${positionals.join(' ')}`);
} catch (err) {
  if (err instanceof Usage) {
    process.stderr.write(`${err.message ? `persona-store: ${err.message}\n` : ''}${USAGE}\n`);
    process.exitCode = 2;
  } else {
    // A refusal (MoveInRefused, ImportRefused) or a failure: its message says what to do.
    process.stderr.write(`persona-store: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
