/**
 * Seeded property tests of the per-model routing index (docs/design.md §10): whatever the plan, telemetry,
 * in-flight load and failures, and after any sequence of updates, the index chooses the pipeline
 * the scan (`routeRequest`'s own code) chooses, with a bit-identical cost.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSwarm, RoutingError } from '../../src/index.js';
import { resolveRequest } from '../../src/core/cost.js';
import type { ModelSpec, NodeProfile, NodeTelemetry, Pipeline, Stage, SwarmConfig, SwarmPlan } from '../../src/index.js';
import { cheapestIntact } from '../../src/core/route.js';
import { planIndex } from '../../src/core/plan-index.js';
import { RouterIndex } from '../../src/runtime/router-index.js';

const SEEDED = { seed: 20260517, numRuns: 200 } as const;
const DEFAULT = resolveRequest({});
const POOL = Array.from({ length: 10 }, (_, i) => `n${i}`);

// Mostly a few shared templates, so equal costs (and the tie-break by id) come up often.
const TEMPLATES: readonly NodeTelemetry[] = [
  { alive: true, samples: 0 },
  { alive: true, samples: 3, latencyMs: 4, load: 0.5, score: 2 },
  { alive: true, samples: 1, latencyMs: 0, load: 0, score: 0.001 },
  { alive: false, samples: 2, latencyMs: 1, load: 0.1, score: 3 },
  { alive: true, samples: 3, latencyMs: 4, load: 0.5, score: 2, suspect: true },
];
const telemetryArb: fc.Arbitrary<NodeTelemetry | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...TEMPLATES) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        alive: fc.boolean(),
        samples: fc.nat({ max: 5 }),
        latencyMs: fc.constantFrom(0, 1, 2.5, 4, 100),
        load: fc.constantFrom(0, 0.1, 0.5, 1),
        score: fc.constantFrom(0.001, 0.5, 1, 3),
        suspect: fc.boolean(),
      },
      { requiredKeys: ['alive', 'samples'] },
    ),
  },
);

const extraArb = fc.constantFrom(0, 0, 0, 0.25, 0.5);

/** Stages over any nodes of the pool (shared between copies and models, repeated, unknown). */
const stagesArb: fc.Arbitrary<Stage[]> = fc
  .array(fc.constantFrom(...POOL, 'ghost'), { minLength: 1, maxLength: 4 })
  .map((ids) => ids.map((nodeId, i) => ({ nodeId, layerStart: i, layerEnd: i + 1 })));

const planArb: fc.Arbitrary<SwarmPlan> = fc
  .array(fc.array(stagesArb, { minLength: 0, maxLength: 7 }), { minLength: 1, maxLength: 3 })
  .chain((models) =>
    // Pipeline ids in a shuffled order, so the index must not rely on the plan's order.
    fc.shuffledSubarray(
      models.flatMap((copies, m) => copies.map((stages, c): Pipeline => ({ id: `m${m}/${String.fromCharCode(97 + ((c * 5) % 7))}${c}`, modelId: `m${m}`, stages }))),
      { minLength: 0 },
    ).map((pipelines): SwarmPlan => ({ models: models.map((_, m): ModelSpec => ({ id: `m${m}`, layers: 4 })), pipelines })),
  );

type Step =
  | { readonly kind: 'telemetry'; readonly nodeId: string; readonly value: NodeTelemetry | undefined }
  | { readonly kind: 'extra'; readonly nodeId: string; readonly value: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('telemetry' as const), nodeId: fc.constantFrom(...POOL, 'ghost'), value: telemetryArb }),
  fc.record({ kind: fc.constant('extra' as const), nodeId: fc.constantFrom(...POOL, 'ghost'), value: extraArb }),
);

/** Every model: the index's choice equals the scan's, pipeline and cost bit for bit. */
function expectSameChoice(plan: SwarmPlan, index: RouterIndex, nodes: Record<string, NodeTelemetry>, extra: Record<string, number>): void {
  for (const model of plan.models) {
    const scan = cheapestIntact(planIndex(plan).pipelinesByModel.get(model.id) ?? [], nodes, DEFAULT, undefined, extra, model.layers);
    const best = index.best(model.id);
    expect(best?.pipeline.id).toBe(scan?.pipeline.id);
    if (best !== undefined && scan !== undefined) expect(Object.is(best.chain, scan.cost)).toBe(true);
  }
}

