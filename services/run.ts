import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `npm run service -- <name>`: one service in the foreground. */
export const SERVICES = ['identity', 'persona-store', 'repohost-gateway', 'model-provider'] as const;

const name = process.argv[2];
if (!name || !(SERVICES as readonly string[]).includes(name)) {
  process.stderr.write(`Usage: npm run service -- <name>, where name is one of: ${SERVICES.join(', ')}.\n`);
  process.exit(2);
}
const entry = join(dirname(fileURLToPath(import.meta.url)), name, 'main.ts');
if (!existsSync(entry)) {
  process.stderr.write(`The ${name} service is not built yet in this version; the others can be started.\n`);
  process.exit(3);
}
await import(entry);
