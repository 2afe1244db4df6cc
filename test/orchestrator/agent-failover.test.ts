/**
 * An agent given several orchestrators (`--join URL1,URL2`) talks to one at a time and moves to
 * the next when it cannot reach it: at its first join, and when the one it talks to dies. Two
 * orchestrators alone here (no NATS): the second does not know the agent, so it joins there.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { freePort } from '../replication/nats-server.js';
import { waitFor } from './processes.js';

const orchestrators: RunningOrchestrator[] = [];
const agents: RunningAgent[] = [];
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await Promise.all(orchestrators.map((o) => o.close().catch(() => {}))); // one is closed already
});

const models = [{ id: 'base', kind: 'base' as const, layers: 4, pipelines: 1 }];
const joined = async (url: string, id: string): Promise<number> => {
  const status = (await (await fetch(`${url}/v1/status`)).json()) as { nodes: { id: string; joins: number; state: string }[] };
  return status.nodes.find((n) => n.id === id && n.state === 'alive')?.joins ?? 0;
};

describe('startAgent with several orchestrators', () => {
  it('joins the next orchestrator when the first cannot be reached', async () => {
    const b = await startOrchestrator({ models });
    orchestrators.push(b);
    const dead = `http://127.0.0.1:${await freePort()}`;
    const agent = await startAgent({ id: 'f1', memoryGb: 4, score: 1, join: [dead, b.url], heartbeatMs: 100 });
    agents.push(agent);
    await agent.joined;
    expect(agent.orchestrator()).toBe(b.url);
    expect(await joined(b.url, 'f1')).toBe(1);
  });

  it('moves to the next orchestrator when the one it talks to dies, and joins there', async () => {
    const a = await startOrchestrator({ models });
    const b = await startOrchestrator({ models });
    orchestrators.push(a, b);
    const lines: string[] = [];
    const agent = await startAgent({ id: 'f2', memoryGb: 4, score: 1, join: [a.url, b.url], heartbeatMs: 100, log: (l) => lines.push(l) });
    agents.push(agent);
    await agent.joined;
    expect(agent.orchestrator()).toBe(a.url);
    expect(await joined(a.url, 'f2')).toBe(1);
    expect(await joined(b.url, 'f2')).toBe(0);
    await a.close();
    await waitFor('f2 joined b', async () => ((await joined(b.url, 'f2')) === 1 ? true : undefined), 10_000, 50);
    expect(agent.orchestrator()).toBe(b.url);
    expect(lines.some((l) => l.startsWith(`heartbeat: ${a.url} unreachable; now talking to ${b.url}`))).toBe(true);
  });
});
