/**
 * A chat conversation as one prompt text (docs/openai.md, "Prefix affinity"): through the model's
 * chat template (`chat_template` of its `tokenizer_config.json`, rendered by `@huggingface/jinja`,
 * an optional peer dependency) when one is given, else a canonical serialization of the whole
 * `messages` array. Either way every message counts, not the first one only: two conversations
 * share a prompt prefix exactly as far as their messages agree.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServeError } from './serve-error.js';

/** One chat message as the API takes it (text content only). */
export interface ChatMessage {
  readonly role: string;
  readonly content: string;
  readonly name?: string;
}

/** A loaded chat template: renders a conversation to the text the model sees. */
export interface ChatTemplate {
  /** `generation`: end with the assistant's turn opened (the model writes next). */
  render(messages: readonly ChatMessage[], generation: boolean): string;
  /** Why it cannot render here (an optional package missing): `render` throws this, naming the package. */
  readonly unavailable?: string;
}

/**
 * The canonical text of a conversation: each message as `<|role|>` (and `name`) then its content,
 * in order, with a separator no content can forge (content's own `<|` is escaped). A prefix of
 * messages gives a prefix of the text.
 */
export function canonicalConversation(messages: readonly ChatMessage[]): string {
  let out = '';
  for (const m of messages) out += `<|${m.role}${m.name !== undefined ? `:${m.name}` : ''}|>${m.content.replaceAll('<|', '<\\|')}\n`;
  return out;
}

/**
 * Loads the chat template of a `tokenizer_config.json` (its `chat_template`, the string or the
 * entry named `default`), with its `bos_token` and `eos_token`.
 * @throws {ServeError} `InvalidRequest` naming the file when it has no template or `@huggingface/jinja` is not installed
 */
export async function loadChatTemplate(file: string): Promise<ChatTemplate> {
  const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  const raw = config['chat_template'];
  const source = typeof raw === 'string' ? raw : Array.isArray(raw) ? (raw as { name?: string; template?: string }[]).find((t) => t.name === 'default')?.template : undefined;
  if (typeof source !== 'string') throw new ServeError('InvalidRequest', 400, `${file}: no chat_template (a string, or a list with an entry named "default")`, { field: 'chat_template' });
  let jinja: typeof import('@huggingface/jinja');
  try {
    jinja = await import('@huggingface/jinja');
  } catch (error) {
    throw new ServeError('InvalidRequest', 400, `${file}: rendering its chat template needs the optional package @huggingface/jinja (npm install @huggingface/jinja)`, { field: 'chat_template', cause: error });
  }
  const template = new jinja.Template(source);
  const token = (name: string): string => {
    const t = config[name];
    return typeof t === 'string' ? t : typeof (t as { content?: unknown } | undefined)?.content === 'string' ? (t as { content: string }).content : '';
  };
  const bos = token('bos_token');
  const eos = token('eos_token');
  return {
    render: (messages, generation) => template.render({ messages: messages.map((m) => ({ ...m })), add_generation_prompt: generation, bos_token: bos, eos_token: eos }),
  };
}

/**
 * The chat template of a model with none in its `tokenizer_config.json` (docs/openai.md, "Chat
 * templates"): ChatML, transformers' long-time default, `<|im_start|>role\ncontent<|im_end|>\n` per
 * message, and `<|im_start|>assistant\n` to open the assistant's turn.
 */
export const DEFAULT_CHAT_TEMPLATE: ChatTemplate = Object.freeze({
  render: (messages: readonly ChatMessage[], generation: boolean): string => messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + (generation ? '<|im_start|>assistant\n' : ''),
});

/**
 * The chat template of the model directory `dir`: its `tokenizer_config.json`'s, else {@link DEFAULT_CHAT_TEMPLATE}.
 * @throws {ServeError} as {@link loadChatTemplate} when the file has a template it cannot render
 */
export async function modelChatTemplate(dir: string): Promise<ChatTemplate> {
  const file = join(dir, 'tokenizer_config.json');
  if (!existsSync(file)) return DEFAULT_CHAT_TEMPLATE;
  const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  if (config['chat_template'] === undefined || config['chat_template'] === null) return DEFAULT_CHAT_TEMPLATE;
  try {
    return await loadChatTemplate(file);
  } catch (error) {
    // The model serves completions without @huggingface/jinja; only its chats need it, and say so.
    if (!(error instanceof ServeError) || !error.message.includes('@huggingface/jinja')) throw error;
    const unavailable = error.message;
    return {
      unavailable,
      render: () => {
        throw new ServeError('InvalidRequest', 400, unavailable, { field: 'messages' });
      },
    };
  }
}

/** The prompt text of a conversation: `template`'s rendering with the assistant's turn opened, else the canonical text. */
export function conversationPrompt(messages: readonly ChatMessage[], template?: ChatTemplate): string {
  return template === undefined ? canonicalConversation(messages) : template.render(messages, true);
}