/** One update of the node table or the in-flight loads, told to the index. */
function applyStep(index: RouterIndex, nodes: Record<string, NodeTelemetry>, extra: Record<string, number>, step: Step): void {
  if (step.kind === 'telemetry') {
    if (step.value === undefined) delete nodes[step.nodeId];
    else nodes[step.nodeId] = step.value;
  } else if (step.value === 0) delete extra[step.nodeId];
  else extra[step.nodeId] = step.value;
  index.nodeChanged(step.nodeId);
}

describe('RouterIndex', () => {
  it('chooses the pipeline the scan chooses, with a bit-identical cost, after any sequence of updates', () => {
    fc.assert(
      fc.property(
        planArb,
        fc.array(telemetryArb, { minLength: POOL.length, maxLength: POOL.length }),
        fc.array(extraArb, { minLength: POOL.length, maxLength: POOL.length }),
        fc.array(stepArb, { maxLength: 30 }),
        (plan, telemetry, inflight, steps) => {
          const nodes: Record<string, NodeTelemetry> = {};
          const extra: Record<string, number> = {};
          POOL.forEach((id, i) => {
            const t = telemetry[i];
            if (t !== undefined) nodes[id] = t;
            if ((inflight[i] ?? 0) > 0) extra[id] = inflight[i] ?? 0;
          });
          const index = new RouterIndex(plan, nodes, extra);
          expectSameChoice(plan, index, nodes, extra);
          for (const step of steps) {
            applyStep(index, nodes, extra, step);
            expectSameChoice(plan, index, nodes, extra);
          }
        },
      ),
      SEEDED,
    );
  });

  it('chooses what the scan chooses after bursts of updates between two queries (past half the nodes: one rebuild)', () => {
    fc.assert(
      fc.property(
        planArb,
        fc.array(telemetryArb, { minLength: POOL.length, maxLength: POOL.length }),
        fc.array(fc.array(stepArb, { maxLength: 2 * POOL.length }), { maxLength: 4 }),
        (plan, telemetry, bursts) => {
          const nodes: Record<string, NodeTelemetry> = {};
          const extra: Record<string, number> = {};
          POOL.forEach((id, i) => {
            const t = telemetry[i];
            if (t !== undefined) nodes[id] = t;
          });
          const index = new RouterIndex(plan, nodes, extra);
          expectSameChoice(plan, index, nodes, extra);
          for (const burst of bursts) {
            for (const step of burst) applyStep(index, nodes, extra, step);
            expectSameChoice(plan, index, nodes, extra);
          }
        },
      ),
      SEEDED,
    );
  });

  it('breaks a tie by pipeline id, whatever the order of the plan', () => {
    const stage = (nodeId: string): Stage[] => [{ nodeId, layerStart: 0, layerEnd: 1 }];
    const plan: SwarmPlan = {
      models: [{ id: 'base', layers: 1 }],
      pipelines: ['base/c', 'base/a', 'base/d', 'base/b'].map((id, i): Pipeline => ({ id, modelId: 'base', stages: stage(`n${i}`) })),
    };
    const nodes: Record<string, NodeTelemetry> = {};
    for (let i = 0; i < 4; i++) nodes[`n${i}`] = { alive: true, samples: 0 };
    const index = new RouterIndex(plan, nodes, {});
    expect(index.best('base')?.pipeline.id).toBe('base/a');
    nodes['n1'] = { alive: false, samples: 0 };
    index.nodeChanged('n1');
    expect(index.best('base')?.pipeline.id).toBe('base/b');
    nodes['n1'] = { alive: true, samples: 0 };
    index.nodeChanged('n1');
    expect(index.best('base')?.pipeline.id).toBe('base/a');
  });

  it('ranks a copy with a suspect node after every intact copy without one, and before none', () => {
    const stage = (nodeId: string): Stage[] => [{ nodeId, layerStart: 0, layerEnd: 1 }];
    const plan: SwarmPlan = { models: [{ id: 'base', layers: 1 }], pipelines: ['base/a', 'base/b'].map((id, i): Pipeline => ({ id, modelId: 'base', stages: stage(`n${i}`) })) };
    const nodes: Record<string, NodeTelemetry> = { n0: { alive: true, samples: 1, latencyMs: 1 }, n1: { alive: true, samples: 1, latencyMs: 50 } };
    const index = new RouterIndex(plan, nodes, {});
    expect(index.best('base')?.pipeline.id).toBe('base/a');
    nodes['n0'] = { alive: true, samples: 1, latencyMs: 1, suspect: true };
    index.nodeChanged('n0');
    expect(index.best('base')?.pipeline.id).toBe('base/b'); // dearer, but nobody suspects it
    expect(index.bestWithout('base', 'n1')?.pipeline.id).toBe('base/a'); // the only copy left: suspect or not
    nodes['n1'] = { alive: false, samples: 1, latencyMs: 50 };
    index.nodeChanged('n1');
    expect(index.best('base')?.pipeline.id).toBe('base/a');
    nodes['n0'] = { alive: true, samples: 1, latencyMs: 1 };
    nodes['n1'] = { alive: true, samples: 1, latencyMs: 50 };
    index.nodeChanged('n0');
    index.nodeChanged('n1');
    expect(index.best('base')?.pipeline.id).toBe('base/a');
  });

  it('has no winner for a model without an intact pipeline, nor for an unknown model', () => {
    const plan: SwarmPlan = {
      models: [{ id: 'base', layers: 2 }, { id: 'empty', layers: 1 }],
      pipelines: [{ id: 'base/0', modelId: 'base', stages: [{ nodeId: 'a', layerStart: 0, layerEnd: 2 }] }],
    };
    const nodes: Record<string, NodeTelemetry> = { a: { alive: false, samples: 0 } };
    const index = new RouterIndex(plan, nodes, {});
    expect(index.best('base')).toBeUndefined();
    expect(index.best('empty')).toBeUndefined();
    expect(index.best('nope')).toBeUndefined();
    nodes['a'] = { alive: true, samples: 0 };
    index.nodeChanged('a');
    expect(index.best('base')?.pipeline.id).toBe('base/0');
  });
});

