import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeRescue } from '../../machines/swarm.machine.js';
import { createSwarm, RoutingError, type NodeProfile } from '../../src/index.js';
import { kInternals } from '../../src/runtime/internal.js';

/**
 * markDown's rescue takes the routing index's O(log P) path when an intact copy is left; it must
 * give exactly what the scan path (serveModel + failoverInSwarm) gives, whatever the telemetry,
 * in-flight reservations and dead nodes.
 */
describe('computeRescue', () => {
  it('gives the same rescue from the index as from the scan', () => {
    const profile = fc.record({ memoryGb: fc.integer({ min: 2, max: 24 }), score: fc.integer({ min: 1, max: 20 }), latencyMs: fc.integer({ min: 1, max: 40 }) });
    const scenario = fc.record({
      nodes: fc.array(profile, { minLength: 4, maxLength: 12 }),
      copies: fc.integer({ min: 2, max: 4 }),
      loads: fc.array(fc.tuple(fc.nat(), fc.double({ min: 0, max: 1.5, noNaN: true })), { maxLength: 20 }),
      dead: fc.array(fc.nat(), { maxLength: 3 }),
      reserved: fc.integer({ min: 0, max: 6 }),
    });
    let exercised = 0;
    fc.assert(
      fc.property(scenario, (sc) => {
        const profiles: NodeProfile[] = sc.nodes.map((p, i) => ({ id: `n${i}`, ...p }));
        let swarm;
        try {
          swarm = createSwarm(profiles, { models: [{ id: 'base', layers: 8, pipelines: sc.copies }, { id: 'aux', layers: 3 }] }, { seed: 1 });
        } catch {
          return; // too small for this many copies
        }
        const id = (k: number) => profiles[k % profiles.length]?.id as string;
        for (const [k, load] of sc.loads) swarm.report(id(k), { load });
        for (const k of sc.dead) swarm.markDown(id(k));
        // Disjoint copies (docs/cost.md): three dead nodes can leave the base model no live copy.
        try {
          for (let i = 0; i < sc.reserved; i++) swarm.route({}, { reserve: true });
        } catch (e) {
          if (!(e instanceof RoutingError)) throw e;
        }
        const context = swarm.actor.getSnapshot().context;
        for (const p of profiles) {
          if (swarm.state().nodes[p.id]?.alive !== true) continue;
          const reads = swarm[kInternals].reads();
          const fast = computeRescue(context, p.id, reads);
          const scan = computeRescue(context, p.id, { ...reads, index: undefined });
          expect(fast).toEqual(scan);
          if (fast.recoveries.length > 0) exercised++;
        }
        swarm.stop();
      }),
      { seed: 4242, numRuns: 120 },
    );
    expect(exercised).toBeGreaterThan(50);
  });
});
