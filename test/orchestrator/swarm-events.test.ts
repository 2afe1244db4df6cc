/**
 * The relay of the Swarm's events reads an agent's silence from its node actor (`heardAt`): at a
 * suspicion, at a down of any cause (kept through it), and the silence a heartbeat ended when a
 * suspect is trusted again. In process, on a ManualClock.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { createSwarm } from '../../src/runtime/index.js';
import { createParts } from '../../src/orchestrator/orchestrator-parts.js';
import { relaySwarmEvents } from '../../src/orchestrator/swarm-events.js';

const models = [{ id: 'base', layers: 12, pipelines: 2 }];
const profiles = ['a', 'b', 'c', 'd'].map((id) => ({ id, memoryGb: 6 }));

describe('relaySwarmEvents', () => {
  it("tells each silence from the node's last heartbeat", () => {
    const clock = new ManualClock(10_000);
    const parts = createParts(clock, models, { models }, () => {});
    const told: { type: string; data: Record<string, unknown> }[] = [];
    parts.events.publish = (type, data) => void told.push({ type, data: data as Record<string, unknown> });
    const swarm = createSwarm(profiles, { models }, { seed: 1, clock });
    parts.seat.seatLocal(swarm);
    relaySwarmEvents(parts, swarm);
    const beatAll = () => {
      for (const p of profiles) swarm.heartbeat(p.id);
    };
    for (let i = 0; i < 10; i++) {
      beatAll();
      clock.advance(1000);
    }
    beatAll();
    const lastBeat = clock.now();
    // a falls silent; the others go on.
    while (swarm.node('a')?.state !== 'suspect') {
      clock.advance(100);
      for (const id of ['b', 'c', 'd']) swarm.heartbeat(id);
    }
    const suspected = told.find((e) => e.type === 'node.suspected');
    const suspectedAt = suspected?.data['at'] as number; // the detector's timer: within the last step
    expect(suspectedAt).toBeGreaterThan(clock.now() - 100);
    expect(suspected?.data).toEqual({ at: suspectedAt, nodeId: 'a', silentMs: suspectedAt - lastBeat });
    clock.advance(100);
    swarm.heartbeat('a');
    expect(told.find((e) => e.type === 'node.trusted')?.data).toEqual({ at: clock.now(), nodeId: 'a', suspectedForMs: clock.now() - suspectedAt, silentMs: clock.now() - lastBeat });

    // A down by hand: the silence since its last heartbeat, which its node keeps through the down.
    const heard = clock.now();
    clock.advance(700);
    swarm.markDown('a');
    expect(told.find((e) => e.type === 'node.down')?.data).toMatchObject({ at: clock.now(), nodeId: 'a', cause: 'manual', silentMs: clock.now() - heard });
    expect(swarm.node('a')?.heardAt).toBe(heard);
    swarm.stop();
  });
});
