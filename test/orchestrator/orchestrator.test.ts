/**
 * The orchestrator and the agent in this process, on loopback: validation errors name the
 * field, joins plan the swarm, a generation returns the reference digest, leaves and events and
 * metrics follow. No timing is asserted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent/agent.js';
import { f32Tensor } from '../../src/wire/tensor.js';
import { postStage } from '../agent/stage-messages.js';
import { detectorBounds, SERVE_DETECTOR, startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { expectedDigest } from '../../src/wire/digest.js';
import { collectEvents, parseMetrics, waitFor, type ReceivedEvent } from './processes.js';

let orchestrator: RunningOrchestrator;
const agents: RunningAgent[] = [];
const events: ReceivedEvent[] = [];
const sse = new AbortController();

const post = async (path: string, body: unknown): Promise<{ status: number; body: any }> => {
  const response = await fetch(`${orchestrator.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
};

beforeAll(async () => {
  orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: 6, pipelines: 2 }] });
  await collectEvents(`${orchestrator.url}/v1/events`, events, sse.signal);
});

afterAll(async () => {
  sse.abort();
  await Promise.all(agents.map((a) => a.stop()));
  await orchestrator.close();
});

describe('startOrchestrator', () => {
  it('binds loopback and answers 503 NoSwarm until the agents can hold every copy', async () => {
    expect(orchestrator.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const r = await post('/v1/generate', { model: 'base', prompt: 'x', steps: 1 });
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe('NoSwarm');
  });

  it.each([
    [{ prompt: 'x', steps: 1 }, 'model'],
    [{ model: 'base', prompt: 'x', steps: 0 }, 'steps'],
    [{ model: 'base', prompt: 'x', steps: '2' }, 'steps'],
    [{ model: 'base', prompt: 'x', steps: 1.5 }, 'steps'],
    [{ model: 'base', prompt: 7, steps: 1 }, 'prompt'],
    [{ model: 'base', prompt: 'x', steps: 1, temperature: 1 }, 'temperature'],
    ['{"model":', 'body'],
  ])('refuses a bad generate body %j with 400 naming %s', async (body, field) => {
    const r = await post('/v1/generate', body);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'InvalidRequest', field });
  });

  it.each([
    [{ id: 'a', memoryGb: 4, url: 'ftp://x' }, 'url'],
    [{ id: 'a', memoryGb: -1, url: 'http://127.0.0.1:1' }, 'memoryGb'],
    [{ id: 'a b', memoryGb: 4, url: 'http://127.0.0.1:1' }, 'id'],
    [{ memoryGb: 4, url: 'http://127.0.0.1:1' }, 'id'],
  ])('refuses a bad join %j with 400 naming %s', async (body, field) => {
    const r = await post('/v1/nodes', body);
    expect(r.status).toBe(400);
    expect(r.body.error.field).toBe(field);
  });

  it('answers 404 in JSON to a heartbeat of an agent that never joined, and to an unknown path', async () => {
    const r = await post('/v1/nodes/ghost/heartbeat', {});
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'UnknownNode', field: 'id' });
    const g = await fetch(`${orchestrator.url}/v2/nothing`);
    expect(g.status).toBe(404);
    expect(((await g.json()) as any).error.code).toBe('NotFound');
  });

  it('plans once two agents join, runs a generation to the reference digest, and counts it', async () => {
    for (const [id, score] of [['a1', 1], ['a2', 2]] as const) agents.push(await startAgent({ id, memoryGb: 6, score, join: orchestrator.url, perLayerMs: 0.1 }));
    await Promise.all(agents.map((a) => a.joined));
    await waitFor('the swarm planned', () => (orchestrator.swarm() !== undefined ? true : undefined), 10_000);
    const r = await post('/v1/generate', { model: 'base', prompt: 'hello', steps: 5 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ model: 'base', steps: 5, digest: expectedDigest(6, 'hello', 5), resumes: 0 });
    expect(r.body.path.map((s: { layers: number[] }) => s.layers)).toEqual([[0, 6]]);
    const unknown = await post('/v1/generate', { model: 'other', prompt: 'x', steps: 1 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe('model');

    const metrics = parseMetrics(await (await fetch(`${orchestrator.url}/metrics`)).text());
    expect(metrics.get('hecate_requests_total{outcome="ok"}')).toBe(1);
    expect(metrics.get('hecate_session_steps_total')).toBe(5);
    expect(metrics.get('hecate_nodes{state="alive"}')).toBe(2);
    expect(metrics.get('hecate_node_joins_total{kind="join"}')).toBe(2);
    expect(metrics.get('hecate_route_cost{model="base"}')).toBeGreaterThan(0);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('hello');
    expect(types).toContain('swarm.planned');
    expect(types.filter((t) => t === 'node.joined')).toHaveLength(2);
  });

  it('reports the plan and the agents in /v1/status, and the detector bounds of its settings', async () => {
    const status = (await (await fetch(`${orchestrator.url}/v1/status`)).json()) as any;
    expect(status.status).toBe('healthy');
    expect(status.plan.pipelines).toHaveLength(2);
    expect(status.nodes.map((n: { id: string; state: string }) => `${n.id}:${n.state}`)).toEqual(['a1:alive', 'a2:alive']);
    expect(status.detector).toMatchObject(detectorBounds(SERVE_DETECTOR));
    expect(status.detector.suspectAfterMs).toBeLessThan(2000);
    expect(status.detector.downAfterMs).toBeGreaterThan(3000);
  });

  it('takes an agent that stops out of the swarm: node.left, and its heartbeats get 404 from then on', async () => {
    const leaving = agents.pop() as RunningAgent;
    await leaving.stop();
    await waitFor('node.left', () => events.find((e) => e.type === 'node.left' && e.data['nodeId'] === leaving.id), 5000);
    const r = await post(`/v1/nodes/${leaving.id}/heartbeat`, {});
    expect(r.status).toBe(404);
    const metrics = parseMetrics(await (await fetch(`${orchestrator.url}/metrics`)).text());
    expect(metrics.get('hecate_node_leaves_total')).toBe(1);
    expect(metrics.get('hecate_nodes{state="left"}')).toBe(1);
  });
});

describe('startAgent', () => {
  it('refuses to continue a session it holds nothing of, and a stage with no layers, naming the field', async () => {
    const agent = agents[0] as RunningAgent;
    const call = (body: object) => postStage(`${agent.url}/v1/stage`, { sessionId: 's', modelId: 'base', layerStart: 0, layerEnd: 3, step: 1, fresh: false, tokens: 1, input: 5, replay: [], ...body });
    const stale = await call({});
    expect(stale.status).toBe(409);
    expect(stale.body.error).toMatchObject({ code: 'UnknownSession', field: 'sessionId' });
    const empty = await call({ fresh: true, layerEnd: 0 });
    expect(empty.status).toBe(400);
    expect(empty.body.error.field).toBe('layerEnd');
    const badInput = await call({ fresh: true, input: f32Tensor(Float32Array.of(1), [1, 1]) }); // the digest engine takes u32 [1, 1] only
    expect(badInput.body.error.field).toBe('input');
  });

  it('rebuilds a session from its replay: a fresh call with the earlier inputs gives what a node that saw them gives', async () => {
    const agent = agents[0] as RunningAgent;
    const call = async (body: { sessionId: string; step: number; fresh: boolean; input: number; replay?: number[] }) => (await postStage(`${agent.url}/v1/stage`, { modelId: 'base', layerStart: 2, layerEnd: 5, tokens: 1, replay: [], ...body })).body;
    await call({ sessionId: 'kept', step: 0, fresh: true, input: 11 });
    await call({ sessionId: 'kept', step: 1, fresh: false, input: 22 });
    const kept = await call({ sessionId: 'kept', step: 2, fresh: false, input: 33 });
    const rebuilt = await call({ sessionId: 'moved', step: 2, fresh: true, input: 33, replay: [11, 22] });
    expect(rebuilt.output).toBe(kept.output);
    expect(rebuilt.replayOutputs).toHaveLength(2);
    expect(rebuilt).toMatchObject({ nodeId: agent.id, layerStart: 2, layerEnd: 5 });
  });
});
