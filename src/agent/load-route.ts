/**
 * `POST /v1/spans/load` on the agent (docs/rebalance.md "Replicas, serve and agents"): a rebalance
 * moved a span here; the engine loads it (`StageEngine.load`: the stand-in digest engine takes the
 * modelled time, the reference engine reads the weights) and the answer says how long it took, so
 * the orchestrator prices this node's later loads by it. Signed with the swarm secret like a stage
 * call (stage-guard.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { TimeSource } from '../runtime/types.js';
import { LOAD_PATH, loadBodySchema, type LoadReply, type LoadRequest } from '../wire/load-protocol.js';
import { ServeError } from '../wire/serve-error.js';
import type { StageEngine } from './stage-engine.js';

/** Registers the span load; `models` is the swarm's models (layers by id) once joined; each load is logged. */
export function registerLoadRoute(app: FastifyInstance, agentId: string, engine: StageEngine, clock: TimeSource, models: () => ReadonlyMap<string, number> | undefined, log: (line: string) => void = () => {}): void {
  app.post<{ Body: LoadRequest }>(LOAD_PATH, { schema: { body: loadBodySchema } }, async (request): Promise<LoadReply> => {
    const { modelId, layerStart, layerEnd, layers, seconds } = request.body;
    const known = models()?.get(modelId);
    if (known !== undefined && known !== layers) throw new ServeError('InvalidRequest', 400, `layers: model "${modelId}" has ${known} layers in this swarm, got ${layers}`, { field: 'layers' });
    if (!(layerEnd > layerStart && layerEnd <= layers)) throw new ServeError('InvalidRequest', 400, `layerEnd: the span [${layerStart}, ${layerEnd}) is not within the model's ${layers} layers`, { field: 'layerEnd' });
    const started = clock.now();
    await engine.load({ modelId, layerStart, layerEnd, layers }, undefined, seconds !== undefined ? { seconds } : undefined);
    const ms = clock.now() - started;
    log(`loaded ${modelId} [${layerStart}, ${layerEnd}) for a rebalance in ${Math.round(ms)} ms`);
    return { nodeId: agentId, ms };
  });
}
