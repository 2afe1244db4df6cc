import { describe, expect, it } from 'vitest';
import {
  caught,
  createSwarm,
  PlanError,
  RoutingError,
  swarmConfig,
  SwarmError,
  validatePlan,
  type InspectionEventLike,
  type NodeProfile,
  type Swarm,
  type SwarmConfig,
} from './fixtures.js';

const four: NodeProfile[] = ['n1', 'n2', 'n3', 'n4'].map((id) => ({ id, memoryGb: 8, score: 1, latencyMs: 5 }));
// base/0 = n1[0,6) n2[6,12); base/1 = n3[0,6) n4[6,12); tiny/0 = n1[0,2). Exactly the asked copies
// (furtherCopies: false): these tests walk the lifecycle of two copies with spare memory.
const withReserve: SwarmConfig = {
  models: [
    { id: 'base', layers: 12, pipelines: 2, fallback: 'tiny' },
    { id: 'tiny', layers: 2, kind: 'expert' },
  ],
  furtherCopies: false,
};

const lab: NodeProfile[] = [
  { id: 'gpu', memoryGb: 24, score: 10, latencyMs: 4 },
  { id: 'desktop', memoryGb: 16, score: 5, latencyMs: 6 },
  { id: 'laptop', memoryGb: 12, score: 3, latencyMs: 9 },
  { id: 'phone', memoryGb: 4, score: 0.5, latencyMs: 30 },
];

const nodesOf = (route: { stages: readonly { nodeId: string }[] }) => route.stages.map((s) => s.nodeId);

function snapshot(swarm: Swarm) {
  return JSON.stringify({ status: swarm.status(), state: swarm.state() });
}

describe('createSwarm', () => {
  it('plans, starts healthy and serves the base model by default', () => {
    const swarm = createSwarm(lab, swarmConfig(12, 2));
    expect(swarm.status()).toBe('healthy');
    const route = swarm.route({ tokens: 512 });
    expect(route.modelId).toBe('base');
    expect(route.degraded).toBe(false);
    expect(validatePlan(swarm.state().plan, lab)).toEqual([]);
    swarm.stop();
  });

  it('throws a PlanError naming the culprit on bad profiles, and InsufficientCapacity when the swarm is too small', () => {
    const dup = caught(() => createSwarm([...lab, { id: 'gpu', memoryGb: 1 }], swarmConfig(12, 1)));
    expect(dup).toBeInstanceOf(PlanError);
    expect(String((dup as Error).message)).toContain('"gpu"');
    const small = caught(() => createSwarm(lab, swarmConfig(200, 2)));
    expect((small as PlanError).code).toBe('InsufficientCapacity');
    expect((small as Error).message).toContain('"base"');
  });

  it('refuses a bad option with SwarmError InvalidInput', () => {
    const error = caught(() => createSwarm(lab, { ...swarmConfig(12, 1), alpha: 0 }));
    expect((error as SwarmError).code).toBe('InvalidInput');
    expect((error as Error).message).toContain('alpha');
  });
});

describe('Swarm.route', () => {
  it('serves exactly the requested model: an idle expert never stands in for the base', () => {
    const swarm = createSwarm(four, withReserve);
    swarm.markDown('n1');
    swarm.markDown('n3');
    // Both base copies lost their first stage and no node holds layers [0,6) any more.
    const route = swarm.route();
    expect(route.degraded).toBe(true);
    expect(route.modelId).toBe('tiny'); // the reserve is reported, never passed off as the base
    const tiny = caught(() => swarm.route({ model: 'tiny' }));
    expect((tiny as RoutingError).code).toBe('NoHealthyPipeline');
    expect((caught(() => swarm.route({ model: 'nope' })) as RoutingError).code).toBe('UnknownModel');
    swarm.stop();
  });

  it('serves a splice when no intact copy is left but every layer has a live holder', () => {
    const swarm = createSwarm(four, withReserve);
    swarm.markDown('n3'); // base/1 broken
    swarm.markDown('n2'); // base/0 broken: [6,12) is still held by n4
    const route = swarm.route();
    expect(route.degraded).toBe(false);
    expect(nodesOf(route)).toEqual(['n1', 'n4']);
    expect(route.stages.map((s) => [s.layerStart, s.layerEnd])).toEqual([
      [0, 6],
      [6, 12],
    ]);
    swarm.stop();
  });
});

