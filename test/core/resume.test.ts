/**
 * resumeRoute (docs/sessions.md): the remaining layers after a failed stage, re-routed on live
 * nodes. Properties over generated swarms; every expectation is computed here by brute force.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pipelineCost, resumeRoute, RoutingError, type Pipeline, type Resumption, type Route, type Stage } from '../../src/index.js';
import { coversExactly, pipe, SEEDED, st, stateOf, thrown, worldArb, type World } from './fixtures.js';

const routeOf = (p: Pipeline, world: World): Route => ({ modelId: p.modelId, pipelineId: p.id, stages: p.stages, cost: pipelineCost(p.stages, world.state.nodes), hops: p.stages.length - 1, degraded: false });

const caseArb = fc.record({
  world: worldArb,
  pick: fc.nat(),
  index: fc.nat(),
  allowDegraded: fc.boolean(),
  prefer: fc.constantFrom('keep' as const, 'suffix' as const),
  alsoDead: fc.nat(),
});

interface Case {
  world: World;
  route: Route;
  failedIndex: number;
  failed: Stage;
  dead: Set<string>;
  layers: number;
  allowDegraded: boolean;
  prefer: 'keep' | 'suffix';
}

function build(c: { world: World; pick: number; index: number; allowDegraded: boolean; prefer: 'keep' | 'suffix'; alsoDead: number }): Case {
  const pipelines = c.world.plan.pipelines.filter((p) => p.modelId === 'm0');
  const p = pipelines[c.pick % pipelines.length] as Pipeline;
  const failedIndex = c.index % p.stages.length;
  const failed = p.stages[failedIndex] as Stage;
  const extra = c.world.nodeIds[c.alsoDead % c.world.nodeIds.length] as string;
  const dead = new Set<string>([failed.nodeId, extra]);
  for (const id of c.world.nodeIds) if (c.world.state.nodes[id]?.alive !== true) dead.add(id);
  const layers = c.world.plan.models.find((m) => m.id === 'm0')?.layers ?? 0;
  return { world: c.world, route: routeOf(p, c.world), failedIndex, failed, dead, layers, allowDegraded: c.allowDegraded, prefer: c.prefer };
}

function run(k: Case): Resumption | 'Unrecoverable' {
  try {
    return resumeRoute(k.route, k.failedIndex, k.world.state, { allowDegraded: k.allowDegraded, prefer: k.prefer, dead: [...k.dead] });
  } catch (e) {
    if (e instanceof RoutingError && e.code === 'Unrecoverable') return 'Unrecoverable';
    throw e;
  }
}

/** Layers of `[from, to)` held by a live node of some copy. */
const heldLive = (k: Case, layer: number) => k.world.plan.pipelines.some((p) => p.modelId === 'm0' && p.stages.some((s) => !k.dead.has(s.nodeId) && s.layerStart <= layer && layer < s.layerEnd));

/** A copy whose stages over `[from, L)` are all live. */
const intactSuffix = (k: Case) => k.world.plan.pipelines.some((p) => p.modelId === 'm0' && p.stages.every((s) => s.layerEnd <= k.failed.layerStart || !k.dead.has(s.nodeId)));

