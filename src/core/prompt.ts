/**
 * A request's prompt as the root reads it (docs/inputs.md): its type, its bound, its check and
 * its estimated tokens. Cutting it into hashed blocks is the prefix-cache plug-in's
 * (`hecate-swarm/prefix`, docs/prefix-cache.md); without it, a prompt only sets `tokens`.
 */
import { describeValue } from './describe.js';
import { RoutingError } from './errors.js';

/** A prompt: text, or the model's token ids. */
export type Prompt = string | readonly number[];

/** The longest prompt accepted, in characters or token ids (docs/inputs.md). */
export const PROMPT_LIMIT = 4_194_304;

/**
 * Checks a prompt: a string, or an array of integer token ids from 0 to 2³¹ − 1, at most
 * {@link PROMPT_LIMIT} long.
 * @throws {RoutingError} `InvalidRequest` naming the field.
 */
export function checkPrompt(prompt: unknown): asserts prompt is Prompt {
  if (typeof prompt === 'string') {
    if (prompt.length > PROMPT_LIMIT) throw new RoutingError('InvalidRequest', `request field "prompt" has ${prompt.length} characters; at most ${PROMPT_LIMIT}`);
    return;
  }
  if (!Array.isArray(prompt)) throw new RoutingError('InvalidRequest', `request field "prompt" must be a string or an array of token ids, got ${describeValue(prompt)}`);
  if (prompt.length > PROMPT_LIMIT) throw new RoutingError('InvalidRequest', `request field "prompt" has ${prompt.length} token ids; at most ${PROMPT_LIMIT}`);
  for (let i = 0; i < prompt.length; i++) {
    const id: unknown = prompt[i];
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0x7fffffff) {
      throw new RoutingError('InvalidRequest', `request field "prompt" [${i}] must be a token id, an integer from 0 to 2147483647, got ${describeValue(id)}`);
    }
  }
}

/** The estimated tokens of a prompt: ⌈characters ÷ 4⌉ for text, the count of ids for ids. */
export function promptTokens(prompt: Prompt): number {
  return typeof prompt === 'string' ? Math.ceil(prompt.length / 4) : prompt.length;
}
