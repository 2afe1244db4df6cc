/**
 * Two orchestrators in this process on one replicated swarm over a real nats-server, for a test
 * file: started before its tests (one declared node, `a1`, of a 4-layer model) and closed after.
 */
import { afterAll, beforeAll } from 'vitest';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { NatsServer } from '../replication/nats-server.js';

/** Registers the pair's start and stop on swarm `swarm`; `started` is given them before the tests. */
export function replicatedPair(swarm: string, started: (pair: { a: RunningOrchestrator; b: RunningOrchestrator }) => void): void {
  let nats: NatsServer | undefined;
  let pair: { a: RunningOrchestrator; b: RunningOrchestrator } | undefined;
  beforeAll(async () => {
    nats = await NatsServer.start();
    const options = {
      models: [{ id: 'base', kind: 'base' as const, layers: 4, pipelines: 1 }],
      nodes: [{ id: 'a1', memoryGb: 8, score: 2 }],
      replication: { servers: [nats.url], swarm },
    };
    pair = { a: await startOrchestrator(options), b: await startOrchestrator(options) };
    started(pair);
  }, 30_000);
  afterAll(async () => {
    await pair?.a.close();
    await pair?.b.close();
    await nats?.dispose();
  });
}
