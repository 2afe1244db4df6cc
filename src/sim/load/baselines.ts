/**
 * The balancers users would pick instead, implemented as their usual libraries do: each router
 * counts only its own outstanding requests and learns health from the same monitor as ours.
 */
import { HealthView, type Pick, type Policy, type Router, type RouterContext } from './router.js';
import type { BuiltTopology } from './load-topology.js';

/** Shared plumbing: the live set and this router's outstanding requests per copy. */
abstract class CountingRouter implements Router {
  protected readonly healthView: HealthView;
  protected readonly outstanding: number[];
  constructor(protected readonly context: RouterContext) {
    this.healthView = new HealthView(context.topology);
    this.outstanding = context.topology.pipelines.map(() => 0);
  }
  protected abstract choose(live: readonly number[], now: number): number;
  pick(now: number): Pick | undefined {
    const live = this.healthView.live();
    if (live.length === 0) return undefined;
    const index = this.choose(live, now);
    this.outstanding[index] = (this.outstanding[index] ?? 0) + 1;
    return { pipeline: index, stages: (this.context.topology.pipelines[index] as BuiltTopology['pipelines'][number]).stages };
  }
  done(_now: number, pick: Pick): void {
    this.outstanding[pick.pipeline] = (this.outstanding[pick.pipeline] ?? 0) - 1;
  }
  telemetry(): void {}
  health(_now: number, nodeId: string, alive: boolean): void {
    this.healthView.health(nodeId, alive);
  }
}

/**
 * Smooth weighted round-robin (nginx), weights = each copy's capacity: the static configuration
 * an operator who knows the machines would write.
 */
export const weightedRoundRobin: Policy = {
  id: 'wrr',
  label: 'weighted round-robin (smooth, weights = capacity)',
  create: (context) =>
    new (class extends CountingRouter {
      private readonly current = context.topology.pipelines.map(() => 0);
      protected choose(live: readonly number[]): number {
        let total = 0;
        let best = live[0] as number;
        for (const i of live) {
          const w = (context.topology.pipelines[i] as BuiltTopology['pipelines'][number]).capacity;
          total += w;
          this.current[i] = (this.current[i] ?? 0) + w;
          if ((this.current[i] as number) > (this.current[best] as number)) best = i;
        }
        this.current[best] = (this.current[best] as number) - total;
        return best;
      }
    })(context),
};

/** Uniformly random live copy. */
export const randomPolicy: Policy = {
  id: 'random',
  label: 'random (uniform)',
  create: (context) =>
    new (class extends CountingRouter {
      protected choose(live: readonly number[]): number {
        return live[context.rng.int(live.length)] as number;
      }
    })(context),
};

/** The live copy with the fewest of this router's outstanding requests; ties at random. */
export const leastOutstanding: Policy = {
  id: 'least-outstanding',
  label: 'least outstanding requests',
  create: (context) =>
    new (class extends CountingRouter {
      protected choose(live: readonly number[]): number {
        let best = -1;
        let ties = 0;
        let min = Infinity;
        for (const i of live) {
          const o = this.outstanding[i] as number;
          if (o < min) {
            min = o;
            best = i;
            ties = 1;
          } else if (o === min && context.rng.int(++ties) === 0) best = i; // reservoir: uniform among ties
        }
        return best;
      }
    })(context),
};

/** Two distinct live copies at random (indexes i ≠ j), the one of them with fewer outstanding. */
export function twoRandom(live: readonly number[], rng: RouterContext['rng']): [number, number] {
  const a = rng.int(live.length);
  let b = rng.int(live.length - 1);
  if (b >= a) b++;
  return [live[a] as number, live[b] as number];
}

/** Power of two choices on outstanding requests (as tower's p2c with a pending-requests load). */
export const powerOfTwo: Policy = {
  id: 'p2c',
  label: 'power of two choices (outstanding requests)',
  create: (context) =>
    new (class extends CountingRouter {
      protected choose(live: readonly number[]): number {
        if (live.length === 1) return live[0] as number;
        const [a, b] = twoRandom(live, context.rng);
        return (this.outstanding[a] as number) <= (this.outstanding[b] as number) ? a : b;
      }
    })(context),
};
