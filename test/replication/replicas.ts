/**
 * Helpers of the replication tests: a small swarm's genesis, waiting for a condition on a real
 * connection, and the figures compared across replicas.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { swarmConfig, type NodeProfile } from '../../src/index.js';
import { connectSwarm, type ReplicatedSwarm } from '../../src/replication/index.js';
import { NatsServer } from './nats-server.js';

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

/**
 * One nats-server for a test file (started before its tests, removed after), and replicas of
 * {@link PROFILES} / {@link CONFIG} on it, each closed after the test that opened it.
 */
export function natsFixture(): { readonly server: NatsServer; replica(swarm: string, extra?: Partial<Parameters<typeof connectSwarm>[0]>): Promise<ReplicatedSwarm> } {
  let server: NatsServer | undefined;
  let open: ReplicatedSwarm[] = [];
  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterEach(async () => {
    for (const r of open) await r.close();
    open = [];
  });
  afterAll(async () => {
    await server?.dispose();
  });
  return {
    get server() {
      if (server === undefined) throw new Error('natsFixture: the server starts in beforeAll');
      return server;
    },
    async replica(swarm, extra = {}) {
      const r = await connectSwarm({ servers: this.server.url, swarm, profiles: PROFILES, config: CONFIG, ...extra });
      open.push(r);
      return r;
    },
  };
}
