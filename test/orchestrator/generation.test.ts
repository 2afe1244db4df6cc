/**
 * One Generation per request (src/orchestrator/generation.ts), in this process, its agents a
 * stand-in poster answering the stage calls: the deadline is checked once, admission is asked
 * once (by the session, through the swarm's one queue), the path and the cache reports are the
 * generation's own fields, and `POST /v1/generate`'s reply keeps its fields.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSwarm } from '../../src/index.js';
import type { Swarm } from '../../src/runtime/swarm.js';
import { kInternals } from '../../src/runtime/internal.js';
import { ManualClock } from '../../src/runtime/clock.js';
import type { PeerPost } from '../../src/net/peer-post.js';
import { decodeStageRequest, encodeStageReply, type StageRequest } from '../../src/wire/stage-protocol.js';
import { digestOf, digestTensor, digestTensors } from '../../src/wire/digest.js';
import { ServeError } from '../../src/wire/serve-error.js';
import { NodeRegistry } from '../../src/orchestrator/node-registry.js';
import { ServeMetrics } from '../../src/orchestrator/serve-metrics.js';
import { Generation, type GenerationOptions } from '../../src/orchestrator/generation.js';
import * as bounds from '../../src/orchestrator/work-bounds.js';

vi.mock('../../src/orchestrator/work-bounds.js', async (actual) => {
  const real = await actual<typeof import('../../src/orchestrator/work-bounds.js')>();
  return { ...real, checkFitsDeadline: vi.fn(real.checkFitsDeadline) };
});

const swarms: Swarm[] = [];
afterEach(() => {
  for (const s of swarms.splice(0)) s.stop();
  vi.clearAllMocks();
});

/** A swarm of one copy over two nodes, their agents answering every call (the first stage reporting `cached` tokens). */
function setUp(agents: { cached?: number } = {}) {
  const swarm = createSwarm([{ id: 'a', memoryGb: 6 }, { id: 'b', memoryGb: 6 }], { models: [{ id: 'base', layers: 12, pipelines: 1 }] }, { seed: 1 });
  swarms.push(swarm);
  const registry = new NodeRegistry();
  for (const id of ['a', 'b']) registry.addressed({ id, memoryGb: 6 }, `http://${id}`);
  const metrics = new ServeMetrics({ nodesByState: () => new Map(), inflightByNode: () => new Map(), routeCostByModel: () => new Map(), leases: () => 0 });
  const calls: StageRequest[] = [];
  const post: PeerPost = async (url, body) => {
    const call = decodeStageRequest(body as Uint8Array, 1);
    calls.push(call);
    const nodeId = new URL(url).hostname;
    const cachedTokens = call.prompt !== undefined && call.layerStart === 0 && agents.cached !== undefined ? { cachedTokens: Math.min(agents.cached, call.tokens) } : {};
    const reply = { nodeId, layerStart: call.layerStart, layerEnd: call.layerEnd, output: digestTensor((digestOf(call.input, 'input') * 31 + call.layerEnd) >>> 0), replayOutputs: digestTensors(call.replay.map((t) => digestOf(t, 'replay'))), ms: 0, ...cachedTokens };
    return new Response(encodeStageReply(reply), { status: 200, headers: { 'content-type': 'application/vnd.hecate.stage' } });
  };
  const options = (over: Partial<GenerationOptions> = {}): GenerationOptions => ({ swarm, request: { model: 'base', prompt: 'a prompt of some length', steps: 5 }, calls: { registry, metrics, post }, clock: new ManualClock(0), sessionNamespace: 'boot/', ...over });
  return { swarm, registry, metrics, calls, options };
}

