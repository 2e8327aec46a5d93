import { SERVICE_CATALOGUE } from '../../common/services.ts';
import { commonSettings, integerSetting, loadConfig, parse, setting } from '../kit/config.ts';
import { MODEL_ALIASES } from './models.ts';
import { STREAM_MODES } from './shapes.ts';

const MODEL_PROVIDER = SERVICE_CATALOGUE['model-provider'];

export const modelProviderSettings = {
  ...commonSettings(MODEL_PROVIDER, { fallback: '4mb' }),
  cliBinary: setting(
    'CLI_BINARY',
    parse.text(),
    undefined,
    'Path of the CLI binary (or a name looked up on PATH); without it PATH is searched, then the usual global install locations.',
  ),
  defaultModel: setting(
    'DEFAULT_MODEL',
    parse.oneOf(MODEL_ALIASES),
    'sonnet',
    `Model alias used when a request names none; one of ${MODEL_ALIASES.join(', ')}.`,
  ),
  timeoutSeconds: integerSetting(
    'TIMEOUT_SECONDS',
    { min: 1, max: 3600, fallback: 300 },
    'Hard limit for one CLI run in seconds; past it the run\u2019s process group is killed.',
  ),
  probeTimeoutSeconds: integerSetting(
    'PROBE_TIMEOUT_SECONDS',
    { min: 1, max: 120, fallback: 120 },
    'Hard limit for the startup lockdown probe in seconds.',
  ),
  maxConcurrent: integerSetting(
    'MAX_CONCURRENT',
    { min: 1, max: 16, fallback: 2 },
    'CLI runs at once; keep it small, parallel runs share one login.',
  ),
  maxQueue: integerSetting(
    'MAX_QUEUE',
    { min: 0, max: 1000, fallback: 16 },
    'Requests that may wait for a free run slot; past it a request is refused with 429.',
  ),
  failureMemorySeconds: integerSetting(
    'FAILURE_MEMORY_SECONDS',
    { min: 0, max: 3600, fallback: 60 },
    'Seconds for which an identical request that just failed with timeout, tool_call_reply, cli_not_found or not_logged_in is answered from that failure without a new run; 0 turns this off.',
  ),
  retryGraceSeconds: integerSetting(
    'RETRY_GRACE_SECONDS',
    { min: 0, max: 120, fallback: 10 },
    'Seconds for which a run whose every client went away goes on (and its answer is kept), so that an identical retry joins it instead of starting another run; 0 stops a run as soon as its last client leaves.',
  ),
  stream: setting(
    'STREAM',
    parse.oneOf(STREAM_MODES),
    'whole',
    'How a streamed completion (stream: true) is sent: whole (the reply at once, when the CLI has finished) or deltas (text as the CLI writes it).',
  ),
  systemPrompt: setting(
    'SYSTEM_PROMPT',
    parse.text(),
    'You are a helpful assistant. You have no tools: answer directly in text.',
    'System prompt used when a request carries no system message (the CLI\u2019s own agent prompt is never used).',
  ),
};

export type ModelProviderConfig = ReturnType<typeof loadModelProviderConfig>;

export function loadModelProviderConfig(env: NodeJS.ProcessEnv = process.env) {
  return loadConfig(MODEL_PROVIDER.prefix, modelProviderSettings, env);
}