// ---------------------------------------------------------------------------------------------
// Through the runtime: swarm.route (index for default weights) against swarm.routeByScan.

const profiles: NodeProfile[] = Array.from({ length: 12 }, (_, i) => ({ id: `p${i}`, memoryGb: 4 + (i % 3) * 4, score: 1 + (i % 4), latencyMs: 2 + (i % 5) }));
const config: SwarmConfig = {
  models: [
    { id: 'base', layers: 8, pipelines: 3 },
    { id: 'coder', layers: 4, pipelines: 2, kind: 'expert' },
  ],
};

type Op =
  | { readonly op: 'report'; readonly node: number; readonly load?: number; readonly latencyMs?: number; readonly score?: number }
  | { readonly op: 'markDown' | 'markAlive'; readonly node: number }
  | { readonly op: 'reserve'; readonly model: 'base' | 'coder'; readonly tokens: number }
  | { readonly op: 'release'; readonly which: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('report' as const), node: fc.nat({ max: 11 }), load: fc.constantFrom(0, 0.3, 0.9), latencyMs: fc.constantFrom(1, 5, 40), score: fc.constantFrom(0.5, 2, 8) }, { requiredKeys: ['op', 'node'] }).filter((o) => Object.keys(o).length > 2) }, // a sample carries at least one value
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('markDown' as const, 'markAlive' as const), node: fc.nat({ max: 11 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('reserve' as const), model: fc.constantFrom('base' as const, 'coder' as const), tokens: fc.constantFrom(0, 512) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('release' as const), which: fc.nat({ max: 20 }) }) },
);

describe('Swarm.route', () => {
  it('matches routeByScan for the default weights after random report / markDown / markAlive / reserve / release', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.constantFrom(0, 100, 4096), (ops, tokens) => {
        const swarm = createSwarm(profiles, config, { seed: 1 });
        const leases: string[] = [];
        try {
          for (const o of ops) {
            const id = `p${'node' in o ? o.node : 0}`;
            if (o.op === 'report') {
              const { op: _op, node: _node, ...sample } = o;
              swarm.report(id, sample);
            } else if (o.op === 'markDown') swarm.markDown(id);
            else if (o.op === 'markAlive') swarm.markAlive(id);
            else if (o.op === 'reserve') {
              try {
                leases.push(swarm.route({ model: o.model, tokens: o.tokens }, { reserve: true }).lease.id);
              } catch (error) {
                if (!(error instanceof RoutingError)) throw error;
              }
            } else if (leases.length > 0 && 'which' in o) swarm.release(leases.splice(o.which % leases.length, 1)[0] as string);
            for (const model of ['base', 'coder']) {
              let scan;
              try {
                scan = swarm.routeByScan({ model, tokens });
              } catch (error) {
                if (error instanceof RoutingError && error.code === 'NoHealthyPipeline') continue; // served by a recovery, not the index
                throw error;
              }
              const route = swarm.route({ model, tokens });
              expect(route.pipelineId).toBe(scan.pipelineId);
              expect(Object.is(route.cost, scan.cost)).toBe(true);
              expect(route.stages).toEqual(scan.stages);
            }
          }
        } finally {
          swarm.stop();
        }
      }),
      { seed: 20260518, numRuns: 100 },
    );
  });
});
