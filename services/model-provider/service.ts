import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECRET_PREFIXES } from '../../common/secret-formats.ts';
import { PROVIDER_SOCKET } from '../../common/services.ts';
import { listenOnLocalSocket, type LocalSocketListener } from '../kit/local-socket.ts';
import { createLogger, type Logger } from '../kit/logger.ts';
import { ServiceMetrics } from '../kit/metrics.ts';
import { serve, type RunningService } from '../kit/server.ts';
import { createProviderApp } from './app.ts';
import { locateCli } from './cli-binary.ts';
import { CliProcesses } from './cli-process.ts';
import { loadModelProviderConfig } from './config.ts';
import { runCounters } from './completions.ts';
import type { PartialReply } from './partial-reply.ts';
import { FailureMemory, SharedRuns } from './identical-requests.ts';
import { runEnvironment } from './invocation.ts';
import { Lockdown } from './lockdown.ts';
import { RunSlots } from './run-slots.ts';
import type { ChatCompletion } from './shapes.ts';

const VERSION = (
  JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

/** The one fixed, empty working directory every CLI run gets; made afresh at each start. */
export function prepareWorkDir(dataDir: string): string {
  const dir = join(dataDir, 'empty-cwd');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * Starts the chat-model provider from `env`, its whole environment (the program passes process.env);
 * the same call serves tests, headless and the desktop app. `env` is the only environment used: the
 * settings, the binary lookup (PATH, HOME) and, stripped, every CLI run's environment come from it.
 * The lockdown probe starts at once in the background; completions wait for it (503).
 * close() stops accepting, kills every CLI run's process group and waits for them.
 */
export async function startModelProvider(
  env: NodeJS.ProcessEnv,
  logger?: Logger,
): Promise<RunningService & { lockdownProbed(): Promise<void> }> {
  const config = loadModelProviderConfig(env);
  const log = logger ?? createLogger('model-provider', config.logLevel, undefined, { secretPrefixes: SECRET_PREFIXES });
  const workDir = prepareWorkDir(config.dataDir);
  const processes = new CliProcesses({ cwd: workDir, env: runEnvironment(env) });
  const locate = () => locateCli(config.cliBinary, env);
  const lockdown = new Lockdown({
    processes,
    locate,
    model: config.defaultModel,
    systemPrompt: config.systemPrompt,
    timeoutSeconds: config.probeTimeoutSeconds,
    logger: log,
    partialMessages: config.stream === 'deltas',
  });
  const slots = new RunSlots(config.maxConcurrent, config.maxQueue);
  const sharedRuns = new SharedRuns<ChatCompletion, PartialReply>({
    graceMs: config.retryGraceSeconds * 1000,
    onLeftAlone: () =>
      log.info(
        { grace_seconds: config.retryGraceSeconds },
        'every client of a run went away; it goes on for an identical retry to join',
      ),
  });
  const metrics = new ServiceMetrics('model-provider');
  const app = createProviderApp({
    metrics,
    counters: runCounters(metrics),
    processes,
    slots,
    lockdown,
    locate,
    defaultModel: config.defaultModel,
    systemPrompt: config.systemPrompt,
    timeoutSeconds: config.timeoutSeconds,
    logger: log,
    sharedRuns,
    stream: config.stream,
    failures: new FailureMemory({ seconds: config.failureMemorySeconds }),
    version: VERSION,
    bodyLimit: config.bodyLimit,
    startedAt: Math.floor(Date.now() / 1000),
  });
  let stopping = false;
  let socket: LocalSocketListener | undefined;
  const running = await serve(
    app,
    config,
    log,
    async () => {
      await socket?.close(2_000);
      await processes.killAll();
    },
    { drainMs: 2_000 },
  );
  // The console calls here (owner-only), so that its calls count as the app's own, never as a hub's (services/kit/callers.ts).
  try {
    socket = await listenOnLocalSocket(app, join(config.dataDir, PROVIDER_SOCKET));
  } catch (err) {
    await running.close();
    throw err;
  }
  const probe = lockdown.ensureProbed();
  return {
    url: running.url,
    port: running.port,
    lockdownProbed: () => probe,
    async close() {
      if (!stopping) {
        stopping = true;
        // Runs in flight die with the service: kill their groups first so their requests finish at once.
        sharedRuns.close();
        await processes.killAll();
      }
      await running.close();
    },
  };
}
