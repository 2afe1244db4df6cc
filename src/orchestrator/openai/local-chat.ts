/**
 * `POST /v1/chat/completions` on a model `serve --model DIR` runs on real tokens (docs/openai.md,
 * "Chat on real tokens"): the conversation rendered by the model's chat template (its
 * `tokenizer_config.json`'s, else the documented default) and tokenized, then the same completion
 * as `POST /v1/completions` runs (completions-route.ts), its text handed out piece by piece.
 */
import { ServeError } from '../../wire/serve-error.js';
import type { ChatTemplate } from '../../wire/chat-prompt.js';
import type { CompletionJob } from '../../wire/openai-request.js';
import { MAX_COMPLETION_TOKENS } from '../completion-request.js';
import type { LocalCompletions } from '../completions-route.js';
import type { CompletionOutcome } from './upstream-completion.js';

const bad = (param: string, message: string): ServeError => new ServeError('InvalidRequest', 400, `${param}: ${message}`, { field: param });

/** Runs the chat `job` on `local`'s model, handing each final piece of text to `emit`. */
export async function runLocalChat(local: LocalCompletions, template: ChatTemplate, job: CompletionJob, signal: AbortSignal, emit: (text: string) => void): Promise<CompletionOutcome> {
  const model = local.textModel(job.model);
  if (model === undefined) throw new ServeError('NotFound', 404, `model "${job.model.slice(0, 200)}" is not served here with a tokenizer`, { field: 'model' });
  if (job.maxTokens > MAX_COMPLETION_TOKENS) throw bad('max_tokens', `at most ${MAX_COMPLETION_TOKENS} on a model served on real tokens, got ${job.maxTokens}`);
  const { temperature = 1, top_p: topP = 1, seed = 0 } = job.sampling as { temperature?: number; top_p?: number; seed?: number };
  if (!(topP > 0)) throw bad('top_p', 'must be above 0 on a model served on real tokens');
  if (!Number.isInteger(seed) || seed < 0 || seed > 2 ** 32 - 1) throw bad('seed', `must be an integer from 0 to ${2 ** 32 - 1} on a model served on real tokens, got ${seed}`);
  const promptIds = model.tokenizer.encode(template.render(job.messages ?? [], true));
  if (promptIds.length === 0) throw bad('messages', 'the chat template rendered them to no tokens');
  const result = await local.run({ model, promptIds, maxTokens: job.maxTokens, sampling: { temperature, topP, seed }, stop: job.stop }, signal, (delta) => emit(delta));
  return { finish: result.finishReason, promptTokens: promptIds.length, completionTokens: result.tokenIds.length, cachedTokens: 0, nodes: [...new Set(result.path.map((hop) => hop.nodeId))] };
}
