import { z } from 'zod';
import { MODEL_ALIASES } from './models.ts';

/** The zod schemas of the provider's answers that other programs read (the console): one per shape. */

const Names = z.array(z.string());

export const CliCheck = z.union([
  z.object({ ok: z.literal(true), path: z.string(), source: z.enum(['setting', 'PATH', 'install location']) }),
  z.object({ ok: z.literal(false), path: z.null(), detail: z.string() }),
]);

export const LockdownCheck = z.object({
  ok: z.boolean(),
  state: z.enum(['pending', 'ok', 'not_ok', 'probe_failed', 'no_cli']),
  /** What the CLI loaded at the probe: each list empty when locked down. */
  tools: Names,
  mcp_servers: Names,
  hooks: Names,
  probed_at: z.string().nullable(),
  detail: z.string(),
});

export const LoginCheck = z.object({
  ok: z.boolean(),
  state: z.enum(['signed_in', 'not_signed_in', 'unknown']),
  detail: z.string().optional(),
});

/** `GET /ready`: 200 with `ready: true` only when a completion would work right now, else 503 with the same body. */
export const Readiness = z.object({
  status: z.enum(['ready', 'not_ready']),
  ready: z.boolean(),
  checks: z.object({ cli: CliCheck, lockdown: LockdownCheck, login: LoginCheck }),
  runs: z.object({ running: z.number().int(), queued: z.number().int(), cap: z.number().int(), max_queue: z.number().int() }),
  stream: z.enum(['whole', 'deltas']),
});
export type Readiness = z.infer<typeof Readiness>;
export type LockdownCheck = z.infer<typeof LockdownCheck>;
export type LoginCheck = z.infer<typeof LoginCheck>;

/** One model as OpenAI's models.retrieve answers it (and as each item of the list is). */
export const Model = z.object({ id: z.enum(MODEL_ALIASES), object: z.literal('model'), created: z.number().int(), owned_by: z.string() });
/** `GET /v1/models`: the list in the chat-completions list shape. */
export const ModelList = z.object({ object: z.literal('list'), data: z.array(Model) });
export type Model = z.infer<typeof Model>;
export type ModelList = z.infer<typeof ModelList>;
