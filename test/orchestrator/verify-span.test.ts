/**
 * Verification by redundant execution with real processes (docs/security.md, "Verification"):
 * three copies of a 4-layer model on three agents, every stage call verified (`--verify-sample 1`).
 * Honest, the swarm quarantines nobody; then one agent restarts answering wrong on half its calls
 * (`--lie-rate 0.5`) and is quarantined — down with cause `integrity`, in /v1/status, /metrics and
 * the event stream. The rates are scaled up so a few generations decide; the rates are measured in
 * bench/verify-spans.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSwarm } from '../../src/index.js';
import { expectedDigest } from '../../src/wire/digest.js';
import { planCopies, planNodes } from '../../src/orchestrator/verify-span.js';
import { collectEvents, parseMetrics, stopAll, waitFor, type Child, type ReceivedEvent } from './processes.js';
import { postJson, removeServeDirs, startAgentCli, startServe, statusNodes, topologyFile, type StartedServe } from './edge-helpers.js';

const LAYERS = 4;
const topology = topologyFile('verify', {
  models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 3 }],
  nodes: [
    { id: 'a', memoryGb: 6, score: 2 },
    { id: 'b', memoryGb: 6, score: 2 },
    { id: 'c', memoryGb: 6, score: 2 },
  ],
});
const sse = new AbortController();

afterAll(async () => {
  sse.abort();
  await stopAll();
  removeServeDirs();
});

describe('planCopies', () => {
  it('finds the other copies of a span on the chaos topology, hop by hop, fewest hops first, only alive and not excluded', () => {
    const nodes = [1, 1.5, 2, 2.5, 3, 2, 1.5, 1].map((score, i) => ({ id: `n${i + 1}`, memoryGb: 6, score }));
    const swarm = createSwarm(nodes, { models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 3 }] }, { seed: 1 });
    const spans = swarm.state().plan.pipelines.map((p) => p.stages.map((s) => `${s.nodeId}:${s.layerStart}-${s.layerEnd}`).join(' '));
    expect(spans).toEqual(['n5:0-5 n4:5-9 n3:9-12', 'n6:0-6 n2:6-12', 'n7:0-6 n1:6-9 n8:9-12']);
    expect(planCopies(swarm, { modelId: 'base', layerStart: 5, layerEnd: 9 }, new Set(['n4']))).toEqual([
      [{ nodeId: 'n6', layerStart: 5, layerEnd: 6 }, { nodeId: 'n2', layerStart: 6, layerEnd: 9 }],
      [{ nodeId: 'n7', layerStart: 5, layerEnd: 6 }, { nodeId: 'n1', layerStart: 6, layerEnd: 9 }],
    ]);
    expect(planCopies(swarm, { modelId: 'base', layerStart: 9, layerEnd: 12 }, new Set(['n3', 'n2']))).toEqual([[{ nodeId: 'n8', layerStart: 9, layerEnd: 12 }]]);
    // Third parties beside the copies: every alive node of the model's pipelines outside the exclusions.
    expect(planNodes(swarm, { modelId: 'base', layerStart: 9, layerEnd: 12 }, new Set(['n3', 'n2', 'n8']))).toEqual(['n1', 'n4', 'n5', 'n6', 'n7']);
    swarm.markDown('n8');
    expect(planCopies(swarm, { modelId: 'base', layerStart: 9, layerEnd: 12 }, new Set(['n3', 'n2']))).toEqual([]);
    expect(planNodes(swarm, { modelId: 'base', layerStart: 9, layerEnd: 12 }, new Set(['n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7']))).toEqual([]);
    expect(planNodes(swarm, { modelId: 'other', layerStart: 0, layerEnd: 12 }, new Set())).toEqual([]);
    expect(planCopies(swarm, { modelId: 'other', layerStart: 0, layerEnd: 12 }, new Set())).toEqual([]);
    swarm.stop();
  });
});

describe('verification by redundant execution (real processes)', () => {
  let serve: StartedServe;
  const agents = new Map<string, Child>();
  /** Starts agent `id`; resolves once the orchestrator has it alive at the new agent's URL. */
  async function startAgent(id: string, extra: readonly string[] = []): Promise<void> {
    const { child, url } = await startAgentCli(id, serve, 6, 2, ['--per-layer-ms', '0.1', ...extra], { process: id === 'b' }); // b is killed
    agents.set(id, child);
    await waitFor(`agent ${id} alive at ${url}`, async () => {
      const n = (await statusNodes(serve.url, serve.operatorToken)).get(id);
      return n?.state === 'alive' && n.url === url ? true : undefined;
    }, 20_000);
  }
  beforeAll(async () => {
    serve = await startServe('serve', ['--topology', topology, '--verify-sample', '1']);
    await Promise.all(['a', 'b', 'c'].map((id) => startAgent(id)));
  }, 60_000);

  const metric = async (key: string): Promise<number> => parseMetrics(await (await fetch(`${serve.url}/metrics`)).text()).get(key) ?? 0;

  it('quarantines nobody in an honest swarm, every call verified', async () => {
    for (let i = 0; i < 6; i++) {
      const reply = await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: `honest ${i}`, steps: 3 });
      expect(reply.body.digest).toBe(expectedDigest(LAYERS, `honest ${i}`, 3));
    }
    expect(await metric('hecate_verifications_total{verdict="agreed"}')).toBeGreaterThanOrEqual(18);
    expect(await metric('hecate_verifications_total{verdict="quarantined"}')).toBe(0);
    expect([...(await statusNodes(serve.url)).values()].map((n) => n.state)).toEqual(['alive', 'alive', 'alive']);
    // Every session, the checks' own (`<id>~v<n>`) included, was dropped on the agents once over.
    const urls = [...(await statusNodes(serve.url, serve.operatorToken)).values()].map((n) => n.url as string);
    await waitFor('no session left on any agent', async () => {
      const held = await Promise.all(urls.map(async (u) => ((await (await fetch(`${u}/v1/health`)).json()) as { sessions: number }).sessions));
      return held.every((n) => n === 0) ? true : undefined;
    }, 5_000);
  }, 60_000);
  it('quarantines an agent that answers wrong: down with cause integrity, in status, metrics and events', async () => {
    // Agent b restarts as a liar (the same id and key: a rejoin) and answers wrong on half its calls.
    agents.get('b')?.process.kill('SIGKILL');
    await startAgent('b', ['--lie-rate', '0.5', '--seed', '7']);
    const events: ReceivedEvent[] = [];
    await collectEvents(`${serve.url}/v1/events`, events, sse.signal);
    for (let i = 0; i < 12 && (await statusNodes(serve.url)).get('b')?.state !== 'down'; i++) {
      const reply = await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: `lie ${i}`, steps: 3 });
      expect(reply.status).toBe(200);
    }
    expect((await statusNodes(serve.url)).get('b')).toMatchObject({ state: 'down', downCause: 'integrity' });
    expect(await metric('hecate_detection_events_total{event="node.down",cause="integrity"}')).toBe(1);
    expect(await metric('hecate_verifications_total{verdict="quarantined"}')).toBe(1);
    await waitFor('the node.down event', async () => events.find((e) => e.type === 'node.down'), 5000);
    expect(events.filter((e) => e.type === 'node.down').map((e) => (e.data as { nodeId: string; cause: string }))).toMatchObject([{ nodeId: 'b', cause: 'integrity' }]);
    // Quarantined, it is called no more: every later answer is right.
    const after = await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: 'after', steps: 3 });
    expect(after.body.digest).toBe(expectedDigest(LAYERS, 'after', 3));
    expect(after.body.path.map((s: { nodeId: string }) => s.nodeId)).not.toContain('b');
  }, 60_000);
});
