/**
 * The churn of issue 39's measurement, reusable by the rebalance bench and its tests: a seeded
 * swarm of nodes of 6–24 GB and score 1–8 (drawn at random), then a number of churn events, each a
 * random node retired or a new one added (a fair coin), through the real `Swarm`'s `removeNode`
 * and `addNode`. The same seed gives the same swarm, events and plan.
 */
import { uniform } from '../src/core/random.js';
import { createSwarm, type ModelSpec, type NodeProfile, type Swarm, type SwarmOptions } from '../src/index.js';

/** One drawn node: memory a whole number of GB in [6, 24], score in [1, 8] to 0.01. */
function drawNode(random: () => number, id: string): NodeProfile {
  const memoryGb = Math.round(6 + 18 * random());
  const score = Math.round((1 + 7 * random()) * 100) / 100;
  return { id, memoryGb, score };
}

/** What {@link churnedSwarm} gives: the swarm after the churn, and its members. */
export interface Churned {
  readonly swarm: Swarm;
  /** The members after the churn, in join order. */
  readonly profiles: readonly NodeProfile[];
  readonly retired: number;
  readonly added: number;
}

/**
 * A swarm of `nodes` drawn nodes serving `models`, after `events` churn events (a random member
 * retired or a drawn newcomer added, a fair coin each; a retirement is skipped for a swarm down to
 * a quarter of its start). Growth and retirement are the Swarm's own (the telomerase); `options`
 * are createSwarm's (a clock, a rebalancer: the tests' swarms).
 */
export function churnedSwarm(seed: number, models: readonly ModelSpec[], nodes = 120, events = 200, options: SwarmOptions = {}): Churned {
  const random = uniform(seed);
  const start = Array.from({ length: nodes }, (_, i) => drawNode(random, `n${i}`));
  const swarm = createSwarm(start, { models: models.map((m) => ({ ...m })) }, { seed, ...options });
  const members = new Map(start.map((p) => [p.id, p] as const));
  let next = nodes;
  let retired = 0;
  let added = 0;
  for (let e = 0; e < events; e++) {
    if (random() < 0.5 && members.size > nodes / 4) {
      const ids = [...members.keys()];
      const id = ids[Math.floor(random() * ids.length)] as string;
      swarm.removeNode(id);
      members.delete(id);
      retired++;
    } else {
      const p = drawNode(random, `n${next++}`);
      swarm.addNode(p);
      members.set(p.id, p);
      added++;
    }
  }
  return { swarm, profiles: [...members.values()], retired, added };
}

/** The single model of the measurement: 32 layers of 1 GB. */
export const ONE_MODEL: readonly ModelSpec[] = [{ id: 'base', layers: 32 }];

/** Several models built the same way: a base model of 32 layers in 2 copies and two experts of 16. */
export const THREE_MODELS: readonly ModelSpec[] = [
  { id: 'base', layers: 32, pipelines: 2 },
  { id: 'code', layers: 16, pipelines: 1 },
  { id: 'math', layers: 16, pipelines: 1 },
];
