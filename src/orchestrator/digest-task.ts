/**
 * The work of `POST /v1/generate` (docs/serve.md): the stand-in digest generation. The prompt's
 * digest goes through every layer `steps` times, each step's output the next step's input; a
 * stage call is one HTTP request of `u32` `[1, 1]` tensors (stage-client.ts), timed by the
 * orchestrator's work model; the answer is the last output's 8 hex digits.
 */
import { promptTokens } from '../core/prompt.js';
import { digestHex, promptDigest } from '../wire/digest.js';
import { requestFingerprint } from './generate-checkpoint.js';
import type { GenerateReply, GenerateRequest } from './generate-protocol.js';
import type { GenerationTask } from './generation-task.js';
import { httpStageRunner } from './stage-client.js';

/** The digest generation of `request`, for one {@link Generation}. */
export function digestTask(request: GenerateRequest): GenerationTask<number, GenerateReply> {
  const tokens = Math.max(1, promptTokens(request.prompt));
  let last = 0;
  return {
    model: request.model,
    promptTokens: tokens,
    steps: request.steps,
    prompt: request.prompt,
    modelled: true,
    fingerprint: requestFingerprint(request),
    first: promptDigest(request.prompt),
    stored: { encode: (reply) => reply, decode: (stored) => stored as GenerateReply, steps: (reply) => reply.steps },
    input: (_step, value) => value,
    restore: () => {},
    next: (_step, output) => ((last = output), { value: output, done: false }),
    runner: ({ calls, timing, sessionNamespace, answered }) => httpStageRunner({ calls, timing, sessionNamespace, promptTokens: tokens, ...(answered !== undefined ? { prompt: request.prompt, answered } : {}) }),
    same: Object.is,
    reply: (run) => ({
      model: request.model,
      steps: request.steps,
      digest: digestHex(last),
      sessionId: run.sessionId,
      resumes: run.stats.resumes,
      path: run.path,
      ms: run.ms,
      ...(run.resumedFrom > 0 ? { resumedFrom: run.resumedFrom } : {}),
    }),
  };
}