describe('resumeRoute properties', () => {
  it('covers exactly the remaining layers, contiguous, on live nodes, the stages before the failed one untouched', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const k = build(c);
        const r = run(k);
        const from = k.failed.layerStart;
        const allHeld = Array.from({ length: k.layers - from }, (_, i) => from + i).every((l) => {
          const keptLive = k.prefer === 'keep' && k.route.stages.slice(k.failedIndex).some((s) => !k.dead.has(s.nodeId) && s.layerStart <= l && l < s.layerEnd);
          return keptLive || heldLive(k, l);
        });
        if (r === 'Unrecoverable') {
          expect(allHeld).toBe(false);
          return;
        }
        expect(r.route.stages.slice(0, k.failedIndex)).toEqual(k.route.stages.slice(0, k.failedIndex));
        expect(r.resumeAt).toBe(k.failedIndex);
        expect(r.layerStart).toBe(from);
        const rest = r.route.stages.slice(r.resumeAt);
        for (const s of rest) expect(k.dead.has(s.nodeId)).toBe(false);
        if (!r.degraded) {
          expect(allHeld).toBe(true);
          expect(coversExactly(r.route.stages, k.layers)).toBe(true);
          expect(r.missingLayers).toEqual([]);
          expect(r.route.modelId).toBe('m0');
        } else {
          expect(allHeld).toBe(false);
          expect(k.allowDegraded).toBe(true);
          // what is served is contiguous within each piece, ordered, and never overlaps
          for (let i = 1; i < rest.length; i++) expect((rest[i] as Stage).layerStart).toBeGreaterThanOrEqual((rest[i - 1] as Stage).layerEnd);
          const missing = r.missingLayers.reduce((s, m) => s + m.layerEnd - m.layerStart, 0);
          const served = rest.reduce((s, x) => s + x.layerEnd - x.layerStart, 0);
          expect(missing + served).toBe(k.layers - from);
        }
      }),
      SEEDED,
    );
  });

  it('prefers a suffix of an intact copy to a splice (prefer: suffix)', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const k = { ...build(c), prefer: 'suffix' as const };
        const r = run(k);
        if (!intactSuffix(k)) {
          if (r !== 'Unrecoverable') expect(r.strategy).not.toBe('suffix');
          return;
        }
        expect(r).not.toBe('Unrecoverable');
        const res = r as Resumption;
        expect(res.strategy).toBe('suffix');
        // the new stages are one copy's stages, trimmed at the failed stage's first layer
        const rest = res.route.stages.slice(res.resumeAt);
        const owner = k.world.plan.pipelines.find((p) => p.modelId === 'm0' && p.stages.some((s) => s.nodeId === rest[0]?.nodeId));
        const trimmed = (owner?.stages ?? []).filter((s) => s.layerEnd > k.failed.layerStart).map((s) => ({ ...s, layerStart: Math.max(s.layerStart, k.failed.layerStart) }));
        expect(rest).toEqual(trimmed);
      }),
      SEEDED,
    );
  });

  it('keeps every live stage after the failed one and re-serves only dead spans (prefer: keep)', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const k = { ...build(c), prefer: 'keep' as const };
        const r = run(k);
        if (r === 'Unrecoverable') return;
        const rest = r.route.stages.slice(r.resumeAt);
        for (const s of k.route.stages.slice(k.failedIndex)) if (!k.dead.has(s.nodeId)) expect(rest).toContainEqual(s);
        // replaced = exactly the layers of dead stages that are now served
        const replacedLayers = r.replaced.reduce((sum, x) => sum + x.layerEnd - x.layerStart, 0);
        const deadServed = k.route.stages.slice(k.failedIndex).filter((s) => k.dead.has(s.nodeId)).reduce((sum, s) => sum + s.layerEnd - s.layerStart, 0);
        const missing = r.missingLayers.reduce((sum, m) => sum + m.layerEnd - m.layerStart, 0);
        expect(replacedLayers).toBe(deadServed - missing);
        for (const x of r.replaced) expect(k.dead.has(x.from)).toBe(true);
      }),
      SEEDED,
    );
  });

  it('re-serves a dead span from one copy when one live copy holds it all, else splices', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const k = { ...build(c), prefer: 'keep' as const };
        const r = run(k);
        if (r === 'Unrecoverable' || r.degraded) return;
        const tail = k.route.stages.slice(k.failedIndex);
        const lostRuns: Array<[number, number]> = [];
        for (const s of tail) {
          if (!k.dead.has(s.nodeId)) continue;
          const last = lostRuns[lostRuns.length - 1];
          if (last !== undefined && last[1] === s.layerStart) last[1] = s.layerEnd;
          else lostRuns.push([s.layerStart, s.layerEnd]);
        }
        const oneCopy = lostRuns.every(([a, b]) =>
          k.world.plan.pipelines.some((p) => p.modelId === 'm0' && p.stages.every((s) => s.layerEnd <= a || s.layerStart >= b || !k.dead.has(s.nodeId))),
        );
        expect(r.strategy).toBe(oneCopy ? 'copy' : 'splice');
      }),
      SEEDED,
    );
  });
});

describe('resumeRoute', () => {
  // Copy A: a1 [0,4) a2 [4,8) a3 [8,12); copy B: b1 [0,6) b2 [6,12).
  const plan = {
    models: [{ id: 'base', layers: 12, pipelines: 2 }],
    pipelines: [pipe('base/a', 'base', st('a1', 0, 4), st('a2', 4, 8), st('a3', 8, 12)), pipe('base/b', 'base', st('b1', 0, 6), st('b2', 6, 12))],
  };
  const route: Route = { modelId: 'base', pipelineId: 'base/a', stages: plan.pipelines[0]?.stages ?? [], cost: 0, hops: 2, degraded: false };

  it('counts the failed stage\'s node as dead even while the state says alive', () => {
    const r = resumeRoute(route, 1, stateOf(plan));
    expect(r.route.stages).toEqual([st('a1', 0, 4), st('b1', 4, 6), st('b2', 6, 8), st('a3', 8, 12)]);
    expect(r.strategy).toBe('copy');
    expect(r.replaced).toEqual([
      { layerStart: 4, layerEnd: 6, from: 'a2', to: 'b1' },
      { layerStart: 6, layerEnd: 8, from: 'a2', to: 'b2' },
    ]);
  });

  it("with prefer 'suffix' moves the remaining layers to the intact copy", () => {
    const r = resumeRoute(route, 1, stateOf(plan), { prefer: 'suffix' });
    expect(r.route.stages).toEqual([st('a1', 0, 4), st('b1', 4, 6), st('b2', 6, 12)]);
    expect(r.strategy).toBe('suffix');
  });

  it('throws Unrecoverable naming the layers no live node holds; degrades only when allowed', () => {
    const state = stateOf(plan, { b1: { alive: false } });
    const e = thrown(() => resumeRoute(route, 1, state), RoutingError);
    expect(e.code).toBe('Unrecoverable');
    expect(e.message).toContain('[4, 6)');
    const r = resumeRoute(route, 1, state, { allowDegraded: true });
    expect(r.degraded).toBe(true);
    expect(r.missingLayers).toEqual([{ layerStart: 4, layerEnd: 6 }]);
    expect(r.route.stages).toEqual([st('a1', 0, 4), st('b2', 6, 8), st('a3', 8, 12)]);
  });

  it('refuses a stage index outside the route', () => {
    expect(thrown(() => resumeRoute(route, 3, stateOf(plan)), RoutingError).code).toBe('InvalidRequest');
    expect(thrown(() => resumeRoute(route, 0.5, stateOf(plan)), RoutingError).code).toBe('InvalidRequest');
  });
});
