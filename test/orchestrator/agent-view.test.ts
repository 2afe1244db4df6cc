/**
 * The address book keeps where agents listen and whether they left; an agent's state and when it
 * was last heard are read when asked from their owners: the swarm and its node actors for a
 * member, the waiting room before the plan (nothing to keep in step).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { createSwarm } from '../../src/runtime/index.js';
import { NODE_STATES } from '../../src/runtime/node-lifecycle.js';
import { AGENT_STATES, agentViews, countByState, stateOf } from '../../src/orchestrator/agent-view.js';
import { NodeRegistry } from '../../src/orchestrator/node-registry.js';
import { SwarmSeat } from '../../src/orchestrator/swarm-seat.js';
import { WaitingRoom } from '../../src/orchestrator/waiting-room.js';
import { ServeError } from '../../src/wire/serve-error.js';

const profiles = [
  { id: 'a', memoryGb: 6 },
  { id: 'b', memoryGb: 6 },
  { id: 'c', memoryGb: 6 },
];
const models = [{ id: 'base', layers: 12, pipelines: 1 }];

function sources() {
  return { registry: new NodeRegistry(), room: new WaitingRoom(), seat: new SwarmSeat() };
}

describe('the agents as the orchestrator shows them', () => {
  it('lists the states in /metrics order, a member’s being the runtime’s list', () => {
    expect(AGENT_STATES).toEqual(['absent', 'pending', ...NODE_STATES, 'left']);
    expect(AGENT_STATES).toEqual(['absent', 'pending', 'alive', 'suspect', 'down', 'left']);
  });

  it('shows a member as the swarm says it now, and what the address book says otherwise', () => {
    const s = sources();
    const swarm = createSwarm(profiles, { models }, { seed: 1 });
    s.seat.seatLocal(swarm);
    for (const p of profiles) s.registry.declare(p);
    const states = () => agentViews(s, 0).map((v) => `${v.id}:${v.state}:${v.downCause ?? '-'}`);
    expect(states()).toEqual(['a:absent:-', 'b:absent:-', 'c:absent:-']);

    for (const p of profiles) s.registry.joined(p, `http://127.0.0.1:${p.id.charCodeAt(0)}`);
    expect(states()).toEqual(['a:alive:-', 'b:alive:-', 'c:alive:-']);

    // The swarm changes; nothing here is told, and the view shows it.
    swarm.markDown('b');
    expect(states()).toEqual(['a:alive:-', 'b:down:manual', 'c:alive:-']);
    expect(countByState(s)).toEqual(new Map([['absent', 0], ['pending', 0], ['alive', 2], ['suspect', 0], ['down', 1], ['left', 0]]));
    swarm.markAlive('b');
    expect(states()).toEqual(['a:alive:-', 'b:alive:-', 'c:alive:-']);

    // A left agent is left whatever its node is; one with an address the swarm does not have waits.
    s.registry.withdraw('c', undefined);
    expect(stateOf(s, 'c')).toBe('left');
    expect(s.registry.members()).toBe(2);
    s.registry.joined({ id: 'd', memoryGb: 6 }, 'http://127.0.0.1:1');
    expect(stateOf(s, 'd')).toBe('pending');
    expect(stateOf(s, 'nobody')).toBe('absent');
    // Joined again, c is back and counted as a rejoin.
    expect(s.registry.joined(profiles[2]!, 'http://127.0.0.1:2').rejoin).toBe(true);
    expect(stateOf(s, 'c')).toBe('alive');
    swarm.stop();
  });

  it("reads a member's last heartbeat from its node, kept through a down and taken while down by hand", () => {
    const clock = new ManualClock(1000);
    const s = sources();
    const swarm = createSwarm(profiles, { models }, { seed: 1, clock });
    s.seat.seatLocal(swarm);
    for (const p of profiles) s.registry.joined(p, 'http://127.0.0.1:9');
    const ago = (id: string) => agentViews(s, clock.now()).find((v) => v.id === id)?.lastHeartbeatAgoMs;
    expect(ago('a')).toBeNull();
    swarm.heartbeat('a');
    clock.advance(500);
    expect(ago('a')).toBe(500);
    expect(swarm.node('a')?.heardAt).toBe(1000);
    swarm.markDown('a');
    clock.advance(250);
    expect(ago('a')).toBe(750);
    swarm.heartbeat('a'); // down by hand: it stays down, and was heard
    expect(swarm.node('a')).toMatchObject({ state: 'down', cause: 'manual', heardAt: 1750 });
    clock.advance(100);
    expect(ago('a')).toBe(100);

    // Left and gone from the swarm, its last heartbeat is the one its node had when it left.
    s.registry.withdraw('a', swarm.node('a')?.heardAt);
    swarm.removeNode('a');
    clock.advance(100);
    expect(agentViews(s, clock.now()).find((v) => v.id === 'a')).toMatchObject({ state: 'left', lastHeartbeatAgoMs: 200 });
    swarm.stop();
  });

  it('keeps the waiting agents before the plan, and hands them and their time to the swarm at planning', () => {
    const clock = new ManualClock(5000);
    const s = sources();
    for (const p of profiles.slice(0, 2)) {
      s.registry.joined(p, 'http://127.0.0.1:9');
      s.room.enter(p, clock.now());
    }
    clock.advance(300);
    s.room.heard('b', clock.now());
    clock.advance(200);
    expect(agentViews(s, clock.now()).map((v) => [v.id, v.state, v.lastHeartbeatAgoMs])).toEqual([
      ['a', 'pending', 500],
      ['b', 'pending', 200],
    ]);
    expect(countByState(s).get('pending')).toBe(2);
    s.room.leave('b');
    expect(s.room.profiles().map((p) => p.id)).toEqual(['a']);
    s.room.enter(profiles[1]!, clock.now());

    const swarm = createSwarm(s.room.profiles(), { models }, { seed: 1, clock });
    s.seat.seatLocal(swarm);
    s.room.handOver(swarm);
    expect(s.room.size).toBe(0);
    expect(s.room.heardAt('a')).toBeUndefined();
    expect([swarm.node('a')?.heardAt, swarm.node('b')?.heardAt]).toEqual([5500, 5500]);
    clock.advance(10);
    expect(agentViews(s, clock.now()).map((v) => [v.id, v.state, v.lastHeartbeatAgoMs])).toEqual([
      ['a', 'alive', 10],
      ['b', 'alive', 10],
    ]);
    // Handed over, the room takes no one: a join goes to the swarm.
    expect(() => s.room.enter(profiles[2]!, clock.now())).toThrow(ServeError);
    swarm.stop();
  });
});
