/**
 * Helpers of the replication tests: a small swarm's genesis, waiting for a condition on a real
 * connection, and the figures compared across replicas.
 */
import { swarmConfig, type NodeProfile } from '../../src/index.js';
import type { ReplicatedSwarm } from '../../src/replication/index.js';

export const PROFILES: readonly NodeProfile[] = [
  { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 4 },
  { id: 'desktop', memoryGb: 16, score: 5, latencyMs: 6 },
  { id: 'laptop', memoryGb: 16, score: 3, latencyMs: 9 },
  { id: 'phone', memoryGb: 8, score: 1, latencyMs: 30 },
];
export const CONFIG = swarmConfig(12, 2);

let swarms = 0;
/** A swarm name no other test uses (each test gets its own stream). */
export const swarmName = (what: string) => `t${process.pid}-${what}-${++swarms}`;

/** Polls `check` every 20 ms until it is true; fails after `timeoutMs` with `what`. */
export async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits until every replica applied up to the same sequence, at least `seq`. */
export async function converged(replicas: readonly ReplicatedSwarm[], seq: number, timeoutMs = 20_000): Promise<void> {
  await until(() => replicas.every((r) => r.stats().applied >= seq), `every replica to apply sequence ${seq} (at ${replicas.map((r) => r.stats().applied).join(', ')})`, timeoutMs);
}