describe('Swarm.markDown', () => {
  it('computes the rescue from the route that used the node, before marking it', () => {
    const swarm = createSwarm(four, withReserve);
    const served = swarm.route();
    const victim = served.stages[0]?.nodeId as string;
    const rescue = swarm.markDown(victim);
    expect(rescue.nodeId).toBe(victim);
    expect(rescue.status).toBe('degraded');
    const base = rescue.recoveries.find((r) => r.modelId === 'base');
    expect(base?.strategy).toBe('copy');
    expect(base?.from.pipelineId).toBe(served.pipelineId);
    expect(nodesOf(base!.from)).toContain(victim);
    expect(nodesOf(base!.route)).not.toContain(victim);
    expect(swarm.route().pipelineId).toBe(base?.route.pipelineId);
    swarm.stop();
  });

  it('goes copy → splice → degraded → Unrecoverable as copies run out', () => {
    const swarm = createSwarm(four, withReserve);
    expect(swarm.route().pipelineId).toBe('base/0'); // equal costs: the tie goes to the smaller id
    expect(swarm.markDown('n2').recoveries.find((r) => r.modelId === 'base')?.strategy).toBe('copy');
    const splice = swarm.markDown('n3').recoveries.find((r) => r.modelId === 'base');
    expect(splice?.strategy).toBe('splice');
    expect(splice?.replaced).toEqual([{ layerStart: 0, layerEnd: 6, from: 'n3', to: 'n1' }]);
    expect(nodesOf(splice!.route)).toEqual(['n1', 'n4']);
    const degraded = swarm.markDown('n4').recoveries.find((r) => r.modelId === 'base');
    expect(degraded?.strategy).toBe('degraded');
    expect(degraded?.route.modelId).toBe('tiny');
    expect(degraded?.missingLayers).toEqual([{ layerStart: 6, layerEnd: 12 }]);
    expect(nodesOf(degraded!.route)).toEqual(['n1']);
    expect(swarm.status()).toBe('degraded'); // n1 still alive: degraded, not failed
    const last = swarm.markDown('n1');
    expect(last.unrecoverable).toContain('base');
    expect(last.status).toBe('failed');
    swarm.stop();
  });

  it('reports Unrecoverable instead of degrading when the config forbids it', () => {
    const swarm = createSwarm(four, { ...withReserve, allowDegraded: false });
    swarm.markDown('n2');
    swarm.markDown('n3');
    const rescue = swarm.markDown('n4');
    expect(rescue.unrecoverable).toEqual(['base']);
    expect(rescue.recoveries.filter((r) => r.modelId === 'base')).toEqual([]);
    expect((caught(() => swarm.route()) as RoutingError).code).toBe('NoHealthyPipeline');
    swarm.stop();
  });

  it('is a no-op for a node already down, and UnknownNode for a stranger (changing nothing)', () => {
    const swarm = createSwarm(lab, swarmConfig(12, 2));
    swarm.markDown('gpu');
    const before = snapshot(swarm);
    const again = swarm.markDown('gpu');
    expect(again.recoveries).toEqual([]);
    expect(snapshot(swarm)).toBe(before);
    const error = caught(() => swarm.markDown('toaster'));
    expect((error as SwarmError).code).toBe('UnknownNode');
    expect((error as Error).message).toContain('"toaster"');
    expect(snapshot(swarm)).toBe(before);
    swarm.stop();
  });

  it('is failed only at zero live nodes, and markAlive brings it back to healthy', () => {
    const swarm = createSwarm(lab, swarmConfig(12, 1));
    const ids = lab.map((p) => p.id);
    for (const id of ids.slice(0, -1)) {
      swarm.markDown(id);
      expect(swarm.status()).not.toBe('failed');
    }
    swarm.markDown(ids[ids.length - 1] as string);
    expect(swarm.status()).toBe('failed');
    for (const id of ids) swarm.markAlive(id);
    expect(swarm.status()).toBe('healthy');
    swarm.stop();
  });
});

