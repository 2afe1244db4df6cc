/**
 * The request an upstream engine is sent for one segment of a completion (docs/openai.md,
 * "Failover"): the client's, always streamed with usage; after a failure, continued from what was
 * generated so far. Where the engine streamed token ids (the prompt's and those of every piece, as
 * the reference engine's `--openai` and vLLM's `return_token_ids` do), a completion whose prompt is
 * those ids, for a chat too; otherwise from the text — a completion's prompt followed by it, a chat
 * with it as the assistant's unfinished message (`continue_final_message`, as vLLM and SGLang take
 * it; an agent with the model's chat template turns it into a plain completion for any engine).
 */
import type { CompletionJob } from '../../wire/openai-request.js';

/** The `usage` an engine reports. */
export interface EngineUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly prompt_tokens_details?: { readonly cached_tokens?: number } | null;
}

/** The token ids an engine streamed: its prompt's, and those of the pieces it sent. */
export interface StreamedIds {
  readonly prompt: readonly number[];
  readonly generated: readonly number[];
}

/** One segment's request: a chat or a completion, and its body. */
export interface EngineBody {
  readonly chat: boolean;
  readonly body: Record<string, unknown>;
}

/**
 * The engine's request for `job` after `generated` (with its `ids` where the engine streamed them),
 * with `remaining` tokens left; undefined where it cannot be continued (a token-id prompt without ids).
 */
export function continuationBody(job: CompletionJob, generated: string, remaining: number, ids?: StreamedIds): EngineBody | undefined {
  const common = { model: job.model, max_tokens: remaining, ...(job.stop.length > 0 ? { stop: job.stop } : {}), stream: true, stream_options: { include_usage: true }, ...job.sampling };
  if (ids !== undefined && ids.generated.length > 0) return { chat: false, body: { ...common, prompt: [...ids.prompt, ...ids.generated] } };
  if (job.chat) {
    const messages = job.messages ?? [];
    if (generated === '') return { chat: true, body: { ...common, messages } };
    return { chat: true, body: { ...common, messages: [...messages, { role: 'assistant', content: generated }], continue_final_message: true, add_generation_prompt: false } };
  }
  if (generated === '') return { chat: false, body: { ...common, prompt: job.prompt } };
  if (typeof job.prompt !== 'string') return undefined;
  return { chat: false, body: { ...common, prompt: job.prompt + generated } };
}
