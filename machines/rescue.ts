import { resolveRequest, type ExtraLoad } from '../src/core/cost.js';
import { RoutingError } from '../src/core/errors.js';
import { failoverInSwarm } from '../src/core/failover.js';
import { makeRoute } from '../src/core/route.js';
import { serveModel } from '../src/core/serve-model.js';
import type { NodeStates, Pipeline, Recovery, Route, SwarmPlan } from '../src/core/types.js';
import { isAliveIn, livenessView, type PendingRescue, type RescueIndex, type SwarmContext } from './swarm-context.js';

/**
 * The rescue `node.down` computes before it marks the node: from the Swarm's own context, with
 * the runtime's routing index as a shortcut where the context agrees with it.
 */

/** What a rescue reads besides the Swarm's context: telemetry, in-flight load, and the routing index if any. */
export interface RescueReads {
  readonly telemetry: NodeStates;
  readonly inflight: ExtraLoad;
  readonly index?: RescueIndex | undefined;
}

/** For each plan (immutable, so the cache never goes stale): node id → the models whose pipelines use it. */
const modelsByNode = new WeakMap<SwarmPlan, ReadonlyMap<string, ReadonlySet<string>>>();

function modelsUsing(plan: SwarmPlan, nodeId: string): ReadonlySet<string> | undefined {
  let index = modelsByNode.get(plan);
  if (index === undefined) {
    const map = new Map<string, Set<string>>();
    for (const p of plan.pipelines) {
      for (const s of p.stages) {
        let models = map.get(s.nodeId);
        if (models === undefined) map.set(s.nodeId, (models = new Set()));
        models.add(p.modelId);
      }
    }
    modelsByNode.set(plan, map);
    index = map;
  }
  return index.get(nodeId);
}

/** Every stage of a pipeline alive in the machine's own liveness. */
function intactIn(context: SwarmContext, pipeline: Pipeline): boolean {
  for (const s of pipeline.stages) if (!isAliveIn(context, s.nodeId)) return false;
  return true;
}

/**
 * The rescue for `nodeId`, from the machine's context as it is: for every model whose served
 * route uses the node, its failover (intact copy → splice → degraded → Unrecoverable). Liveness
 * is the machine's own, so it must run before `markNodeDown`: once the node is marked, the route
 * that used it is no longer served and there is nothing left to rescue.
 * A model none of whose pipelines uses the node is skipped without routing it: whatever it
 * serves (a copy, a splice or the survivors of a copy) is made of its own pipelines' nodes.
 * `reads` is what the Swarm was given to read besides its context (its injected readers' values).
 */
export function computeRescue(context: SwarmContext, nodeId: string, reads: RescueReads): PendingRescue {
  const { telemetry, inflight } = reads;
  const r = resolveRequest({});
  const recoveries: Recovery[] = [];
  const unrecoverable: string[] = [];
  const models = modelsUsing(context.plan, nodeId);
  if (models === undefined) return { nodeId, recoveries, unrecoverable };
  let state: { plan: SwarmPlan; nodes: NodeStates } | undefined;
  // A rescue is blind to suspicion (the loss is the node's, not the doubt's): while a node is suspect, scan.
  const index = reads.index?.doubted?.() === true ? undefined : reads.index;
  for (const model of context.plan.models) {
    if (!models.has(model.id)) continue;
    // The common case, from the index in O(log P): the model serves an intact copy, and another
    // intact copy without the node exists, both intact in the machine's own liveness. The same
    // choice and cost as the scan below (cost does not depend on liveness).
    const served = index?.best(model.id);
    if (served !== undefined && intactIn(context, served.pipeline)) {
      if (!served.pipeline.stages.some((s) => s.nodeId === nodeId)) continue;
      const copy = index?.bestWithout(model.id, nodeId);
      if (copy !== undefined && intactIn(context, copy.pipeline)) {
        const from = makeRoute(model.id, served.pipeline.id, served.pipeline.stages, telemetry, r, false, inflight);
        const route = makeRoute(model.id, copy.pipeline.id, copy.pipeline.stages, telemetry, r, false, inflight);
        recoveries.push({ modelId: model.id, strategy: 'copy', degraded: false, route, from, replaced: [], missingLayers: [] });
        continue;
      }
    }
    state ??= { plan: context.plan, nodes: livenessView(context, telemetry) };
    let current: Route;
    try {
      current = serveModel(model.id, r, state, { allowDegraded: context.allowDegraded, extra: inflight });
    } catch {
      continue; // nothing was being served for this model: nothing to rescue
    }
    if (!current.stages.some((s) => s.nodeId === nodeId)) continue;
    try {
      recoveries.push(failoverInSwarm(current, nodeId, state, { allowDegraded: context.allowDegraded }, inflight));
    } catch (error) {
      if (!(error instanceof RoutingError) || error.code !== 'Unrecoverable') throw error;
      unrecoverable.push(model.id);
    }
  }
  return { nodeId, recoveries, unrecoverable };
}
