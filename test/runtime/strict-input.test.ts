import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { nodeMachine } from '../../src/machines/index.js';
import { createSwarm, PlanError, planSwarm, SwarmError, swarmConfig, type NodeProfile, type SwarmConfig, type TelemetrySample } from '../../src/index.js';

const lab: NodeProfile[] = [
  { id: 'a', memoryGb: 8, score: 2, latencyMs: 5 },
  { id: 'b', memoryGb: 8, score: 1, latencyMs: 9 },
];

function caught(f: () => unknown): unknown {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('report refuses what is not a sample', () => {
  it.each<[string, unknown, RegExp]>([
    ['an unknown key beside a good one', { latency: 900, load: 0.2 }, /unknown key "latency"/],
    ['a misspelt key alone', { latency: 900 }, /unknown key "latency"/],
    ['an empty sample', {}, /none of load, latencyMs, score/],
    ['a sample whose only key is undefined', { load: undefined }, /none of load, latencyMs, score/],
    ['a number', 7, /must be an object/],
  ])('%s is BadTelemetry and counts as no sample', (_what, sample, message) => {
    const swarm = createSwarm(lab, swarmConfig(4, 1));
    const before = swarm.state().nodes['a'];
    const error = caught(() => swarm.report('a', sample as TelemetrySample));
    expect(error).toBeInstanceOf(SwarmError);
    expect((error as SwarmError).code).toBe('BadTelemetry');
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain('node "a"');
    expect(swarm.state().nodes['a']).toEqual(before);
    swarm.stop();
  });

  it('still takes a sample of known keys, some left undefined', () => {
    const swarm = createSwarm(lab, swarmConfig(4, 1));
    expect(swarm.report('a', { load: 0.5, latencyMs: undefined }).samples).toBe(1);
    swarm.stop();
  });

  it('the node machine alone ignores the same samples (its guard is the same check)', () => {
    const node = createActor(nodeMachine, { input: { id: 'n' } }).start();
    node.send({ type: 'node.telemetry', sample: { latency: 900 } as never });
    node.send({ type: 'node.telemetry', sample: {} });
    expect(node.getSnapshot().context.samples).toBe(0);
    node.send({ type: 'node.telemetry', sample: { load: 0.3 } });
    expect(node.getSnapshot().context.samples).toBe(1);
    node.stop();
  });
});

describe('one error class per bad model, whichever entry point', () => {
  const bad: [string, SwarmConfig][] = [
    ['zero layers', swarmConfig(0, 1)],
    ['no models', { models: [] }],
    ['a duplicate model id', { models: [{ id: 'm', layers: 2 }, { id: 'm', layers: 2 }] }],
    ['a negative layerGb', { models: [{ id: 'm', layers: 2, layerGb: -1 }] }],
  ];
  it.each(bad)('%s: the same PlanError InvalidInput from planSwarm and createSwarm', (_what, config) => {
    const fromPlan = caught(() => planSwarm(lab, config));
    const fromSwarm = caught(() => createSwarm(lab, config));
    expect(fromPlan).toBeInstanceOf(PlanError);
    expect(fromSwarm).toBeInstanceOf(PlanError);
    expect((fromSwarm as PlanError).code).toBe('InvalidInput');
    expect((fromSwarm as Error).message).toBe((fromPlan as Error).message);
  });
});
