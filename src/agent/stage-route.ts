/**
 * `POST /v1/stage` on the agent (docs/engine.md): a stage message read within the bounds its
 * engine's width sets, checked against the wire's bounds and the engine's, run in a slot on the
 * engine (rebuilt from its replay first when fresh), cancelled when its session is dropped or its
 * caller hangs up, and answered with a stage message, signed with the swarm secret when the agent
 * has one (bound to the request's nonce).
 */
import type { FastifyInstance } from 'fastify';
import type { Clock, TimeSource } from '../runtime/types.js';
import { FRAME_CONTENT_TYPE } from '../wire/frames.js';
import { agentAudience, replySignatureHeaders, SIGNATURE_HEADERS } from '../wire/request-signing.js';
import { ServeError } from '../wire/serve-error.js';
import { checkStageRequest } from '../wire/stage-bounds.js';
import { decodeStageRequest, encodeStageReply, STAGE_PATH, stageRequestBounds, type StageRequest } from '../wire/stage-protocol.js';
import type { Tensor } from '../wire/tensor.js';
import type { SessionDrops } from './session-drops.js';
import { addBinaryParser } from '../net/raw-body.js';
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
  /** Signs the replies: the swarm secret, and the wall clock that stamps them. */
  readonly signer?: { readonly secret: Uint8Array; readonly clock: TimeSource };
}

/** Registers `POST /v1/stage` and the parser of its messages. */
export function registerStageRoute(app: FastifyInstance, parts: StageRouteParts): void {
  const { id, engine, slots, drops, clock, signer } = parts;
  const maxWidth = engine.maxWidth ?? 1;
  const bodyLimit = stageRequestBounds(maxWidth).maxBytes;
  const audience = agentAudience(id);
  addBinaryParser(app, FRAME_CONTENT_TYPE);
  app.post(STAGE_PATH, { bodyLimit }, async (request, reply) => {
    if (!(request.body instanceof Uint8Array)) throw new ServeError('InvalidRequest', 415, `body: a stage call is a ${FRAME_CONTENT_TYPE} message (docs/engine.md)`, { field: 'body' });
    const body: StageCall = decodeStageRequest(request.body, maxWidth);
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
    let answer: Uint8Array;
    try {
      await slots.acquire(call);
      try {
        // A span's load is shared by every call that needs it (engines keep one per span): no one
        // caller's going away cancels it.
        await engine.load(span);
        const replayOutputs = body.fresh ? await rebuildFrom(engine, body, span, call.signal) : [];
        // The call's signal is made when the engine first reads it: the controller makes it lazily,
        // and an engine that never listens (zero compute) pays nothing for it (docs/performance.md, "Data plane").
        const stepped = await engine.step({ sessionId: body.sessionId, span, step: body.step, input: body.input, get signal() { return call.signal; }, tokens: body.tokens, ...(body.prompt !== undefined ? { prompt: body.prompt } : {}) });
        const { output, cachedTokens } = 'output' in stepped ? stepped : { output: stepped, cachedTokens: undefined };
        answer = encodeStageReply({ nodeId: id, layerStart: body.layerStart, layerEnd: body.layerEnd, output, replayOutputs, ms: clock.now() - started, ...(cachedTokens !== undefined ? { cachedTokens } : {}) });
      } finally {
        slots.release();
      }
    } finally {
      drops.end(body.sessionId, call);
      reply.raw.off('close', hangUp);
    }
    void reply.header('content-type', FRAME_CONTENT_TYPE);
    const nonce = request.headers[SIGNATURE_HEADERS.nonce];
    if (signer !== undefined && typeof nonce === 'string') void reply.headers(replySignatureHeaders(signer.secret, { audience, method: request.method, path: request.url, nonce, timestamp: Math.round(signer.clock.now()), body: answer }));
    return reply.send(Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength));
  });
}

/** A decoded stage call whose replay can be let go once handed to the engine. */
type StageCall = Omit<StageRequest, 'replay'> & { replay: readonly Tensor[] };

/** Hands the replay to the engine and lets go of it: a flood of waiting calls holds what the engine keeps, not their tensors. */
function rebuildFrom(engine: StageEngine, body: StageCall, span: StageSpan, signal: AbortSignal): Promise<readonly Tensor[]> {
  const replay = body.replay;
  body.replay = [];
  return engine.rebuild(body.sessionId, span, replay, signal);
}
