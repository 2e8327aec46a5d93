import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createLogger } from '../../kit/logger.ts';
import { PROBE_PROMPT } from '../lockdown.ts';
import { startModelProvider } from '../service.ts';
import { standInBinary, type StandInRun } from './stand-in.ts';

export type StartedProvider = Awaited<ReturnType<typeof startProvider>>;

/**
 * A real provider on an ephemeral port with a temp data folder, its CLI the stand-in (or `binary`;
 * null leaves MODELPROV_CLI_BINARY unset), its log captured. Its whole environment is `base` (PATH and
 * HOME of the test process unless given) plus `env`: that is what it looks the binary up in and what
 * its CLI runs inherit, stripped.
 */
export async function startProvider(
  options: {
    env?: Record<string, string>;
    base?: Record<string, string>;
    loads?: string[];
    mcp?: string[];
    hook?: boolean;
    skills?: string[];
    apiKeySource?: string;
    memory?: boolean;
    binary?: string | null;
  } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'modelprov-'));
  const standIn = standInBinary(dir, {
    loads: options.loads,
    mcp: options.mcp,
    hook: options.hook,
    skills: options.skills,
    apiKeySource: options.apiKeySource,
    memory: options.memory,
  });
  const logLines: string[] = [];
  const logger = createLogger('model-provider', 'info', { write: (line: string) => void logLines.push(line) });
  const dataDir = join(dir, 'data');
  const base = options.base ?? { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir() };
  const binary = options.binary === undefined ? standIn.binary : options.binary;
  const service = await startModelProvider(
    {
      ...base,
      MODELPROV_PORT: '0',
      MODELPROV_DATA_DIR: dataDir,
      ...(binary === null ? {} : { MODELPROV_CLI_BINARY: binary }),
      ...options.env,
    },
    logger,
  );
  const client = new OpenAI({ baseURL: `${service.url}/v1`, apiKey: 'not-used', maxRetries: 0 });
  return {
    dir,
    dataDir,
    service,
    client,
    url: service.url,
    log: () => logLines.join(''),
    /** Runs of the stand-in for completions (the probe's run left out). */
    runs: (): StandInRun[] => standIn.runs().filter((r) => r.stdin !== PROBE_PROMPT),
    probeRuns: (): StandInRun[] => standIn.runs().filter((r) => r.stdin === PROBE_PROMPT),
    /** Pids of every completion run started, including one killed before it could record itself (call after the probe has answered). */
    started: (): number[] => {
      const probes = new Set(
        standIn
          .runs()
          .filter((r) => r.stdin === PROBE_PROMPT)
          .map((r) => r.pid),
      );
      return standIn.started().filter((pid) => !probes.has(pid));
    },
    close: () => service.close(),
  };
}
