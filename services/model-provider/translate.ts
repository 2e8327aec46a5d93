import { providerError } from './errors.ts';
import { refuseUnhonoured } from './members.ts';
import { ChatCompletionRequest, TextPart } from './shapes.ts';

export type CompletionRequest = ChatCompletionRequest;

/** What one CLI run is asked: the system prompt, the prompt (sent on stdin) and an optional JSON schema. */
export interface Translated {
  systemPrompt: string | undefined;
  prompt: string;
  jsonSchema: Record<string, unknown> | undefined;
}

/** argv carries the system prompt and schema; one argument over 128 KiB fails to spawn (E2BIG), so keep well under. */
export const MAX_ARGUMENT_BYTES = 64 * 1024;

export function parseCompletionRequest(body: unknown): CompletionRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw providerError.invalidRequest('The body must be a JSON object with model and messages.', null);
  }
  refuseTools(body as Record<string, unknown>);
  const parsed = ChatCompletionRequest.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.join('.') || null;
    throw providerError.invalidRequest(
      `${param ?? 'The body'}: ${issue.message}; fix that member and send the request again.`,
      param,
    );
  }
  refuseUnhonoured(body as Record<string, unknown>, parsed.data);
  return parsed.data;
}

/** Any request that carries tools, in any of the ways the wire format allows, is refused before anything runs. */
function refuseTools(body: Record<string, unknown>): void {
  const present = (v: unknown) => v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0);
  if (present(body.tools)) throw providerError.toolsUnsupported('tools');
  if (present(body.functions)) throw providerError.toolsUnsupported('functions');
  if (present(body.tool_choice) && body.tool_choice !== 'none') throw providerError.toolsUnsupported('tool_choice');
  if (present(body.function_call) && body.function_call !== 'none')
    throw providerError.toolsUnsupported('function_call');
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  messages.forEach((m, i) => {
    const msg = (m ?? {}) as Record<string, unknown>;
    if (msg.role === 'tool' || msg.role === 'function') throw providerError.toolsUnsupported(`messages.${i}.role`);
    if (present(msg.tool_calls)) throw providerError.toolsUnsupported(`messages.${i}.tool_calls`);
    if (present(msg.function_call)) throw providerError.toolsUnsupported(`messages.${i}.function_call`);
  });
}

/**
 * The text of one message, checked on the way: text that is not well-formed Unicode (an unpaired UTF-16
 * surrogate, which JSON can carry as an escape) would reach the CLI altered, and a NUL cannot be passed on
 * the command line, where system text goes; both are refused naming the member, nothing is changed silently.
 */
function textOf(content: CompletionRequest['messages'][number]['content'], index: number, onArgv: boolean): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return checkedText(content, `messages.${index}.content`, onArgv);
  return content
    .map((part, j) => {
      const text = TextPart.safeParse(part);
      if (!text.success) {
        throw providerError.invalidRequest(
          `messages.${index}.content.${j}: only text parts are accepted (type "text"); this provider cannot read "${String(part.type).slice(0, 30)}" parts.`,
          `messages.${index}.content.${j}.type`,
        );
      }
      return checkedText(text.data.text, `messages.${index}.content.${j}.text`, onArgv);
    })
    .join('\n');
}

function checkedText(text: string, param: string, onArgv: boolean): string {
  if (!text.isWellFormed()) {
    throw providerError.invalidRequest(
      `${param} holds an unpaired UTF-16 surrogate (a lone \\ud800-\\udfff escape), which is not text; send well-formed Unicode.`,
      param,
    );
  }
  if (onArgv && text.includes('\0')) {
    throw providerError.invalidRequest(
      `${param} holds a NUL character; system and developer messages are passed to the CLI on its command line, which cannot carry one. Remove it.`,
      param,
    );
  }
  return text;
}

/** Message text can never close or forge a turn: the three markup characters become entities. */
export function escapeTurnText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * System (and developer) messages become the system prompt; a single user message is the prompt as it
 * is; anything longer becomes one <conversation> of <turn role=...> blocks.
 */
export function translate(request: CompletionRequest, defaultSystemPrompt: string): Translated {
  const system: string[] = [];
  const turns: { role: 'user' | 'assistant'; text: string }[] = [];
  request.messages.forEach((m, i) => {
    const isSystem = m.role === 'system' || m.role === 'developer';
    const text = textOf(m.content, i, isSystem);
    if (isSystem) system.push(text);
    else turns.push({ role: m.role === 'assistant' ? 'assistant' : 'user', text });
  });
  if (turns.length === 0) {
    throw providerError.invalidRequest(
      'messages holds only system messages; add the user message to answer.',
      'messages',
    );
  }
  const prompt =
    turns.length === 1 && turns[0]!.role === 'user'
      ? turns[0]!.text
      : `<conversation>\n${turns.map((t) => `<turn role="${t.role}">\n${escapeTurnText(t.text)}\n</turn>`).join('\n')}\n</conversation>`;
  if (prompt.trim() === '')
    throw providerError.invalidRequest('The user message is empty; send some text to answer.', 'messages');

  const systemPrompt = system.length > 0 ? system.join('\n\n') : defaultSystemPrompt;
  if (Buffer.byteLength(systemPrompt) > MAX_ARGUMENT_BYTES) {
    throw providerError.invalidRequest(
      `The system messages are longer than ${MAX_ARGUMENT_BYTES} bytes; move the long part into a user message.`,
      'messages',
    );
  }

  let jsonSchema: Record<string, unknown> | undefined;
  const format = request.response_format;
  if (format?.type === 'json_schema') {
    jsonSchema = format.json_schema?.schema;
    if (!jsonSchema) {
      throw providerError.invalidRequest(
        'response_format.json_schema.schema is missing; give the JSON Schema the answer must match.',
        'response_format.json_schema.schema',
      );
    }
  } else if (format?.type === 'json_object') {
    jsonSchema = { type: 'object' };
  }
  if (jsonSchema && Buffer.byteLength(JSON.stringify(jsonSchema)) > MAX_ARGUMENT_BYTES) {
    throw providerError.invalidRequest(
      `The JSON schema is longer than ${MAX_ARGUMENT_BYTES} bytes; send a smaller schema.`,
      'response_format.json_schema.schema',
    );
  }
  return { systemPrompt, prompt, jsonSchema };
}