describe('Generation', () => {
  it('checks its deadline once and asks admission once for all its steps; answers the same fields as before', async () => {
    const { swarm, options, calls } = setUp();
    const admit = vi.spyOn(swarm[kInternals].admission, 'admit');
    const swarmAdmit = vi.spyOn(swarm, 'admit');
    const generation = new Generation(options({ session: { deadlineMs: 60_000 } }));
    expect(bounds.checkFitsDeadline).toHaveBeenCalledTimes(1);
    const reply = await generation.run();
    expect(bounds.checkFitsDeadline).toHaveBeenCalledTimes(1); // not again after the wait, nor when it runs
    expect(admit).toHaveBeenCalledTimes(1); // five steps, one admission
    expect(swarmAdmit).not.toHaveBeenCalled(); // not a second way into the queue
    expect(generation.admissions).toBe(1);
    expect(generation.admission).toBe('admitted');
    expect(Object.keys(reply).sort()).toEqual(['digest', 'model', 'ms', 'path', 'resumes', 'sessionId', 'steps']);
    expect(reply.sessionId).toMatch(/^boot\/session-lease-\d+$/);
    expect(reply.path).toEqual(generation.path);
    expect(reply.path.map((h) => h.layers[0])).toEqual([...reply.path.map((h) => h.layers[0])].sort((x, y) => x - y));
    expect(reply.path[0]?.layers[0]).toBe(0);
    expect(reply.path.at(-1)?.layers[1]).toBe(12);
    expect(calls.every((c) => c.sessionId.startsWith('boot/session-'))).toBe(true);
    expect(calls.filter((c) => c.prompt !== undefined).every((c) => c.step === 0)).toBe(true); // the prompt goes with the first step only
    expect(swarm.inFlight()).toBe(0);
  });

  it('keeps the cache reports as its own fields and releases its lease with the agent\'s report', async () => {
    const { swarm, options } = setUp({ cached: 3 });
    const release = vi.spyOn(swarm, 'release');
    const generation = new Generation(options());
    await generation.run();
    expect(generation.cache.agent).toBe(3);
    expect(generation.cache.router).toBe(generation.route?.cachedTokens);
    expect(release).toHaveBeenCalledTimes(1);
    expect(release.mock.calls[0]?.[1]).toMatchObject({ cachedTokens: 3 });
  });

  it('refuses a deadline it cannot fit when built (422), before it asks admission', () => {
    const { swarm, options } = setUp();
    const admit = vi.spyOn(swarm[kInternals].admission, 'admit');
    let error: unknown;
    try {
      new Generation(options({ request: { model: 'base', prompt: 'x', steps: 4000 }, session: { deadlineMs: 1000 } }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ServeError);
    expect([(error as ServeError).status, (error as ServeError).field]).toEqual([422, 'steps']);
    expect(bounds.checkFitsDeadline).toHaveBeenCalledTimes(1);
    expect(admit).not.toHaveBeenCalled();
  });

  it('answers a full queue with the queue\'s refusal (429), recorded as its refusal, no lease left', async () => {
    const swarm = createSwarm([{ id: 'a', memoryGb: 6, slots: 1 }, { id: 'b', memoryGb: 6, slots: 1 }], { models: [{ id: 'base', layers: 12, pipelines: 1 }], admission: { queueSize: 0 } }, { seed: 1 });
    swarms.push(swarm);
    // One slot each, a stage half the copy's time: the copy holds two at once (docs/admission.md).
    const held = [swarm.route({ model: 'base' }, { reserve: true }), swarm.route({ model: 'base' }, { reserve: true })];
    expect(swarm.saturation().saturated).toBe(true);
    const { options } = setUp();
    const generation = new Generation(options({ swarm }));
    const error = await generation.run().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ServeError);
    expect([(error as ServeError).status, (error as ServeError).code]).toEqual([429, 'RateLimited']);
    expect((error as ServeError).message).toMatch(/^Saturated: /);
    expect(generation.admission).toBe('refused');
    expect(generation.admissions).toBe(1);
    for (const h of held) swarm.release(h.lease, {});
    expect(swarm.inFlight()).toBe(0);
  });

  it('refuses 504 NoRoute, once admitted, a generation its wait left too little time for: the same bound, not checked again', async () => {
    const swarm = createSwarm([{ id: 'a', memoryGb: 6, slots: 1 }, { id: 'b', memoryGb: 6, slots: 1 }], { models: [{ id: 'base', layers: 12, pipelines: 1 }] }, { seed: 1 });
    swarms.push(swarm);
    const held = [swarm.route({ model: 'base' }, { reserve: true }), swarm.route({ model: 'base' }, { reserve: true })];
    const { options } = setUp();
    const clock = new ManualClock(0);
    // 300 steps of 26 ms at least (12 layers × 2 ms, 2 calls): 7.8 s, within 10 s when built.
    const generation = new Generation(options({ swarm, clock, request: { model: 'base', prompt: 'p', steps: 300 }, session: { deadlineMs: 10_000 } }));
    const outcome = generation.run().then(() => undefined, (e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 20)); // it waits in the queue
    clock.advance(5000); // 5 s of its 10 go by waiting
    swarm.release(held[0]?.lease as never, {});
    const error = await outcome;
    expect(error).toBeInstanceOf(ServeError);
    expect([(error as ServeError).status, (error as ServeError).code]).toEqual([504, 'NoRoute']);
    expect((error as ServeError).message).toMatch(/^DeadlineExceeded: the generation waited 5000 ms for a slot/);
    expect(generation.admission).toBe('admitted'); // it had a slot: not a refusal of the queue's
    expect(bounds.checkFitsDeadline).toHaveBeenCalledTimes(1);
    swarm.release(held[1]?.lease as never, {});
    expect(swarm.inFlight()).toBe(0);
  });

  it('runs once', async () => {
    const { options } = setUp();
    const generation = new Generation(options({ request: { model: 'base', prompt: 'p', steps: 1 } }));
    await generation.run();
    await expect(generation.run()).rejects.toThrow(/runs once/);
  });
});