describe('Swarm.report', () => {
  it('feeds the node actor EWMA and the next route sees it', () => {
    const swarm = createSwarm(four, withReserve);
    const first = swarm.route();
    for (const id of ['n1', 'n2', 'n3', 'n4']) swarm.report(id, { load: 0.2 });
    expect(swarm.route().pipelineId).toBe(first.pipelineId);
    for (const s of first.stages) swarm.report(s.nodeId, { load: 1 });
    const second = swarm.route();
    expect(second.pipelineId).not.toBe(first.pipelineId);
    const t = swarm.report('n1', { load: 0, latencyMs: 10 });
    expect(t.samples).toBeGreaterThan(0);
    swarm.stop();
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1])('refuses %s with BadTelemetry and leaves the EWMA untouched', (bad) => {
    const swarm = createSwarm(four, withReserve);
    swarm.report('n1', { load: 0.4 });
    const before = snapshot(swarm);
    const error = caught(() => swarm.report('n1', { load: bad }));
    expect((error as SwarmError).code).toBe('BadTelemetry');
    expect((error as Error).message).toContain('load');
    expect(snapshot(swarm)).toBe(before);
    swarm.stop();
  });
});

describe('Swarm.addNode (telomerase)', () => {
  it('restores a broken copy with the newcomer and leaves intact pipelines untouched', () => {
    const swarm = createSwarm(four, withReserve, { seed: 3 });
    swarm.markDown('n2');
    const intactBefore = swarm.state().plan.pipelines.filter((p) => p.id !== 'base/0');
    const growth = swarm.addNode({ id: 'n5', memoryGb: 8, score: 1 });
    expect(growth.role).toBe('restore');
    expect(growth.replaced).toEqual(['base/0']);
    expect(swarm.status()).toBe('healthy');
    const plan = swarm.state().plan;
    for (const p of intactBefore) expect(plan.pipelines).toContainEqual(p);
    expect(validatePlan(plan, [...four, { id: 'n5', memoryGb: 8, score: 1 }])).toEqual([]);
    swarm.stop();
  });

  it('adds a copy when the newcomer can hold the base model, else hosts an expert, else waits as a spare', () => {
    const swarm = createSwarm(four, withReserve, { seed: 3 });
    expect(swarm.addNode({ id: 'big', memoryGb: 16, score: 4 }).role).toBe('copy');
    // Fast enough that water-filling gives it the expert's layers over idle memory elsewhere.
    expect(swarm.addNode({ id: 'small', memoryGb: 2, score: 20 }).role).toBe('expert');
    expect(swarm.addNode({ id: 'crumb', memoryGb: 0.5, score: 1 }).role).toBe('spare');
    expect(swarm.status()).toBe('healthy');
    swarm.stop();
  });

  it('mints the same pipeline ids for the same seed', () => {
    const ids = () => {
      const swarm = createSwarm(four, withReserve, { seed: 42 });
      const growth = swarm.addNode({ id: 'big', memoryGb: 16, score: 4 });
      swarm.stop();
      return growth.pipelines;
    };
    expect(ids()).toEqual(ids());
  });

  it('refuses a duplicate id (DuplicateNode) and a bad profile (InvalidInput), changing nothing', () => {
    const swarm = createSwarm(four, withReserve);
    const before = snapshot(swarm);
    expect((caught(() => swarm.addNode({ id: 'n1', memoryGb: 8 })) as SwarmError).code).toBe('DuplicateNode');
    expect((caught(() => swarm.addNode({ id: 'x', memoryGb: Number.NaN })) as SwarmError).code).toBe('InvalidInput');
    expect(snapshot(swarm)).toBe(before);
    swarm.stop();
  });
});

describe('Swarm.removeNode', () => {
  it('relocates a retiring node\'s layers to a node with room', () => {
    const swarm = createSwarm(four, withReserve, { seed: 3 });
    swarm.addNode({ id: 'crumb', memoryGb: 0.5, score: 1 }); // spare too small to help
    swarm.addNode({ id: 'roomy', memoryGb: 8, score: 1 }); // becomes an expert host or spare
    const retirement = swarm.removeNode('n2');
    expect(retirement.dropped).toEqual([]);
    expect(retirement.relocated.every((r) => r.from === 'n2')).toBe(true);
    expect(retirement.relocated).toContainEqual({ pipelineId: 'base/0', layerStart: 6, layerEnd: 12, from: 'n2', to: 'roomy' });
    const plan = swarm.state().plan;
    expect(plan.pipelines.flatMap((p) => nodesOf(p))).not.toContain('n2');
    expect(Object.keys(swarm.state().nodes)).not.toContain('n2');
    swarm.stop();
  });

  it('drops a copy that cannot be rebuilt and reports it', () => {
    const swarm = createSwarm(four, withReserve);
    const retirement = swarm.removeNode('n4');
    expect(retirement.dropped).toEqual(['base/1']);
    expect(swarm.state().plan.pipelines.map((p) => p.id)).not.toContain('base/1');
    expect(validatePlan(swarm.state().plan, four.filter((p) => p.id !== 'n4'))).toEqual([]);
    expect(swarm.status()).toBe('healthy');
    swarm.stop();
  });
});

