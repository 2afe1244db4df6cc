/**
 * The swarm a load simulation runs on: node profiles plus what the router never sees (service
 * slots), planned with the real planner so every policy routes over the same pipelines the
 * Swarm would serve.
 */
import { planSwarm } from '../../core/plan.js';
import { RoutingError } from '../../core/errors.js';
import type { ModelSpec, NodeProfile, Route, Stage, SwarmPlan } from '../../core/types.js';

/** One machine of the simulated swarm. */
export interface SimNodeSpec extends NodeProfile {
  /** Requests it serves at once; more wait in its FIFO queue. @defaultValue 1 */
  readonly slots?: number;
}

/** What a load simulation runs on. */
export interface LoadTopology {
  readonly nodes: readonly SimNodeSpec[];
  /** The one model served, with `pipelines` copies. */
  readonly model: ModelSpec;
  /** Mean time one layer takes on a node of score 1, in ms (a node of score s takes 1/s of it). */
  readonly msPerLayer: number;
  /** Network delay of each hop: client → first stage, stage → stage, last stage → client. */
  readonly hopMs: number;
}

/** One stage as the simulator runs it. */
export interface SimStage {
  readonly node: number;
  readonly nodeId: string;
  readonly layers: number;
  /** Mean service time at full speed, in ms. */
  readonly meanMs: number;
}

/** One copy as the simulator runs it. */
export interface SimPipeline {
  readonly index: number;
  readonly id: string;
  readonly stages: readonly SimStage[];
  /** Requests per ms it sustains: its slowest stage's slots over its mean service time. */
  readonly capacity: number;
  /** Mean latency of one request alone: every stage's service plus every hop. */
  readonly idleLatencyMs: number;
}

/** A node as the simulator runs it. */
export interface SimNode {
  readonly index: number;
  readonly id: string;
  readonly slots: number;
  readonly score: number;
}

/** A planned topology: the plan, and the pipelines and nodes indexed for the engine. */
export interface BuiltTopology {
  readonly spec: LoadTopology;
  readonly profiles: readonly NodeProfile[];
  readonly plan: SwarmPlan;
  readonly nodes: readonly SimNode[];
  readonly pipelines: readonly SimPipeline[];
  /** Σ pipeline capacity, requests per ms: ρ = arrival rate / this. */
  readonly capacity: number;
  /** Node id → index. */
  readonly nodeIndex: ReadonlyMap<string, number>;
  /** Pipeline id → index. */
  readonly pipelineIndex: ReadonlyMap<string, number>;
}

/**
 * The default swarm, a home lab of ten machines serving six copies: three GPUs that each hold a
 * whole copy, and seven smaller machines that hold the three other copies in two or three
 * stages. Copies differ by 4x in capacity and 6x in idle latency; the fastest holds 30% of the
 * capacity (below 2/N). The planner, not the simulation, decides who holds what.
 */
export const DEFAULT_TOPOLOGY: LoadTopology = Object.freeze({
  nodes: [
    { id: 'gpu-a', memoryGb: 32, score: 12 },
    { id: 'gpu-b', memoryGb: 24, score: 8 },
    { id: 'gpu-c', memoryGb: 24, score: 5 },
    { id: 'desk-a', memoryGb: 16, score: 4 },
    { id: 'desk-b', memoryGb: 12, score: 3.5 },
    { id: 'lap-a', memoryGb: 12, score: 2.5 },
    { id: 'lap-b', memoryGb: 12, score: 2 },
    { id: 'mini-a', memoryGb: 12, score: 1.5 },
    { id: 'mini-b', memoryGb: 12, score: 1.5 },
    { id: 'tablet', memoryGb: 12, score: 1 },
  ],
  model: { id: 'hecate-8b', layers: 24, pipelines: 6 },
  msPerLayer: 4,
  hopMs: 1,
});

/** Plans `spec` with the real planner and indexes it for the engine. */
export function buildTopology(spec: LoadTopology = DEFAULT_TOPOLOGY): BuiltTopology {
  const profiles: NodeProfile[] = spec.nodes.map(({ slots: _slots, ...p }) => p);
  const plan = planSwarm(profiles, { models: [spec.model] });
  const nodes: SimNode[] = spec.nodes.map((n, index) => ({ index, id: n.id, slots: n.slots ?? 1, score: n.score ?? 1 }));
  const nodeIndex = new Map(nodes.map((n) => [n.id, n.index] as const));
  const sorted = [...plan.pipelines].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const pipelines: SimPipeline[] = sorted.map((p, index) => {
    const stages = resolveStages(p.stages, nodes, nodeIndex, spec.msPerLayer);
    return { index, id: p.id, stages, capacity: capacityOf(stages, nodes), idleLatencyMs: idleLatency(stages, spec.hopMs) };
  });
  const pipelineIndex = new Map(pipelines.map((p) => [p.id, p.index] as const));
  const capacity = pipelines.reduce((s, p) => s + p.capacity, 0);
  return { spec, profiles, plan, nodes, pipelines, capacity, nodeIndex, pipelineIndex };
}

/** Stages of a plan or route, resolved to simulator nodes. @throws Error for a node the topology lacks. */
export function resolveStages(stages: readonly Stage[], nodes: readonly SimNode[], nodeIndex: ReadonlyMap<string, number>, msPerLayer: number): SimStage[] {
  return stages.map((s) => {
    const node = nodeIndex.get(s.nodeId);
    if (node === undefined) throw new Error(`stage on node "${s.nodeId}" that the topology does not have`);
    const layers = s.layerEnd - s.layerStart;
    return { node, nodeId: s.nodeId, layers, meanMs: (layers * msPerLayer) / (nodes[node] as SimNode).score };
  });
}

function capacityOf(stages: readonly SimStage[], nodes: readonly SimNode[]): number {
  let c = Infinity;
  for (const s of stages) c = Math.min(c, (nodes[s.node] as SimNode).slots / s.meanMs);
  return c;
}

function idleLatency(stages: readonly SimStage[], hopMs: number): number {
  return stages.reduce((sum, s) => sum + s.meanMs, 0) + hopMs * (stages.length + 1);
}

/**
 * A real Swarm's route as the simulator runs it: the copy's index and its stages (the planned
 * ones when the route runs on the same nodes and layers, else resolved).
 * @throws Error for a pipeline the simulation does not know
 */
export function simRoute(topology: BuiltTopology, route: Route): { readonly pipeline: number; readonly stages: readonly SimStage[] } {
  const index = topology.pipelineIndex.get(route.pipelineId);
  if (index === undefined) throw new Error(`the swarm routed to pipeline "${route.pipelineId}" that the simulation does not know`);
  const planned = (topology.pipelines[index] as { stages: readonly SimStage[] }).stages;
  const same = planned.length === route.stages.length && planned.every((s, i) => s.nodeId === route.stages[i]?.nodeId && s.layers === (route.stages[i]?.layerEnd ?? 0) - (route.stages[i]?.layerStart ?? 0));
  return { pipeline: index, stages: same ? planned : resolveStages(route.stages, topology.nodes, topology.nodeIndex, topology.spec.msPerLayer) };
}

/** `route()`'s result, or undefined when the swarm has no healthy copy (the simulator drops the request). */
export function routeOrNone<R>(route: () => R): R | undefined {
  try {
    return route();
  } catch (error) {
    if (error instanceof RoutingError && error.code === 'NoHealthyPipeline') return undefined;
    throw error;
  }
}
