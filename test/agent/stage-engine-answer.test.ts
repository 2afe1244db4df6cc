/**
 * The reference engine's refusals on the agent's routes (src/agent/stage-engine-answer.ts): the
 * statuses they mean, not a 500 the orchestrator charges as the agent's failure.
 */
import { describe, expect, it } from 'vitest';
import { ReferenceEngineError } from '../../src/agent/engines/reference/engine-error.js';
import { stageEngineAnswer } from '../../src/agent/stage-engine-answer.js';
import { createHttpApp } from '../../src/net/http-app.js';

describe('stageEngineAnswer', () => {
  it('answers a full KV cache 503 with Retry-After, a session not held 409, bad input 400, anything else 500', async () => {
    const app = createHttpApp(undefined, stageEngineAnswer);
    const errors: Record<string, Error> = {
      full: new ReferenceEngineError('KvMemoryExhausted', 'session "s" needs 16384 more bytes of KV cache on span m:4-6/6'),
      gone: new ReferenceEngineError('SessionNotHeld', 'session "s" holds 0 steps on span m:0-2/6, so step 3 cannot run: rebuild it'),
      long: new ReferenceEngineError('ContextExceeded', 'session "s" would hold 9000 tokens'),
      other: new ReferenceEngineError('SpanNotLoaded', 'span m:0-2/6 is not loaded'),
    };
    app.get('/e/:name', async (request) => {
      throw errors[(request.params as { name: string }).name];
    });
    const answers: [number, string | undefined, string][] = [];
    for (const name of Object.keys(errors)) {
      const r = await app.inject({ method: 'GET', url: `/e/${name}` });
      answers.push([r.statusCode, r.headers['retry-after'] as string | undefined, (r.json() as { error: { code: string } }).error.code]);
    }
    await app.close();
    expect(answers).toEqual([[503, '1', 'Full'], [409, undefined, 'UnknownSession'], [400, undefined, 'InvalidRequest'], [500, undefined, 'Internal']]);
  });
});