describe('Swarm.stop', () => {
  it('ends in stopped; every later call throws Stopped', () => {
    const swarm = createSwarm(four, withReserve);
    swarm.stop();
    expect(swarm.status()).toBe('stopped');
    for (const call of [
      () => swarm.route(),
      () => swarm.markDown('n1'),
      () => swarm.markAlive('n1'),
      () => swarm.addNode({ id: 'z', memoryGb: 1 }),
      () => swarm.removeNode('n1'),
      () => swarm.report('n1', { load: 0.1 }),
    ]) {
      expect((caught(call) as SwarmError).code).toBe('Stopped');
    }
    swarm.stop(); // idempotent
    expect(swarm.status()).toBe('stopped');
  });
});

describe('inspection', () => {
  it('passes an inspect observer to the Swarm actor and its node actors', () => {
    const events: InspectionEventLike[] = [];
    const swarm = createSwarm(four, withReserve, { inspect: (e) => void events.push(e as unknown as InspectionEventLike) });
    swarm.markDown('n1');
    swarm.report('n2', { load: 0.5 });
    const received = events.filter((e) => e.type === '@xstate.event').map((e) => `${e.actorRef?.id}:${e.event?.type}`);
    expect(received).toContain('swarm:node.down'.replace('swarm', swarm.actor.id));
    expect(received).toContain('node:n1:node.down');
    expect(received).toContain('node:n2:node.telemetry');
    swarm.stop();
  });
});

describe('bad input never crashes the runtime', () => {
  it('answers malformed calls with a named error and leaves the swarm as it was', () => {
    const swarm = createSwarm(four, withReserve);
    const before = snapshot(swarm);
    const calls: [() => unknown, string][] = [
      [() => swarm.route(null as never), 'InvalidRequest'],
      [() => swarm.route({ model: 42 as never }), 'InvalidRequest'],
      [() => swarm.route({ tokens: -1 }), 'InvalidRequest'],
      [() => swarm.markDown(undefined as never), 'UnknownNode'],
      [() => swarm.addNode(null as never), 'InvalidInput'],
      [() => swarm.addNode({ id: '', memoryGb: 4 }), 'InvalidInput'],
      [() => swarm.report('n1', null as never), 'BadTelemetry'],
      [() => swarm.report('n1', { score: 0 }), 'BadTelemetry'],
      [() => swarm.release('lease-404'), 'UnknownLease'],
    ];
    for (const [call, code] of calls) {
      const error = caught(call) as { code?: string };
      expect(error.code).toBe(code);
    }
    expect(snapshot(swarm)).toBe(before);
    swarm.stop();
  });
});

describe('createSwarm options', () => {
  it('refuses a clock without now(), a non-function id source and a fractional seed', () => {
    for (const options of [{ clock: {} }, { idSource: 'x' }, { seed: 1.5 }, { inspect: 42 }, { leaseNamespace: 7 }, { leaseNamespace: 'x'.repeat(65) }]) {
      const error = caught(() => createSwarm(four, withReserve, options as never));
      expect((error as SwarmError).code).toBe('InvalidInput');
    }
  });

  it('puts leaseNamespace before every lease id, and none by default', () => {
    const plain = createSwarm(four, withReserve);
    const tagged = createSwarm(four, withReserve, { leaseNamespace: 'r1:' });
    const a = plain.route({}, { reserve: true }).lease.id;
    const b = tagged.route({}, { reserve: true }).lease.id;
    expect(a).toBe('lease-1');
    expect(b).toBe('r1:lease-1');
    tagged.release(b, { latencyMs: 5 });
    expect(tagged.inFlight()).toBe(0);
    plain.stop();
    tagged.stop();
  });

  it('refuses the former "restore" option, pointing at restoreSwarm', () => {
    const error = caught(() => createSwarm(four, withReserve, { restore: {} } as never));
    expect((error as SwarmError).code).toBe('InvalidInput');
    expect((error as SwarmError).message).toMatch(/option "restore" is not a createSwarm option: restore a persisted swarm with restoreSwarm/);
  });
});
