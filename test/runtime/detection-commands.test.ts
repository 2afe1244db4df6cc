import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SwarmEmitted } from '../../machines/swarm.machine.js';
import { createSwarm, ManualClock, RoutingError, SwarmError, type Lease, type NodeProfile, type Route, type Swarm, type SwarmConfig } from '../../src/index.js';

/**
 * fast-check commands interleaving heartbeats, clock advances, failed and successful releases
 * and the orchestrator's marks on a real swarm driven by a ManualClock. After every step: no
 * route includes a node that is down; the status follows the rule (failed ⇔ none alive,
 * degraded ⇔ a plan node down); the live table agrees with what the Swarm emitted; a node the
 * orchestrator marked down stays down until it marks it alive; a node that never sent a
 * heartbeat nor failed goes down only by the orchestrator's hand; at most half the nodes are
 * ejected at once; a node is suspect in the live table while its actor is in `suspect`,
 * and otherwise only while an open lease holds it (its requests overdue); a route takes a
 * suspect node only when every intact copy has one.
 */

const profiles: NodeProfile[] = [
  { id: 'gpu', memoryGb: 6, score: 10, latencyMs: 4 },
  { id: 'desktop', memoryGb: 6, score: 8, latencyMs: 5 },
  { id: 'laptop', memoryGb: 6, score: 4, latencyMs: 9 },
  { id: 'tablet', memoryGb: 6, score: 3, latencyMs: 12 },
  { id: 'phone', memoryGb: 6, score: 2, latencyMs: 20 },
];
const ids = profiles.map((p) => p.id);
const config: SwarmConfig = { models: [{ id: 'base', layers: 12, pipelines: 2 }], ejection: { consecutiveFailures: 2, banMs: 5000, maxBanMs: 20_000 } };

interface Real {
  readonly swarm: Swarm;
  readonly clock: ManualClock;
  /** Alive per node as the emitted events tell it. */
  readonly heard: Map<string, boolean>;
  readonly ejected: Set<string>;
  /** Leases left open (requests that hang), oldest first. */
  readonly open: Lease[];
}

interface Model {
  /** Marked down by the orchestrator and not marked alive since. */
  readonly manualDown: Set<string>;
  /** Nodes that sent a heartbeat, or had a failed release, at least once. */
  readonly touched: Set<string>;
}

/** Checks that saw a suspect node, one suspect for its overdue requests alone, and routes that went around one. */
const doubts = { suspect: 0, overdue: 0, around: 0 };

function check(m: Model, r: Real): void {
  // Routed first: a route is what finds overdue requests, so the state read after it shows them.
  let route: Route | undefined;
  try {
    route = r.swarm.route();
  } catch (error) {
    expect(error).toBeInstanceOf(RoutingError);
  }
  const state = r.swarm.state();
  const alive = (id: string) => state.nodes[id]?.alive === true;
  // The status rule.
  const aliveCount = ids.filter(alive).length;
  const planNodes = state.plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId));
  const expected = aliveCount === 0 ? 'failed' : planNodes.every(alive) ? 'healthy' : 'degraded';
  expect(r.swarm.status()).toBe(expected);
  // The live table follows the machine's emitted events.
  for (const id of ids) expect(alive(id), id).toBe(r.heard.get(id));
  // The orchestrator's marks win; nobody else takes an untouched node down.
  for (const id of m.manualDown) expect(alive(id), `${id} marked down`).toBe(false);
  for (const id of ids) if (!m.touched.has(id) && !m.manualDown.has(id)) expect(alive(id), `${id} untouched`).toBe(true);
  expect(r.ejected.size).toBeLessThanOrEqual(Math.floor(ids.length / 2));
  // The view is the machine: alive in the routing table exactly when alive in the statechart, and
  // suspect while the node actor is (otherwise only with a request overdue).
  for (const id of ids) {
    const lifecycle = r.swarm.node(id);
    expect(state.nodes[id]?.alive, `${id} alive in the view`).toBe(lifecycle?.state !== 'down');
    const detector = lifecycle?.state === 'suspect';
    if (detector) expect(state.nodes[id]?.suspect, `${id} suspect`).toBe(true);
    else if (state.nodes[id]?.suspect === true) {
      expect(r.open.some((l) => l.nodes.includes(id)), `${id} suspect with nothing overdue`).toBe(true);
      doubts.overdue++;
    }
  }
  // No route includes a node that is down, nor a suspect one while an intact copy has none.
  if (route !== undefined) {
    for (const s of route.stages) expect(alive(s.nodeId), `route through ${s.nodeId}`).toBe(true);
    const doubted = (stages: readonly { nodeId: string }[]) => stages.some((s) => state.nodes[s.nodeId]?.suspect === true);
    if (ids.some((id) => state.nodes[id]?.suspect === true)) doubts.suspect++;
    if (!doubted(route.stages) && state.plan.pipelines.some((p) => doubted(p.stages) && p.stages.every((s) => alive(s.nodeId)))) doubts.around++;
    if (doubted(route.stages)) {
      const intact = state.plan.pipelines.filter((p) => p.modelId === route.modelId && p.stages.every((s) => alive(s.nodeId)));
      for (const p of intact) expect(doubted(p.stages), `${p.id} has no suspect node`).toBe(true);
    }
  }
}

type Cmd = fc.Command<Model, Real>;

