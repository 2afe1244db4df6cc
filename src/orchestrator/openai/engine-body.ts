/**
 * The request an upstream engine is sent for one segment of a completion (docs/openai.md,
 * "Failover"): the client's, always streamed with usage; after a failure, continued from the text
 * generated so far — a completion's prompt followed by it, a chat with it as the assistant's
 * unfinished message (`continue_final_message`, as vLLM and SGLang take it; an agent with the
 * model's chat template turns it into a plain completion for any engine). The seam where a
 * token-id continuation (an engine that returns ids) plugs in later.
 */
import type { CompletionJob } from './openai-request.js';

/** The `usage` an engine reports. */
export interface EngineUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly prompt_tokens_details?: { readonly cached_tokens?: number } | null;
}

/** The engine's body for `job` after `generated`, with `remaining` tokens left; undefined where it cannot be continued (a token-id prompt, for now). */
export function continuationBody(job: CompletionJob, generated: string, remaining: number): Record<string, unknown> | undefined {
  const common = { model: job.model, max_tokens: remaining, ...(job.stop.length > 0 ? { stop: job.stop } : {}), stream: true, stream_options: { include_usage: true }, ...job.sampling };
  if (job.chat) {
    const messages = job.messages ?? [];
    if (generated === '') return { ...common, messages };
    return { ...common, messages: [...messages, { role: 'assistant', content: generated }], continue_final_message: true, add_generation_prompt: false };
  }
  if (generated === '') return { ...common, prompt: job.prompt };
  if (typeof job.prompt !== 'string') return undefined;
  return { ...common, prompt: job.prompt + generated };
}
