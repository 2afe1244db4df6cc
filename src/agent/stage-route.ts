/**
 * `POST /v1/stage` on the agent (docs/engine.md): a stage call checked against its bounds and the
 * engine's, run in a slot on the engine (rebuilt from its replay first when fresh), cancelled when
 * its session is dropped or its caller hangs up, answered with the outputs.
 */
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../runtime/types.js';
import { ServeError } from '../wire/serve-error.js';
import { checkStageRequest } from '../wire/stage-bounds.js';
import { stageBodySchema, type StageReply, type StageRequest } from '../wire/stage-protocol.js';
import { digestOf, digestTensor, digestTensors } from './engines/digest-engine.js';
import type { SessionDrops } from './session-drops.js';
import type { StageEngine, StageSpan } from './stage-engine.js';
import type { StageSlots } from './stage-slots.js';

/** What the stage route serves with. */
export interface StageRouteParts {
  readonly id: string;
  readonly engine: StageEngine;
  readonly slots: StageSlots;
  readonly drops: SessionDrops;
  /** The swarm's models (layers by id) as the join gave them; undefined before a join. */
  readonly models: () => ReadonlyMap<string, number> | undefined;
  /** Times the reply's `ms`. */
  readonly clock: Clock;
}

/** Registers `POST /v1/stage`. */
export function registerStageRoute(app: FastifyInstance, parts: StageRouteParts): void {
  const { id, engine, slots, drops, clock } = parts;
  app.post<{ Body: StageRequest }>('/v1/stage', { schema: { body: stageBodySchema } }, async (request, reply): Promise<StageReply> => {
    const body = request.body;
    const models = parts.models();
    // Before any time or memory is spent on it: the wire's bounds, then the engine's.
    checkStageRequest(body, models);
    const span: StageSpan = { modelId: body.modelId, layerStart: body.layerStart, layerEnd: body.layerEnd, layers: models?.get(body.modelId) ?? body.layerEnd };
    engine.check?.({ sessionId: body.sessionId, span, step: body.step, tokens: body.tokens, replay: body.replay.length });
    const started = clock.now();
    // Cancelled when the session is dropped or the orchestrator hangs up (it gave the call up).
    const call = drops.begin(body.sessionId, id);
    const hangUp = (): void => {
      if (!reply.raw.writableFinished) call.abort(new ServeError('UnknownSession', 409, `the caller of session "${body.sessionId}" went away`, { field: 'sessionId' }));
    };
    reply.raw.once('close', hangUp);
    try {
      await slots.acquire(call.signal);
      try {
        await engine.load(span, call.signal);
        const replayOutputs = body.fresh ? await engine.rebuild(body.sessionId, span, digestTensors(body.replay), call.signal) : [];
        const stepped = await engine.step({ sessionId: body.sessionId, span, step: body.step, input: digestTensor(body.input), signal: call.signal, tokens: body.tokens, ...(body.prompt !== undefined ? { prompt: body.prompt } : {}) });
        const { output, cachedTokens } = 'output' in stepped ? stepped : { output: stepped, cachedTokens: undefined };
        return { nodeId: id, layerStart: body.layerStart, layerEnd: body.layerEnd, output: digestOf(output, 'output'), replayOutputs: replayOutputs.map((t, i) => digestOf(t, `replayOutputs/${i}`)), ms: clock.now() - started, ...(cachedTokens !== undefined ? { cachedTokens } : {}) };
      } finally {
        slots.release();
      }
    } finally {
      drops.end(body.sessionId, call);
      reply.raw.off('close', hangUp);
    }
  });
}
