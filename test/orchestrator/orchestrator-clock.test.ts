/**
 * The orchestrator on an injected ManualClock: every event's `at`, the status's heartbeat ages,
 * the detector's suspicions and a generation's `ms` come from that clock, not the host's.
 * Nothing here waits on time: the clock moves only when the test advances it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { expectedDigest } from '../../src/wire/digest.js';
import { collectEvents, parseMetrics, waitFor, type ReceivedEvent } from './processes.js';

const START = 1_000_000;
const running: { orchestrator?: RunningOrchestrator; agents: RunningAgent[]; sse: AbortController } = { agents: [], sse: new AbortController() };

afterEach(async () => {
  running.sse.abort();
  await Promise.all(running.agents.map((a) => a.stop()));
  await running.orchestrator?.close();
  running.agents = [];
  running.sse = new AbortController();
  delete running.orchestrator;
});

async function start(clock: ManualClock, events: ReceivedEvent[]): Promise<RunningOrchestrator> {
  const orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: 4, pipelines: 1 }], clock });
  running.orchestrator = orchestrator;
  await collectEvents(`${orchestrator.url}/v1/events`, events, running.sse.signal);
  return orchestrator;
}

const post = async (base: string, path: string, body: unknown): Promise<{ status: number; body: any }> => {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
};

const event = (events: ReceivedEvent[], type: string): Promise<ReceivedEvent> => waitFor(type, () => events.find((e) => e.type === type), 5000);

describe('startOrchestrator({ clock })', () => {
  it('stamps events, heartbeat ages and the detector on the injected clock', async () => {
    const clock = new ManualClock(START);
    const events: ReceivedEvent[] = [];
    const o = await start(clock, events);
    expect((await event(events, 'hello')).data['at']).toBe(START);

    // A node that joins by hand (no agent behind the URL: it never heartbeats on its own).
    expect((await post(o.url, '/v1/nodes', { id: 'n1', memoryGb: 8, url: 'http://127.0.0.1:9' })).status).toBe(200);
    expect((await event(events, 'node.joined')).data).toMatchObject({ at: START, nodeId: 'n1' });
    expect((await event(events, 'swarm.planned')).data['at']).toBe(START);

    clock.advance(1000);
    expect((await post(o.url, '/v1/nodes/n1/heartbeat', {})).status).toBe(200);
    clock.advance(400);
    const status = (await (await fetch(`${o.url}/v1/status`)).json()) as any;
    expect(status.nodes).toEqual([expect.objectContaining({ id: 'n1', lastHeartbeatAgoMs: 400 })]);

    // The embedded Swarm runs its detector on the same clock: silence alone takes n1 down.
    const lastBeat = START + 1000;
    expect(o.swarm()?.state().nodes['n1']?.alive).toBe(true);
    clock.advance(10_000);
    const end = clock.now();
    expect(o.swarm()?.state().nodes['n1']?.alive).toBe(false);
    const suspected = await event(events, 'node.suspected');
    const down = await event(events, 'node.down');
    for (const e of [suspected, down]) {
      const at = e.data['at'] as number;
      expect(at).toBeGreaterThan(lastBeat + 400);
      expect(at).toBeLessThanOrEqual(end);
      expect(e.data['silentMs']).toBe(at - lastBeat);
    }
    expect(down.data['at'] as number).toBeGreaterThan(suspected.data['at'] as number);
    expect(down.data['cause']).toBe('detector');
  });

  it("shows the swarm's word on an agent: suspect, trusted again on its heartbeat, then down by the detector", async () => {
    const clock = new ManualClock(START);
    const events: ReceivedEvent[] = [];
    const o = await start(clock, events);
    expect((await post(o.url, '/v1/nodes', { id: 'n1', memoryGb: 8, url: 'http://127.0.0.1:9' })).status).toBe(200);
    await event(events, 'swarm.planned');
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      expect((await post(o.url, '/v1/nodes/n1/heartbeat', {})).body).toEqual({ id: 'n1', state: 'alive' });
    }
    const lastBeat = clock.now();
    const agent = async () => ((await (await fetch(`${o.url}/v1/status`)).json()) as any).nodes[0];
    while (o.swarm()?.node('n1')?.state === 'alive' && clock.now() - lastBeat < 10_000) clock.advance(100);
    expect(o.swarm()?.node('n1')?.state).toBe('suspect');
    expect(await agent()).toMatchObject({ id: 'n1', state: 'suspect', downCause: null });
    expect(parseMetrics(await (await fetch(`${o.url}/metrics`)).text()).get('hecate_nodes{state="suspect"}')).toBe(1);
    const suspectedAt = (await event(events, 'node.suspected')).data['at'] as number;
    expect(suspectedAt).toBeGreaterThan(clock.now() - 100);

    clock.advance(100);
    const heardAt = clock.now();
    expect((await post(o.url, '/v1/nodes/n1/heartbeat', {})).body).toEqual({ id: 'n1', state: 'alive' });
    const trusted = await event(events, 'node.trusted');
    expect(trusted.data).toEqual({ at: heardAt, nodeId: 'n1', suspectedForMs: heardAt - suspectedAt, silentMs: heardAt - lastBeat });
    expect(await agent()).toMatchObject({ state: 'alive', downCause: null });

    clock.advance(10_000);
    await event(events, 'node.down');
    expect(await agent()).toMatchObject({ state: 'down', downCause: 'detector' });
    const metrics = parseMetrics(await (await fetch(`${o.url}/metrics`)).text());
    expect([metrics.get('hecate_nodes{state="down"}'), metrics.get('hecate_nodes{state="alive"}'), metrics.get('hecate_nodes{state="suspect"}')]).toEqual([1, 0, 0]);
  });

  it("times a generation's ms on the injected clock: 0 while it stands still, though the agents take real time", async () => {
    const clock = new ManualClock(START);
    const events: ReceivedEvent[] = [];
    const o = await start(clock, events);
    // perLayerMs 5: the agents' stage work alone is at least 4 layers × 5 ms × (1 + 3) tokens of real time.
    running.agents.push(await startAgent({ id: 'a1', memoryGb: 8, score: 1, join: o.url, perLayerMs: 5, jitter: 0 }));
    await Promise.all(running.agents.map((a) => a.joined));
    await waitFor('the swarm planned', () => (o.swarm() !== undefined ? true : undefined), 10_000);
    const r = await post(o.url, '/v1/generate', { model: 'base', prompt: 'hello', steps: 3 });
    expect(r.status).toBe(200);
    expect(r.body.digest).toBe(expectedDigest(4, 'hello', 3));
    expect(r.body.ms).toBe(0);
    expect(r.body.path).toEqual([{ nodeId: 'a1', layers: [0, 4] }]);
  });
});
