/**
 * An OpenAI completion or chat completion request, checked and reduced to what the orchestrator
 * honours (docs/openai.md, "Fields"): every field it does not honour is refused with a 400 naming
 * it, rather than silently ignored.
 */
import { checkPrompt, type Prompt } from '../core/prompt.js';
import type { ChatMessage } from './chat-prompt.js';
import { ServeError } from './serve-error.js';

/** Fields both endpoints honour. */
const COMMON = ['model', 'max_tokens', 'temperature', 'top_p', 'seed', 'stop', 'n', 'stream', 'stream_options', 'user'];
/** Fields of each endpoint. */
const FIELDS = Object.freeze({ completions: new Set([...COMMON, 'prompt']), chat: new Set([...COMMON, 'messages', 'max_completion_tokens']) });

/** The most stop strings (OpenAI's bound). */
export const MAX_STOPS = 4;
/** `max_tokens` when a request gives none: OpenAI's 16 for completions; a bounded 512 for chat. */
export const DEFAULT_MAX_TOKENS = Object.freeze({ completions: 16, chat: 512 });
/** The largest `max_tokens` accepted. */
export const MAX_TOKENS_LIMIT = 1_000_000;

/** A checked request. */
export interface CompletionJob {
  readonly chat: boolean;
  readonly model: string;
  /** A completion's prompt (text or token ids). */
  readonly prompt: Prompt | undefined;
  /** A chat's conversation. */
  readonly messages: readonly ChatMessage[] | undefined;
  readonly maxTokens: number;
  readonly stop: readonly string[];
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** Sampling fields passed to the engine as given: temperature, top_p, seed, user. */
  readonly sampling: Readonly<Record<string, unknown>>;
}

const bad = (param: string, message: string): ServeError => new ServeError('InvalidRequest', 400, `${param}: ${message}`, { field: param });

function numberIn(body: Record<string, unknown>, name: string, min: number, max: number, integer = false): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) throw bad(name, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(v)?.slice(0, 40)}`);
  return v;
}

/** A message's text: a string, or text parts (`[{ type: 'text', text }]`) joined. */
function messageText(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown, i) => {
        const p = part as { type?: unknown; text?: unknown } | null;
        if (p?.type !== 'text' || typeof p.text !== 'string') throw bad(`${at}/content/${i}`, 'only text parts ({ type: "text", text }) are honoured');
        return p.text;
      })
      .join('');
  }
  throw bad(`${at}/content`, 'must be a string or an array of text parts');
}

function checkMessages(value: unknown): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0) throw bad('messages', 'must be a non-empty array');
  return value.map((m: unknown, i) => {
    const msg = m as Record<string, unknown> | null;
    if (msg === null || typeof msg !== 'object') throw bad(`messages/${i}`, 'must be an object');
    for (const key of Object.keys(msg)) if (key !== 'role' && key !== 'content' && key !== 'name') throw bad(`messages/${i}/${key}`, 'not honoured (tool calls and other message fields are refused)');
    if (typeof msg['role'] !== 'string' || !['system', 'developer', 'user', 'assistant'].includes(msg['role'])) throw bad(`messages/${i}/role`, 'must be "system", "developer", "user" or "assistant"');
    const name = msg['name'];
    if (name !== undefined && typeof name !== 'string') throw bad(`messages/${i}/name`, 'must be a string');
    return { role: msg['role'], content: messageText(msg['content'], `messages/${i}`), ...(name !== undefined ? { name } : {}) };
  });
}

/**
 * Checks `body` as a request of `POST /v1/completions` (`chat` false) or `/v1/chat/completions`.
 * @throws {ServeError} 400 `InvalidRequest` naming the field: one not honoured, `n` other than 1, a bad value
 */
export function checkCompletionRequest(body: unknown, chat: boolean): CompletionJob {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw bad('body', 'must be a JSON object');
  const b = body as Record<string, unknown>;
  const allowed = chat ? FIELDS.chat : FIELDS.completions;
  for (const key of Object.keys(b)) if (!allowed.has(key)) throw bad(key, `not honoured by ${chat ? '/v1/chat/completions' : '/v1/completions'} (docs/openai.md lists the fields it honours)`);
  if (typeof b['model'] !== 'string' || b['model'] === '') throw bad('model', 'must be a model id (GET /v1/models lists them)');
  const n = numberIn(b, 'n', 1, 128, true);
  if (n !== undefined && n !== 1) throw bad('n', `only 1 choice per request is served, got ${n}: send ${n} requests instead`);
  let prompt: Prompt | undefined;
  let messages: ChatMessage[] | undefined;
  if (chat) messages = checkMessages(b['messages']);
  else {
    const p = b['prompt'];
    if (Array.isArray(p) && p.some((x) => typeof x !== 'number')) throw bad('prompt', 'one prompt per request: a string or one array of token ids (a batch of prompts is refused, as n > 1 is)');
    try {
      checkPrompt(p);
    } catch (error) {
      throw bad('prompt', (error as Error).message);
    }
    prompt = p;
  }
  const max = numberIn(b, 'max_tokens', 1, MAX_TOKENS_LIMIT, true) ?? numberIn(b, 'max_completion_tokens', 1, MAX_TOKENS_LIMIT, true) ?? (chat ? DEFAULT_MAX_TOKENS.chat : DEFAULT_MAX_TOKENS.completions);
  const s = b['stop'];
  const stop = s === undefined || s === null ? [] : typeof s === 'string' ? [s] : Array.isArray(s) && s.length <= MAX_STOPS && s.every((x) => typeof x === 'string' && x !== '') ? (s as string[]) : undefined;
  if (stop === undefined || stop.some((x) => x === '')) throw bad('stop', `must be a non-empty string or an array of at most ${MAX_STOPS} of them`);
  const stream = b['stream'];
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw bad('stream', 'must be a boolean');
  const so = b['stream_options'] as Record<string, unknown> | null | undefined;
  if (so !== undefined && so !== null && (typeof so !== 'object' || Object.keys(so).some((k) => k !== 'include_usage') || (so['include_usage'] !== undefined && typeof so['include_usage'] !== 'boolean'))) throw bad('stream_options', 'only { include_usage: boolean } is honoured');
  if (so != null && stream !== true) throw bad('stream_options', 'is only allowed with stream: true');
  const sampling: Record<string, unknown> = {};
  const temperature = numberIn(b, 'temperature', 0, 2);
  const topP = numberIn(b, 'top_p', 0, 1);
  const seed = numberIn(b, 'seed', -(2 ** 63), 2 ** 63, true);
  if (temperature !== undefined) sampling['temperature'] = temperature;
  if (topP !== undefined) sampling['top_p'] = topP;
  if (seed !== undefined) sampling['seed'] = seed;
  if (b['user'] !== undefined && typeof b['user'] !== 'string') throw bad('user', 'must be a string');
  return { chat, model: b['model'], prompt, messages, maxTokens: max, stop, stream: stream === true, includeUsage: so?.['include_usage'] === true, sampling };
}
