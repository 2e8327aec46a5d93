/**
 * The console's test stack: the REAL supervisor running the four real services as child processes on
 * free loopback ports in a temp data folder, the provider's CLI being the provider's scripted stand-in
 * (signed in, locked down) and the gateway's platform the GitHub double.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { standInBinary } from '../../services/model-provider/test-support/stand-in.ts';
import { ServiceSupervisor } from '../../main/supervisor/supervisor.ts';
import type { ServiceStatus } from '../../main/supervisor/types.ts';
import { startGitHubDouble, type GitHubDouble } from '../github-double/double.ts';
import { tempDir } from './identity.ts';
import { freePort } from './process.ts';

export interface ConsoleStack {
  supervisor: ServiceSupervisor;
  dataDir: string;
  platform: GitHubDouble;
  /** The environment the services were started with (ports, CLI, platform URL). */
  env: Record<string, string>;
  settled: ServiceStatus[];
  close(): Promise<void>;
}

/** The variables that place the four services on free ports with test-friendly settings. */
export async function stackEnv(dir: string, platformUrl: string): Promise<Record<string, string>> {
  const standIn = standInBinary(join(dir, 'cli'));
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    IDENTITY_PORT: String(await freePort()),
    PERSONA_PORT: String(await freePort()),
    REPOHOST_PORT: String(await freePort()),
    MODELPROV_PORT: String(await freePort()),
    MODELPROV_CLI_BINARY: standIn.binary,
    REPOHOST_PLATFORM_URL: platformUrl,
    IDENTITY_PLATFORM_URL: platformUrl,
  };
}

export async function startConsoleStack(): Promise<ConsoleStack> {
  const dir = tempDir('console-stack');
  const platform = await startGitHubDouble();
  const env = await stackEnv(dir, platform.url);
  const dataDir = join(dir, 'data');
  const supervisor = new ServiceSupervisor({ dataDir, env });
  await supervisor.startAll();
  const settled = await supervisor.waitUntilSettled(undefined, 90_000);
  return {
    supervisor,
    dataDir,
    platform,
    env,
    settled,
    async close() {
      await supervisor.close();
      await platform.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
