/**
 * Shared builders and fast-check arbitraries for the core tests. Plans here are written by hand
 * (or generated) independently of the planner, so routing and failover are tested on their own.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { SwarmState } from '../../src/index.js';
import type { ModelSpec, NodeTelemetry, Pipeline, Route, Stage, SwarmPlan } from '../../src/index.js';

/** A stage `[from, to)` on `nodeId`. */
export const st = (nodeId: string, layerStart: number, layerEnd: number): Stage => ({ nodeId, layerStart, layerEnd });

/** A pipeline of `modelId` from stages. */
export const pipe = (id: string, modelId: string, ...stages: Stage[]): Pipeline => ({ id, modelId, stages });

/** A state over a hand-written plan with the given telemetry per node (others cold and alive). */
export function stateOf(plan: SwarmPlan, telemetry: Record<string, Partial<NodeTelemetry>> = {}): SwarmState {
  let state = SwarmState.fromPlan(plan);
  for (const [id, patch] of Object.entries(telemetry)) state = state.withNode(id, patch);
  return state;
}

/** The error `fn` throws, checked to be an instance of `cls`; a failure if it returns. */
export function thrown<E extends Error>(fn: () => unknown, cls: new (...args: never[]) => E): E {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(cls);
    return e as E;
  }
  throw new Error(`expected a ${cls.name}, got a result`);
}

/** The ids of a route's nodes. */
export const nodesOf = (route: Route): string[] => route.stages.map((s) => s.nodeId);

/** Whether `stages` cover `[0, layers)` contiguously, in order, with no gap and no overlap. */
export function coversExactly(stages: readonly Stage[], layers: number): boolean {
  let next = 0;
  for (const s of stages) {
    if (s.layerStart !== next || s.layerEnd <= s.layerStart) return false;
    next = s.layerEnd;
  }
  return next === layers;
}

/** Whether a node is alive in the state (absent counts as dead). */
export const isAlive = (state: SwarmState, id: string): boolean => state.nodes[id]?.alive === true;

// ---------------------------------------------------------------------------------------------
// Arbitraries

/** A generated swarm: a valid hand-made plan (copies on disjoint nodes) and random telemetry. */
export interface World {
  readonly plan: SwarmPlan;
  readonly state: SwarmState;
  readonly nodeIds: readonly string[];
}

const POOL = Array.from({ length: 12 }, (_, i) => `n${i}`);

/** Cuts `[0, layers)` into `parts` (<= layers) non-empty ranges at the given sorted cut points. */
function cut(layers: number, cuts: readonly number[]): Array<[number, number]> {
  const points = [...new Set(cuts.filter((c) => c > 0 && c < layers))].sort((a, b) => a - b);
  const bounds = [0, ...points, layers];
  const out: Array<[number, number]> = [];
  for (let i = 0; i + 1 < bounds.length; i++) out.push([bounds[i] as number, bounds[i + 1] as number]);
  return out;
}

const modelShape = fc.record({
  layers: fc.integer({ min: 1, max: 10 }),
  copies: fc.integer({ min: 1, max: 3 }),
  cuts: fc.array(fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 2 }), { minLength: 3, maxLength: 3 }),
  order: fc.shuffledSubarray(POOL, { minLength: POOL.length, maxLength: POOL.length }),
});

const telemetryArb: fc.Arbitrary<Partial<NodeTelemetry>> = fc.record(
  {
    alive: fc.boolean(),
    latencyMs: fc.integer({ min: 0, max: 200 }),
    load: fc.double({ min: 0, max: 2, noNaN: true }),
    score: fc.constantFrom(0.5, 1, 2, 4, 8),
  },
  { requiredKeys: ['alive'] },
);

/** One to two models, each in one to three copies on disjoint nodes, and random telemetry. */
export const worldArb: fc.Arbitrary<World> = fc
  .record({
    shapes: fc.array(modelShape, { minLength: 1, maxLength: 2 }),
    telemetry: fc.array(telemetryArb, { minLength: POOL.length, maxLength: POOL.length }),
    // Most nodes alive so that every strategy of the failover is exercised.
    aliveBias: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: POOL.length, maxLength: POOL.length }),
  })
  .map(({ shapes, telemetry, aliveBias }) => {
    const models: ModelSpec[] = [];
    const pipelines: Pipeline[] = [];
    shapes.forEach((shape, m) => {
      const modelId = `m${m}`;
      models.push({ id: modelId, layers: shape.layers, pipelines: shape.copies, ...(m === 0 && shapes.length > 1 ? { fallback: 'm1' } : {}) });
      let next = 0;
      for (let c = 0; c < shape.copies; c++) {
        const ranges = cut(shape.layers, shape.cuts[c] ?? []);
        const stages = ranges.map(([a, b]) => st(shape.order[next++] as string, a, b));
        pipelines.push(pipe(`${modelId}/${c}`, modelId, ...stages));
      }
    });
    const plan: SwarmPlan = { models, pipelines };
    let state = SwarmState.fromPlan(plan);
    for (const id of Object.keys(state.nodes)) {
      const i = Number(id.slice(1));
      const t = telemetry[i] as Partial<NodeTelemetry>;
      state = state.withNode(id, { ...t, alive: (aliveBias[i] ?? 0) > 0 ? true : t.alive === true });
    }
    return { plan, state, nodeIds: Object.keys(state.nodes) };
  });

/** Seeded options for every property: deterministic in CI. */
export const SEEDED = { seed: 42, numRuns: 200 } as const;
