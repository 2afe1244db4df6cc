/**
 * What an orchestrator process gives each generation (docs/serve.md): session ids that start
 * with its boot id, so a restarted orchestrator never reuses an id its agents were told to drop;
 * and leases that outlive the deadline, so an admitted slot is never freed while its work runs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { kInternals } from '../../src/runtime/internal.js';
import type { Swarm } from '../../src/runtime/swarm.js';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { waitFor } from './processes.js';

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

/** An orchestrator with one agent holding its one copy, planned. */
async function start(deadlineMs: number): Promise<RunningOrchestrator> {
  const orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: 4, pipelines: 1 }], deadlineMs });
  running.push({ stop: () => orchestrator.close() });
  const agent: RunningAgent = await startAgent({ id: 'g1', memoryGb: 4, score: 1, join: orchestrator.url, perLayerMs: 0.1, jitter: 0, heartbeatMs: 200 });
  running.unshift({ stop: () => agent.stop() });
  await agent.joined;
  await waitFor('the swarm planned', () => (orchestrator.swarm() !== undefined ? true : undefined), 10_000, 20);
  return orchestrator;
}

const generate = async (o: RunningOrchestrator) => (await (await fetch(`${o.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: 'ids', steps: 1 }) })).json()) as { sessionId: string };

describe('an orchestrator process', () => {
  it('prefixes its session ids with a boot id of its own, and leases for longer than the deadline', async () => {
    const first = await start(40_000);
    const a = await generate(first);
    expect(a.sessionId).toMatch(/^[0-9a-f]{8}\/session-lease-1$/);
    expect((first.swarm() as Swarm | undefined)?.[kInternals].genesis[1].leaseTtlMs).toBe(45_000);
    await Promise.all(running.splice(0).map((r) => r.stop()));
    const second = await start(10_000);
    const b = await generate(second);
    expect(b.sessionId).toMatch(/\/session-lease-1$/);
    expect(b.sessionId).not.toBe(a.sessionId); // the same lease number, another process
    expect((second.swarm() as Swarm | undefined)?.[kInternals].genesis[1].leaseTtlMs).toBe(30_000); // never below the default
  });
});
