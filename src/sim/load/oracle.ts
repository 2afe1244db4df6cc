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

/**
 * Clairvoyant earliest finish: knows every request's true size and every node's true speed, and
 * keeps the exact schedule of every node (FIFO, one slot: copies share no node, so a request
 * reaches every stage of its copy in the same order). Sends each request where it will finish
 * first. What immediate dispatch reaches with perfect foresight of service times: a reference for
 * W2, only exact while nodes keep their speed, stay alive and serve one request at a time.
 */
export const oracleEft: Policy = {
  id: 'oracle-eft',
  label: 'oracle earliest finish (knows sizes and the exact schedule; reference only)',
  oracle: true,
  create: ({ topology, view }) => {
    const hop = topology.spec.hopMs;
    const freeAt = new Float64Array(topology.nodes.length);
    const finishOn = (p: (typeof topology.pipelines)[number], now: number, size: number, commit: boolean): number => {
      let t = now + hop;
      for (const s of p.stages) {
        const done = Math.max(t, freeAt[s.node] ?? 0) + (size * s.meanMs) / view.speed(s.node);
        if (commit) freeAt[s.node] = done;
        t = done + hop;
      }
      return t;
    };
    return {
      pick(now: number): Pick | undefined {
        const size = view.requestSize();
        let best: (typeof topology.pipelines)[number] | undefined;
        let bestAt = Infinity;
        for (const p of topology.pipelines) {
          if (!p.stages.every((s) => view.alive(s.node))) continue;
          const at = finishOn(p, now, size, false);
          if (at < bestAt) {
            bestAt = at;
            best = p;
          }
        }
        if (best === undefined) return undefined;
        finishOn(best, now, size, true);
        // The token is the latency it predicts, exact under the conditions above (a test checks it).
        return { pipeline: best.index, stages: best.stages, token: bestAt - now };
      },
      done() {},
      telemetry() {},
      health() {},
    };
  },
};