class Heartbeat implements Cmd {
  constructor(readonly node: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    r.swarm.heartbeat(this.node);
    m.touched.add(this.node);
    check(m, r);
  }
  toString = () => `heartbeat(${this.node})`;
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  run(m: Model, r: Real): void {
    r.clock.advance(this.ms);
    check(m, r);
  }
  toString = () => `advance(${this.ms})`;
}

/** A reserved request released; a failure is pinned on `node` when the route used it. */
class Release implements Cmd {
  constructor(readonly node: string, readonly ok: boolean) {}
  check = () => true;
  run(m: Model, r: Real): void {
    let lease;
    try {
      lease = r.swarm.route({}, { reserve: true }).lease;
    } catch (error) {
      expect(error).toBeInstanceOf(RoutingError);
      return;
    }
    for (const n of lease.nodes) expect(r.swarm.state().nodes[n]?.alive, `lease on ${n}`).toBe(true);
    const failedNode = lease.nodes.includes(this.node) ? this.node : undefined;
    if (!this.ok) for (const n of failedNode !== undefined ? [failedNode] : lease.nodes) m.touched.add(n);
    r.swarm.release(lease, this.ok ? { latencyMs: 10 } : failedNode !== undefined ? { ok: false, failedNode } : { ok: false });
    check(m, r);
  }
  toString = () => `release(${this.node}, ${this.ok ? 'ok' : 'fail'})`;
}

/** A reserved request that does not come back (yet). */
class Hang implements Cmd {
  check = () => true;
  run(m: Model, r: Real): void {
    try {
      r.open.push(r.swarm.route({}, { reserve: true }).lease);
    } catch (error) {
      expect(error).toBeInstanceOf(RoutingError);
    }
    check(m, r);
  }
  toString = () => 'hang()';
}

/** The oldest hanging request comes back, answered or not (unless its lease expired). */
class Finish implements Cmd {
  constructor(readonly ok: boolean) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const lease = r.open.shift();
    if (lease === undefined) return;
    try {
      r.swarm.release(lease, this.ok ? { latencyMs: 10 } : { ok: false });
      if (!this.ok) for (const n of lease.nodes) m.touched.add(n);
    } catch (error) {
      expect(error).toBeInstanceOf(SwarmError); // expired
    }
    check(m, r);
  }
  toString = () => `finish(${this.ok ? 'ok' : 'fail'})`;
}

class MarkDown implements Cmd {
  constructor(readonly node: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    r.ejected.delete(this.node); // a manual mark over an ejection ends the ejection (no event: it was down already)
    r.swarm.markDown(this.node);
    m.manualDown.add(this.node);
    check(m, r);
  }
  toString = () => `markDown(${this.node})`;
}

class MarkAlive implements Cmd {
  constructor(readonly node: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    r.swarm.markAlive(this.node);
    m.manualDown.delete(this.node);
    expect(r.swarm.state().nodes[this.node]?.alive).toBe(true);
    check(m, r);
  }
  toString = () => `markAlive(${this.node})`;
}

const node = fc.constantFrom(...ids);
const commands = [
  node.map((n) => new Heartbeat(n)),
  node.map((n) => new Heartbeat(n)),
  fc.constantFrom(10, 100, 1000, 2500, 5000, 20_000).map((ms) => new Advance(ms)),
  fc.oneof(fc.constant<Cmd>(new Hang()), fc.boolean().map((ok): Cmd => new Finish(ok))),
  fc.tuple(node, fc.boolean()).map(([n, ok]) => new Release(n, ok)),
  fc.tuple(node, fc.constant(false)).map(([n, ok]) => new Release(n, ok)),
  node.map((n) => new MarkDown(n)),
  node.map((n) => new MarkAlive(n)),
];

describe('detection and ejection, fast-check commands', () => {
  it('keeps every route on live nodes and the status on its rule through heartbeats, time, failures and marks', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 80 }), (cmds) => {
        const clock = new ManualClock();
        const swarm = createSwarm(profiles, config, { clock, seed: 1 });
        const heard = new Map(ids.map((id) => [id, true]));
        const ejected = new Set<string>();
        swarm.on('*', (e: SwarmEmitted) => {
          if (e.type === 'node.down' || e.type === 'node.alive') seen.add(`${e.type}:${e.cause}`);
          if (e.type === 'node.down') {
            heard.set(e.nodeId, false);
            if (e.cause === 'ejected') ejected.add(e.nodeId);
          } else if (e.type === 'node.alive') {
            heard.set(e.nodeId, true);
            ejected.delete(e.nodeId);
          }
        });
        const real: Real = { swarm, clock, heard, ejected, open: [] };
        fc.modelRun(() => ({ model: { manualDown: new Set<string>(), touched: new Set<string>() }, real }), cmds);
        swarm.stop();
      }),
      { seed: 1515, numRuns: 150 },
    );
    // Suspicion came up, and routes went around it.
    expect(doubts.suspect).toBeGreaterThan(0);
    expect(doubts.overdue).toBeGreaterThan(0);
    expect(doubts.around).toBeGreaterThan(0);
    // The runs went through every way down and back, not only the manual marks.
    expect([...seen].sort()).toEqual(['node.alive:heartbeat', 'node.alive:manual', 'node.alive:probation', 'node.down:detector', 'node.down:ejected', 'node.down:manual']);
  });
});
