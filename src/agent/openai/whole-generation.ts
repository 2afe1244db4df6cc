/**
 * One token generation on a model an agent runs whole (whole-model.ts): the prompt's ids through
 * every layer, each step's logits sampled into the next token (src/model/sampler.ts: greedy at
 * temperature 0, else drawn by (seed, step)), until `maxTokens`, the end-of-sequence token or a
 * stop string. Its text is decoded in the context of the prompt's last tokens (as vLLM's
 * incremental detokenizer does), so a continuation from the ids streamed so far decodes exactly
 * as the unbroken generation would. Pieces go out aligned: each carries the ids whose text it
 * completes, and none goes while text is held back (a possible stop string's start, half a
 * character), so at every piece the text streamed is the decoding of the ids streamed
 * (docs/openai.md, "Failover").
 */
import { sampleToken, type SamplingOptions } from '../../model/sampler.js';
import { StopText } from '../../model/stop-text.js';
import { ServeError } from '../../wire/serve-error.js';
import { tokenTensor, type Tensor } from '../../wire/tensor.js';
import type { WholeModel } from './whole-model.js';

/** Prompt tokens the generated text is decoded after. */
const DECODE_CONTEXT = 4;

/** A piece of text and the ids it decodes from. */
export interface GeneratedPiece {
  readonly text: string;
  readonly ids: readonly number[];
}

/** What one generation is asked. */
export interface GenerationAsk {
  readonly promptIds: readonly number[];
  readonly maxTokens: number;
  readonly sampling: SamplingOptions;
  readonly stop: readonly string[];
  /** The caller went away: the running step stops between layers. */
  readonly signal: AbortSignal;
}

/** How a generation ended, and its last piece (possibly empty: text '' and no ids). */
export interface GenerationEnd {
  readonly finish: 'stop' | 'length';
  /** Every token generated, the end-of-sequence token included when it ended the generation. */
  readonly ids: readonly number[];
  readonly last: GeneratedPiece;
}

let sessions = 0;

/** Runs one generation, handing each aligned piece to `emit`; its KV cache is dropped when it ends. */
export async function generateWhole(model: WholeModel, ask: GenerationAsk, emit: (piece: GeneratedPiece) => void): Promise<GenerationEnd> {
  const { engine, span, tokenizer } = model;
  const sessionId = `openai-${++sessions}`;
  const context = ask.promptIds.slice(-DECODE_CONTEXT);
  const contextText = tokenizer.decode(context);
  const decode = (ids: readonly number[]): string => {
    const all = tokenizer.decode([...context, ...ids]);
    return all.startsWith(contextText) ? all.slice(contextText.length) : tokenizer.decode(ids);
  };
  const text = new StopText(ask.stop);
  const ids: number[] = [];
  let pendingIds: number[] = [];
  let pendingText = '';
  let released = 0;
  let finish: GenerationEnd['finish'] = 'length';
  let input = tokenTensor(ask.promptIds);
  try {
    for (let step = 0; step < ask.maxTokens; step++) {
      if (ask.signal.aborted) throw ask.signal.reason;
      const answer = await engine.step({ sessionId, span, step, input, signal: ask.signal, tokens: step === 0 ? ask.promptIds.length : 1 });
      const id = sampleToken(logitsOf('output' in answer ? answer.output : answer, model.vocab), step, ask.sampling);
      ids.push(id);
      pendingIds.push(id);
      if (id === tokenizer.eosTokenId) {
        finish = 'stop';
        break;
      }
      const delta = text.push(decode(ids));
      pendingText += delta;
      released += delta.length;
      if (text.stopped) {
        finish = 'stop';
        break;
      }
      if (pendingText !== '' && released === text.text.length) {
        emit({ text: pendingText, ids: pendingIds });
        pendingText = '';
        pendingIds = [];
      }
      input = tokenTensor([id]);
    }
    return { finish, ids, last: { text: pendingText + text.flush(), ids: pendingIds } };
  } finally {
    engine.drop(sessionId);
  }
}

/** The f32 logits `[1, vocab]` the last layer answered. */
function logitsOf(output: Tensor, vocab: number): Float32Array {
  if (output.dtype !== 'f32' || output.data.byteLength !== vocab * 4) throw new ServeError('Internal', 500, `the engine answered ${output.dtype} [${output.shape.join(', ')}], not the f32 [1, ${vocab}] logits of the model's vocabulary`);
  return new Float32Array(new Uint8Array(output.data).buffer, 0, vocab);
}
