/**
 * The body of `POST /v1/completions` in OpenAI's shape, checked field by field: a bad field is a
 * 400 `InvalidRequest` naming it, before anything runs (docs/completions.md).
 */
import { ServeError } from '../wire/serve-error.js';

/** A checked completion request. */
export interface CompletionRequest {
  readonly model: string;
  /** Text, or token ids. */
  readonly prompt: string | readonly number[];
  /** @defaultValue 16, as OpenAI's */
  readonly maxTokens: number;
  /** 0 is greedy. @defaultValue 1 */
  readonly temperature: number;
  /** @defaultValue 1 */
  readonly topP: number;
  /** @defaultValue 0 */
  readonly seed: number;
  readonly stop: readonly string[];
  readonly stream: boolean;
  /** Extension: answer the last step's logits (f32, little-endian, base64) too. */
  readonly returnLogits: boolean;
}

/** The most tokens one completion may ask. */
export const MAX_COMPLETION_TOKENS = 4096;

const KNOWN = new Set(['model', 'prompt', 'max_tokens', 'temperature', 'top_p', 'seed', 'stop', 'stream', 'n', 'user', 'hecate_return_logits']);

function invalid(field: string, message: string): ServeError {
  return new ServeError('InvalidRequest', 400, `${field}: ${message}`, { field });
}

function numberField(body: Record<string, unknown>, field: string, fallback: number, min: number, max: number, integer = false): number {
  const value = body[field];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw invalid(field, `expected ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * Checks a request body.
 * @throws {ServeError} `InvalidRequest` 400 naming the field
 */
export function parseCompletionRequest(raw: unknown): CompletionRequest {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid('body', 'expected a JSON object');
  const body = raw as Record<string, unknown>;
  for (const key of Object.keys(body)) if (!KNOWN.has(key)) throw invalid(key, 'not a field this server reads (model, prompt, max_tokens, temperature, top_p, seed, stop, stream)');
  if (typeof body['model'] !== 'string' || body['model'].length === 0 || body['model'].length > 200) throw invalid('model', 'expected the model\'s id, 1-200 characters');
  const prompt = body['prompt'];
  let checked: string | readonly number[];
  if (typeof prompt === 'string') {
    if (prompt.length > 65_536) throw invalid('prompt', 'at most 65,536 characters');
    checked = prompt;
  } else if (Array.isArray(prompt) && prompt.length > 0 && prompt.length <= 16_384 && prompt.every((t) => Number.isInteger(t) && (t as number) >= 0)) {
    checked = prompt as number[];
  } else {
    throw invalid('prompt', 'expected text, or 1-16,384 token ids (non-negative integers)');
  }
  if (body['n'] !== undefined && body['n'] !== 1) throw invalid('n', 'only 1 choice per request');
  const stopRaw = body['stop'];
  let stop: string[] = [];
  if (typeof stopRaw === 'string') stop = [stopRaw];
  else if (Array.isArray(stopRaw) && stopRaw.length <= 4 && stopRaw.every((s) => typeof s === 'string')) stop = stopRaw as string[];
  else if (stopRaw !== undefined && stopRaw !== null) throw invalid('stop', 'expected a string or up to 4 strings');
  if (stop.some((s) => s.length === 0 || s.length > 200)) throw invalid('stop', 'each stop string 1-200 characters');
  const stream = body['stream'] ?? false;
  if (typeof stream !== 'boolean') throw invalid('stream', 'expected true or false');
  const returnLogits = body['hecate_return_logits'] ?? false;
  if (typeof returnLogits !== 'boolean') throw invalid('hecate_return_logits', 'expected true or false');
  return {
    model: body['model'],
    prompt: checked,
    maxTokens: numberField(body, 'max_tokens', 16, 1, MAX_COMPLETION_TOKENS, true),
    temperature: numberField(body, 'temperature', 1, 0, 2),
    topP: numberField(body, 'top_p', 1, Number.MIN_VALUE, 1),
    seed: numberField(body, 'seed', 0, 0, 2 ** 32 - 1, true),
    stop,
    stream,
    returnLogits,
  };
}
