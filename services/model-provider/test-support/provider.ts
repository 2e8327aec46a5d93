import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { createLogger } from '../../kit/logger.ts';
import { PROBE_PROMPT } from '../lockdown.ts';
import { startModelProvider } from '../service.ts';
import { standInBinary, type StandInRun } from './stand-in.ts';

export type StartedProvider = Awaited<ReturnType<typeof startProvider>>;

/** A real provider on an ephemeral port with a temp data folder, its CLI the stand-in (or `binary`), its log captured. */
export async function startProvider(options: { env?: Record<string, string>; loads?: string[]; mcp?: string[]; hook?: boolean; binary?: string } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'modelprov-'));
  const standIn = standInBinary(dir, { loads: options.loads, mcp: options.mcp, hook: options.hook });
  const logLines: string[] = [];
  const logger = createLogger('model-provider', 'info', { write: (line: string) => void logLines.push(line) });
  const dataDir = join(dir, 'data');
  const service = await startModelProvider(
    { MODELPROV_PORT: '0', MODELPROV_DATA_DIR: dataDir, MODELPROV_CLI_BINARY: options.binary ?? standIn.binary, ...options.env },
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
    close: () => service.close(),
  };
}

/** Polls until `get` gives something truthy (it may be async). */
export async function waitFor<T>(what: string, get: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
