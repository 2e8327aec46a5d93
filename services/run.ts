import { isServiceName, SERVICE_NAMES } from '../common/services.ts';

/** `npm run service -- <name>`: one service in the foreground. */
const name = process.argv[2];
if (!isServiceName(name)) {
  process.stderr.write(`Usage: npm run service -- <name>, where name is one of: ${SERVICE_NAMES.join(', ')}.\n`);
  process.exit(2);
}
await import(`./${name}/main.ts`);
