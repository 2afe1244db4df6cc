/**
 * Two orchestrators in this process on one replicated swarm (a real nats-server): an agent that
 * joins, heartbeats to and leaves one of them is shown by both from the owners of its facts — its
 * state and last heartbeat from each one's node actor (which hears the heartbeat subject), its
 * address and its leave from the shared directory.
 */
import { describe, expect, it } from 'vitest';
import type { RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { until } from '../replication/replicas.js';
import { waitFor } from './processes.js';
import { replicatedPair } from './replicated-pair.js';

let a: RunningOrchestrator;
let b: RunningOrchestrator;
replicatedPair('agents', (pair) => ({ a, b } = pair));

const post = async (url: string): Promise<{ status: number; body: any }> => {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(url.endsWith('/v1/nodes') ? { id: 'a1', memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' } : {}) });
  return { status: response.status, body: await response.json() };
};
const agent = async (o: RunningOrchestrator): Promise<any> => ((await (await fetch(`${o.url}/v1/status`)).json()) as any).nodes[0];

describe('an agent of a replicated swarm, as both orchestrators show it', () => {
  it('is absent, then alive and heard on both, then left on both', async () => {
    expect(await agent(a)).toMatchObject({ id: 'a1', state: 'absent', url: null, lastHeartbeatAgoMs: null });
    expect(await agent(b)).toMatchObject({ id: 'a1', state: 'absent', url: null, lastHeartbeatAgoMs: null });

    expect((await post(`${a.url}/v1/nodes`)).body).toMatchObject({ id: 'a1', rejoin: false, state: 'alive' });
    // B learns the address from the directory, the revival from the log, the join's heartbeat from the heartbeat subject.
    await waitFor('b to show a1 alive and heard', async () => {
      const seen = await agent(b);
      return seen.state === 'alive' && seen.url === 'http://127.0.0.1:9' && seen.lastHeartbeatAgoMs !== null ? true : undefined;
    }, 15_000);
    expect((await agent(b)).joins).toBe(0); // it joined A, not B

    const before = Date.now();
    expect((await post(`${a.url}/v1/nodes/a1/heartbeat`)).body).toEqual({ id: 'a1', state: 'alive' });
    await until(() => (b.swarm()?.node('a1')?.heardAt ?? 0) >= before, 'b to hear the heartbeat given to a');
    expect((await agent(b)).lastHeartbeatAgoMs).toBeLessThan(Date.now() - before + 1);

    // It leaves: out of the plan, shown left on both; A, which it left through, keeps its last
    // heartbeat as its node had it (the node is gone).
    expect((await post(`${a.url}/v1/nodes/a1/leave`)).body).toEqual({ id: 'a1', how: 'removed' });
    await waitFor('b to show a1 left', async () => ((await agent(b)).state === 'left' ? true : undefined), 15_000);
    expect(a.swarm()?.node('a1')).toBeUndefined();
    expect(await agent(a)).toMatchObject({ state: 'left', downCause: null });
    expect((await agent(a)).lastHeartbeatAgoMs).not.toBeNull();
    expect((await post(`${b.url}/v1/nodes/a1/heartbeat`)).status).toBe(404);
    expect((await post(`${a.url}/v1/nodes/a1/heartbeat`)).status).toBe(404);
  });
});
