import { loadIdentityConfig } from './config.ts';
import { openIdentityStore } from './service.ts';

const USAGE = `Usage: npm run identity -- <command>
  account add <name>     create an account; prints its session credential as the only line on stdout
  account list           list accounts (id and name)
  session add <name>     print a new session credential for an existing account
  keys rotate            make a new signing key; the old one stays published until its tokens expire
Reads the same IDENTITY_ variables as the service (IDENTITY_DATA_DIR above all).`;

const [group, verb, name] = process.argv.slice(2);
try {
  const config = loadIdentityConfig(process.env);
  const store = openIdentityStore(config.dataDir, config);
  try {
    if (group === 'account' && verb === 'add' && name) process.stdout.write(`${(await store.accounts.add(name)).credential}\n`);
    else if (group === 'account' && verb === 'list') for (const a of await store.accounts.list()) process.stdout.write(`${a.id}\t${a.name}\n`);
    else if (group === 'session' && verb === 'add' && name) process.stdout.write(`${await store.accounts.addSession(name)}\n`);
    else if (group === 'keys' && verb === 'rotate') {
      await store.keys.prepare();
      process.stderr.write(`new signing key ${await store.keys.rotate()}\n`);
    } else {
      process.stderr.write(`${USAGE}\n`);
      process.exitCode = 2;
    }
  } finally {
    await store.database.close();
  }
} catch (err) {
  process.stderr.write(`identity: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
