import type { Model, ModelList } from './shapes.ts';

/**
 * The four model aliases the service accepts. The CLI itself accepts any name (an unknown one only fails
 * later, when signed in), so the service checks the alias. These four each name one model family in the
 * CLI's 2.1.x alias list; compound aliases (default, best, opusplan, the [1m] variants) are left out
 * because what they resolve to depends on the account.
 */
export const MODEL_ALIASES = ['sonnet', 'opus', 'haiku', 'fable'] as const;
export type ModelAlias = (typeof MODEL_ALIASES)[number];

/**
 * The aliases whose model takes sampling settings (temperature, top_p). As the pinned CLI resolves them,
 * `haiku` is claude-haiku-4-5, which takes them; the models behind sonnet, opus and fable (claude-sonnet-5,
 * claude-opus-4-8, claude-fable-5) refuse them, and the CLI sends none for them (its model table in the binary).
 */
export const SAMPLING_ALIASES: readonly ModelAlias[] = ['haiku'];
/** The aliases whose model takes an effort level (the CLI's --effort, sent as output_config.effort); the CLI drops it for haiku. */
export const EFFORT_ALIASES: readonly ModelAlias[] = ['sonnet', 'opus', 'fable'];

export function isModelAlias(name: string): name is ModelAlias {
  return (MODEL_ALIASES as readonly string[]).includes(name);
}

/** One model as OpenAI's models.retrieve answers it (and as each item of the list is). */
export function modelEntry(id: ModelAlias, created: number): Model {
  return { id, object: 'model', created, owned_by: 'local-cli' };
}

/** The model list in the chat-completions list shape. */
export function modelList(created: number): ModelList {
  return { object: 'list', data: MODEL_ALIASES.map((id) => modelEntry(id, created)) };
}
