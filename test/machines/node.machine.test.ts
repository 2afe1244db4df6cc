import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { ewma, isNodeAlive, nodeMachine } from '../../machines/node.machine.js';

function startNode(input: { id: string; alpha?: number; latencyMs?: number; score?: number }) {
  const actor = createActor(nodeMachine, { input });
  actor.start();
  return actor;
}

describe('nodeMachine', () => {
  it('initialises each EWMA with its first sample, then blends with alpha', () => {
    const node = startNode({ id: 'gpu', alpha: 0.3 });
    node.send({ type: 'node.telemetry', sample: { load: 0.5, latencyMs: 10 } });
    expect(node.getSnapshot().context).toMatchObject({ load: 0.5, latencyMs: 10, samples: 1 });
    node.send({ type: 'node.telemetry', sample: { load: 1, latencyMs: 20 } });
    // 0.3·1 + 0.7·0.5 = 0.65 ; 0.3·20 + 0.7·10 = 13
    expect(node.getSnapshot().context.load).toBeCloseTo(0.65, 12);
    expect(node.getSnapshot().context.latencyMs).toBeCloseTo(13, 12);
    expect(node.getSnapshot().context.samples).toBe(2);
  });

  it('uses alpha 0.3 by default', () => {
    const node = startNode({ id: 'gpu' });
    node.send({ type: 'node.telemetry', sample: { load: 0 } });
    node.send({ type: 'node.telemetry', sample: { load: 1 } });
    expect(node.getSnapshot().context.load).toBeCloseTo(0.3, 12);
  });

  it('keeps the declared latency aside until the first measured sample replaces it', () => {
    const node = startNode({ id: 'gpu', latencyMs: 4, score: 10 });
    expect(node.getSnapshot().context.latencyMs).toBeUndefined();
    expect(node.getSnapshot().context.settings.declared).toEqual({ latencyMs: 4, score: 10 });
    node.send({ type: 'node.telemetry', sample: { latencyMs: 9 } });
    expect(node.getSnapshot().context.latencyMs).toBe(9);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0.1])('refuses a sample of %s and leaves every EWMA untouched', (bad) => {
    const node = startNode({ id: 'gpu' });
    node.send({ type: 'node.telemetry', sample: { load: 0.4, latencyMs: 5 } });
    const before = node.getSnapshot().context;
    node.send({ type: 'node.telemetry', sample: { load: bad, latencyMs: 7 } });
    node.send({ type: 'node.telemetry', sample: { latencyMs: bad } });
    expect(node.getSnapshot().context).toEqual(before);
  });

  it('goes down, ignores telemetry while down, comes back alive and retires for good', () => {
    const node = startNode({ id: 'gpu' });
    node.send({ type: 'node.down' });
    expect(node.getSnapshot().value).toEqual({ down: 'manual' });
    expect(isNodeAlive(node.getSnapshot())).toBe(false);
    node.send({ type: 'node.telemetry', sample: { load: 0.9 } });
    expect(node.getSnapshot().context.samples).toBe(0);
    node.send({ type: 'node.alive' });
    expect(isNodeAlive(node.getSnapshot())).toBe(true);
    node.send({ type: 'node.retire' });
    expect(node.getSnapshot().value).toBe('retired');
    expect(node.getSnapshot().status).toBe('done');
  });

  it('ewma() is the formula of the original design', () => {
    expect(ewma(undefined, 5, 0.3)).toBe(5);
    expect(ewma(10, undefined, 0.3)).toBe(10);
    expect(ewma(10, 20, 0.5)).toBe(15);
  });
});
