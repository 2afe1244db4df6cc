/**
 * The registry keeps connection facts only: an agent's state is its presence until it joins, then
 * whatever the swarm says of its node now, read at each view (nothing to keep in step).
 */
import { describe, expect, it } from 'vitest';
import { createSwarm } from '../../src/runtime/index.js';
import { agentState, NodeRegistry } from '../../src/orchestrator/node-registry.js';

const profiles = [
  { id: 'a', memoryGb: 6 },
  { id: 'b', memoryGb: 6 },
  { id: 'c', memoryGb: 6 },
];

describe('NodeRegistry', () => {
  it('shows a joined agent as the swarm says it now, and its presence otherwise', () => {
    const swarm = createSwarm(profiles, { models: [{ id: 'base', layers: 12, pipelines: 1 }] }, { seed: 1 });
    const registry = new NodeRegistry();
    for (const p of profiles) registry.ensure(p);
    const lifecycle = (id: string) => swarm.node(id);
    const states = () => registry.view(0, lifecycle).map((v) => `${v.id}:${v.state}:${v.downCause ?? '-'}`);
    expect(states()).toEqual(['a:absent:-', 'b:absent:-', 'c:absent:-']);

    for (const id of ['a', 'b', 'c']) (registry.get(id) as { presence: string }).presence = 'joined';
    expect(states()).toEqual(['a:alive:-', 'b:alive:-', 'c:alive:-']);

    // The swarm changes; the registry is not told, and shows it.
    swarm.markDown('b');
    expect(states()).toEqual(['a:alive:-', 'b:down:manual', 'c:alive:-']);
    expect(registry.countByState(lifecycle)).toEqual(new Map([['absent', 0], ['pending', 0], ['alive', 2], ['suspect', 0], ['down', 1], ['left', 0]]));
    swarm.markAlive('b');
    expect(states()).toEqual(['a:alive:-', 'b:alive:-', 'c:alive:-']);

    // A left agent is left whatever its node is; one the swarm does not have is still waiting.
    const c = registry.get('c');
    if (c === undefined) throw new Error('c is declared');
    c.presence = 'left';
    expect(agentState(c, swarm.node('c'))).toBe('left');
    const d = registry.ensure({ id: 'd', memoryGb: 6 });
    d.presence = 'joined';
    expect(agentState(d, swarm.node('d'))).toBe('pending');
    swarm.stop();
  });

  it('keeps heartbeat timing: the last beat and the silence it ended', () => {
    const registry = new NodeRegistry();
    const r = registry.ensure({ id: 'a', memoryGb: 6 });
    registry.beat(r, 1000);
    expect([r.lastHeartbeatAt, r.lastGapMs]).toEqual([1000, undefined]);
    registry.beat(r, 3500);
    expect([r.lastHeartbeatAt, r.lastGapMs]).toEqual([3500, 2500]);
    expect(registry.view(4000, () => undefined)[0]?.lastHeartbeatAgoMs).toBe(500);
  });
});
