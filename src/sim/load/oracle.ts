/**
 * A reference, not an option: shortest expected delay computed from the engine's truth (every
 * node's real queue, speed and liveness, this instant): what better information alone could
 * reach. Greedy, one request at a time, so not a strict bound (a router can beat it at ρ 0.9).
 */
import type { Pick, Policy } from './router.js';

/** Shortest expected delay with perfect, instant knowledge of every queue. */
export const oracleSed: Policy = {
  id: 'oracle-sed',
  label: 'oracle shortest expected delay (reads the truth; reference only)',
  oracle: true,
  create: ({ topology, view }) => ({
    pick(): Pick | undefined {
      let best: number | undefined;
      let bestDelay = Infinity;
      for (const p of topology.pipelines) {
        let delay = topology.spec.hopMs * (p.stages.length + 1);
        let alive = true;
        for (const s of p.stages) {
          if (!view.alive(s.node)) {
            alive = false;
            break;
          }
          const slots = (topology.nodes[s.node] as { slots: number }).slots;
          // Work committed to this node ahead of it (per slot) plus its own service, at today's speed.
          delay += ((Math.max(view.outstanding(s.node) - slots + 1, 0) / slots + 1) * s.meanMs) / view.speed(s.node);
        }
        if (alive && delay < bestDelay) {
          bestDelay = delay;
          best = p.index;
        }
      }
      return best === undefined ? undefined : { pipeline: best, stages: (topology.pipelines[best] as { stages: Pick['stages'] }).stages };
    },
    done() {},
    telemetry() {},
    health() {},
  }),
};
