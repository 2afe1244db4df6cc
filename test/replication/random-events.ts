/**
 * Random membership events for the replication tests, from a seeded generator: downs, revivals,
 * joins and retirements of a small swarm's nodes, as a replica would propose them.
 */
import { mulberry32 } from '../../src/core/random.js';
import type { ReplicatedSwarm } from '../../src/replication/index.js';

/** A small deterministic generator in [0, 1): the core's mulberry32. */
export function rng(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() / 4294967296;
}

/**
 * Proposes `count` random events on `replica`, `inFlight` at a time; resolves with how many were
 * applied and how many were refused (a retired node marked down, a duplicate join: refused alike on
 * every replica). `ids` is the pool of node ids to pick from; joins add `<prefix>-<n>` nodes.
 */
export async function proposeRandom(replica: ReplicatedSwarm, count: number, seed: number, ids: readonly string[], prefix: string, inFlight = 16): Promise<{ applied: number; refused: number; failed: Error[] }> {
  const next = rng(seed);
  const pool = [...ids];
  let applied = 0;
  let refused = 0;
  const failed: Error[] = [];
  let joined = 0;
  const one = (): Promise<unknown> => {
    const r = next();
    const id = pool[Math.floor(next() * pool.length)] as string;
    if (r < 0.4) return replica.markDown(id);
    if (r < 0.8) return replica.markAlive(id);
    if (r < 0.92) {
      const nodeId = `${prefix}-${++joined}`;
      pool.push(nodeId);
      return replica.addNode({ id: nodeId, memoryGb: 4 + Math.floor(next() * 12), score: 1 + Math.floor(next() * 8), latencyMs: 3 + Math.floor(next() * 20) });
    }
    return replica.removeNode(id);
  };
  let started = 0;
  const lane = async () => {
    while (started < count) {
      started++;
      try {
        await one();
        applied++;
      } catch (error) {
        const e = error as Error & { code?: string };
        if (e.name === 'SwarmError' || e.name === 'PlanError') refused++;
        else failed.push(e);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { applied, refused, failed };
}
