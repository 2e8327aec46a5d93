/**
 * A supervisor in a process of its own, for tests that kill it: starts the services named in argv[3..]
 * with data in argv[2], then prints one JSON line with every status once they have settled.
 */
import { ServiceSupervisor } from '../../main/supervisor/supervisor.ts';
import type { ServiceName } from '../../common/services.ts';

const [dataDir, ...names] = process.argv.slice(2);
const supervisor = new ServiceSupervisor({
  dataDir: dataDir!,
  services: names as ServiceName[],
  startTimeoutMs: 120_000,
  probeTimeoutMs: 15_000,
});
await supervisor.startAll();
const statuses = await supervisor.waitUntilSettled(undefined, 150_000);
process.stdout.write(`${JSON.stringify(statuses)}\n`);
