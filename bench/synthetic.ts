/**
 * The swarms the runtime benchmarks run on, and the two baselines written here the obvious way:
 * a full scan with the original design's cost formula, and bare XState actors (one shared machine, one `assign`).
 */
import { readFileSync } from 'node:fs';
import { assign, createActor, createMachine, type AnyActorRef } from 'xstate';
import { ewma } from '../machines/node.machine.js';
import type { ModelSpec, NodeProfile, NodeStates, SwarmConfig, SwarmPlan } from '../src/index.js';

/** A swarm to benchmark: profiles and config for `createSwarm`, and how to name its size. */
export interface Topology {
  readonly size: string;
  readonly profiles: readonly NodeProfile[];
  readonly config: SwarmConfig;
}

/**
 * Four memory classes, one per model: a node of class k holds exactly 4 layers of model k and
 * no layer of any other model once its own is placed (its memory is below the next model's
 * 4 layers), so the planner cuts every 32-layer copy into exactly 8 stages of 4 layers.
 */
const CLASSES = [
  { model: 'llm-70b', layerGb: 80, memoryGb: 320 },
  { model: 'llm-13b', layerGb: 16, memoryGb: 64 },
  { model: 'coder-3b', layerGb: 3, memoryGb: 12 },
  { model: 'draft-1b', layerGb: 0.5, memoryGb: 2 },
] as const;

/**
 * `copies` pipelines of 8 stages for each of 4 models (4 × copies × 8 nodes), plus `spares` idle
 * nodes per class. Scores and declared latencies vary (seeded), so costs differ.
 */
export function pipelines8(copies: number, spares = 0): Topology {
  let seed = 20260517;
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const models: ModelSpec[] = CLASSES.map((c, i) => ({ id: c.model, layers: 32, layerGb: c.layerGb, pipelines: copies, kind: i === 0 ? 'base' : 'expert' }));
  const profiles: NodeProfile[] = [];
  CLASSES.forEach((c, k) => {
    for (let i = 0; i < copies * 8 + spares; i++) {
      profiles.push({ id: `c${k}-${i}`, memoryGb: c.memoryGb, score: 1 + Math.floor(rnd() * 16), latencyMs: 2 + Math.floor(rnd() * 30) });
    }
  });
  const nodes = profiles.length;
  const size = spares === 0 ? `${copies * 4} pipelines x 8 stages (${nodes} nodes)` : `${nodes} nodes (${copies * 4} pipelines x 8 stages + ${spares * 4} spares)`;
  // Exactly the labelled copies: the spares stay spares (the planner would otherwise make further
  // copies of the small models from the big classes' spare memory).
  return { size, profiles, config: { models, furtherCopies: false } };
}

/** The example topology of the repository (`examples/swarm.json`), every model in 2 copies as `npm run sim` runs it. */
export function exampleTopology(): Topology {
  const file = new URL('../../examples/swarm.json', import.meta.url);
  const json = JSON.parse(readFileSync(file, 'utf8')) as { models: ModelSpec[]; nodes: NodeProfile[] };
  const models = json.models.map((m) => ({ ...m, pipelines: m.pipelines ?? 2 }));
  return { size: `example (${json.nodes.length} nodes, ${models.length} models x 2 copies)`, profiles: json.nodes, config: { models } };
}

/**
 * The baseline for routing: every pipeline of the plan scanned, each cost computed with the
 * original design's formula with the layer-aware capability term (docs/cost.md), the cheapest intact copy of
 * the model kept (ties by id). Written the obvious way, with no index and no cache.
 */
export function fullScanRoute(plan: SwarmPlan, nodes: NodeStates, modelId: string, tokens: number): { pipelineId: string; cost: number } | undefined {
  let best: { pipelineId: string; cost: number } | undefined;
  const layers = plan.models.find((m) => m.id === modelId)?.layers ?? 1;
  for (const p of plan.pipelines) {
    if (p.modelId !== modelId) continue;
    if (p.stages.some((s) => nodes[s.nodeId]?.alive !== true)) continue;
    let cost = 0;
    for (const s of p.stages) {
      const t = nodes[s.nodeId];
      const share = (s.layerEnd - s.layerStart) / layers;
      cost += (t?.latencyMs ?? 100) + (t?.load ?? share) * 120 + (100 * share) / Math.max(t?.score ?? 1, 0.01);
    }
    cost += 15 * (p.stages.length - 1) + (10 * tokens) / 1024;
    if (best === undefined || cost < best.cost || (cost === best.cost && p.id < best.pipelineId)) best = { pipelineId: p.id, cost };
  }
  return best;
}

const BARE_ALPHA = 0.3;

/**
 * The baseline for telemetry: ONE machine shared by every bare actor, as every node actor shares
 * `nodeMachine` (a machine per bare actor, as the first baseline had, cost the baseline about a quarter of
 * its rate at 8,000 nodes: each machine's transition caches start cold). No states, no guard, no
 * named action: one inline `assign` doing the EWMA work the node actor does for a sample — the
 * node actor's own formula (`ewma`: `α·sample + (1−α)·ewma`, the first sample initialises) on
 * the same three EWMA fields (load, latency, score) and the sample count, all four returned on
 * every event. An earlier baseline kept only load and latency; CHANGELOG.md ("`report()` against a
 * bare actor") compares the two.
 */
const bareTelemetryMachine = createMachine({
  types: {} as {
    context: { load: number | undefined; latencyMs: number | undefined; score: number | undefined; samples: number };
    events: { type: 'node.telemetry'; sample: { load?: number; latencyMs?: number; score?: number } };
  },
  context: { load: undefined, latencyMs: undefined, score: undefined, samples: 0 },
  on: {
    'node.telemetry': {
      actions: assign(({ context, event }) => ({
        load: ewma(context.load, event.sample.load, BARE_ALPHA),
        latencyMs: ewma(context.latencyMs, event.sample.latencyMs, BARE_ALPHA),
        score: ewma(context.score, event.sample.score, BARE_ALPHA),
        samples: context.samples + 1,
      })),
    },
  },
});

/** A started bare actor of the shared baseline machine (see `bareTelemetryMachine`). */
export function bareTelemetryActor(): AnyActorRef {
  return createActor(bareTelemetryMachine).start();
}

