import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { listenOnLocalSocket, type LocalSocketListener } from '../kit/local-socket.ts';
import { SECRET_PREFIXES } from '../../common/secret-formats.ts';
import { createLogger, type Logger } from '../kit/logger.ts';
import { serve, type RunningService } from '../kit/server.ts';
import { openDatabase } from '../kit/sqlite.ts';
import { Accounts, LOCAL_ACCOUNT } from './accounts.ts';
import { createIdentityApp } from './app.ts';
import { loadIdentityConfig } from './config.ts';
import { Connections } from './connections.ts';
import { PersonSettings } from './person-settings.ts';
import { IDENTITY_PLACES, LOCAL_SESSION_FILE } from '../../common/services.ts';
import { writeOwnerOnly } from '../kit/owner-only-file.ts';
import { SigningKeys } from './keys.ts';
import { identityMigrations, type IdentityDatabase } from './tables.ts';

/** LOCAL_SESSION_FILE: the local account's session credential, for the desktop shell; owner-only, in the data folder; named by the catalogue, as the supervisor reads it. */
export { LOCAL_ACCOUNT, LOCAL_SESSION_FILE };

export function openIdentityStore(
  dataDir: string,
  config: { tokenTtlSeconds: number; keyRotationDays: number; platformUrl: string },
) {
  const database = openDatabase<IdentityDatabase>(join(dataDir, 'identity.db'), identityMigrations);
  // Deleted rows (connection secrets above all) are overwritten with zeros in the file, not only unlinked.
  database.sqlite.pragma('secure_delete = ON');
  const eraseTraces = () => {
    // The write-ahead log still holds the pages as they were; moving them into the file and truncating it drops them.
    if (database.sqlite.open) database.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  };
  const keys = new SigningKeys(
    join(dataDir, 'keys'),
    config.tokenTtlSeconds,
    config.keyRotationDays,
    join(dataDir, IDENTITY_PLACES.keysFile),
  );
  const accounts = new Accounts(database.db, eraseTraces);
  const connections = new Connections(
    database.db,
    join(dataDir, 'keys', 'connections.key'),
    config.platformUrl,
    eraseTraces,
  );
  return { database, keys, accounts, connections, settings: new PersonSettings(database.db) };
}

/** Starts the identity service from its environment; the same call serves tests, headless and the desktop app. */
export async function startIdentity(env: NodeJS.ProcessEnv = process.env, logger?: Logger): Promise<RunningService> {
  const config = loadIdentityConfig(env);
  const log = logger ?? createLogger('identity', config.logLevel, undefined, { secretPrefixes: SECRET_PREFIXES });
  // What the other services trust is in this folder (the public keys, the socket): it is this user's alone.
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  if (process.platform !== 'win32') chmodSync(config.dataDir, 0o700);
  const { database, keys, accounts, connections, settings } = openIdentityStore(config.dataDir, config);
  await keys.prepare();
  const hasLocal = (await accounts.list()).some((a) => a.name === LOCAL_ACCOUNT);
  const sessionFile = join(config.dataDir, LOCAL_SESSION_FILE);
  // A revoked (or missing) local credential is replaced at start, so the desktop app always has one that works.
  const kept = hasLocal && existsSync(sessionFile) ? readFileSync(sessionFile, 'utf8').trim() : '';
  const usable = kept !== '' && (await accounts.accepts(kept));
  if (usable) await accounts.claimForApp(kept);
  else {
    // The desktop app's own credential never expires, whatever IDENTITY_SESSION_TTL_SECONDS says.
    const local = { label: 'desktop app', expiresInSeconds: null };
    const credential = hasLocal
      ? (await accounts.addSession(LOCAL_ACCOUNT, local)).credential
      : (await accounts.add(LOCAL_ACCOUNT, local)).credential;
    writeOwnerOnly(sessionFile, `${credential}\n`);
    log.info(
      hasLocal
        ? 'local account\u2019s session credential replaced (the one in the data folder was revoked or missing)'
        : 'local account ready; its session credential is in the data folder',
    );
  }
  let issuer = config.publicUrl ?? '';
  const app = createIdentityApp({
    logger: log,
    sqlite: database.sqlite,
    issuer: () => issuer,
    keys,
    accounts,
    connections,
    settings,
    services: config.services,
    tokenTtlSeconds: config.tokenTtlSeconds,
    sessionTtlSeconds: config.sessionTtlSeconds,
    hubAudiences: config.hubAudiences,
    bodyLimit: config.bodyLimit,
  });
  const rotation = setInterval(() => {
    keys.prepare().catch((err: unknown) => log.error({ err }, 'key rotation failed'));
  }, 3_600_000);
  rotation.unref();
  let socket: LocalSocketListener | undefined;
  const running = await serve(app, config, log, async () => {
    clearInterval(rotation);
    await socket?.close();
    await database.close();
  });
  issuer ||= running.url;
  // The app's services call identity here for everything secret (services/kit/README.md, "Trusting identity").
  try {
    socket = await listenOnLocalSocket(app, join(config.dataDir, IDENTITY_PLACES.socket));
  } catch (err) {
    await running.close();
    throw err;
  }
  log.info({ socket: socket.path }, 'listening on its socket too');
  return running;
}
