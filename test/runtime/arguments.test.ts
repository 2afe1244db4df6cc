/**
 * Library arguments are checked like the CLI's (docs/inputs.md): through a Swarm and its sessions,
 * an unknown key or a wrong type is a typed error naming the key, and a refused call changes
 * nothing. The examples of docs/inputs.md, one by one.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, RoutingError, SessionError, SwarmError, swarmConfig, type NodeProfile, type Swarm } from '../../src/index.js';
import { openSession } from '../../src/sessions/index.js';
import type { SessionHost } from '../../src/sessions/session-types.js';
import { config, harness, profiles as sessionProfiles } from '../sessions/session-fixtures.js';

const lab: NodeProfile[] = [
  { id: 'a', memoryGb: 8, score: 2, latencyMs: 5 },
  { id: 'b', memoryGb: 8, score: 1, latencyMs: 9 },
];

function caught(f: () => unknown): Error {
  try {
    f();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

async function rejected(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

function expectError(error: Error, cls: typeof RoutingError | typeof SwarmError | typeof SessionError, code: string, message: RegExp): void {
  expect(error).toBeInstanceOf(cls);
  expect((error as RoutingError).code).toBe(code);
  expect(error.message).toMatch(message);
}

/** The swarm's whole observable state: plan, telemetry and leases in flight. */
const observed = (swarm: Swarm) => JSON.stringify({ state: swarm.state(), inFlight: swarm.inFlight(), status: swarm.status() });

describe('route', () => {
  it.each<[string, () => (swarm: Swarm) => unknown, RegExp]>([
    ['{ reserve: "yes" }', () => (s) => s.route({}, { reserve: 'yes' } as never), /^route options: "reserve" must be a boolean, got "yes"$/],
    ['{ reserv: true }', () => (s) => s.route({}, { reserv: true } as never), /^route options: unknown key "reserv" \(known: reserve\)$/],
    ['{ modle: "x" }', () => (s) => s.route({ modle: 'x' } as never), /^request: unknown key "modle" \(known: tokens, weights, penalties, costModel, prompt, model, cache\)$/],
    ['{ model: 3 }', () => (s) => s.route({ model: 3 } as never), /request field "model" must be a model id string, got 3/],
    ['a misspelt weight', () => (s) => s.route({ weights: { latncy: 2 } } as never), /request field "weights": unknown key "latncy"/],
    ['null options', () => (s) => s.route({}, null as never), /route options must be an object/],
  ])('%s is InvalidRequest naming the key, and changes nothing', (_what, call, message) => {
    const swarm = createSwarm(lab, swarmConfig(4, 1), { seed: 1 });
    swarm.route({}, { reserve: true }); // a lease in flight: a refused route must not touch it
    const before = observed(swarm);
    expectError(caught(() => call()(swarm)), RoutingError, 'InvalidRequest', message);
    expect(observed(swarm)).toBe(before);
    swarm.stop();
  });

  it('routeByScan refuses the same request', () => {
    const swarm = createSwarm(lab, swarmConfig(4, 1));
    expectError(caught(() => swarm.routeByScan({ modle: 'x' } as never)), RoutingError, 'InvalidRequest', /unknown key "modle"/);
    swarm.stop();
  });

  it('takes every valid form', () => {
    const swarm = createSwarm(lab, swarmConfig(4, 1));
    expect(swarm.route().modelId).toBe('base');
    expect(swarm.route({ tokens: 3, model: 'base', costModel: 'original', weights: { latency: 2 }, penalties: { score: 2 } }, { reserve: false })).not.toHaveProperty('lease');
    expect(swarm.route({}, { reserve: true }).lease.nodes.length).toBeGreaterThan(0);
    swarm.stop();
  });
});

describe('release', () => {
  it.each<[string, unknown, RegExp]>([
    ['{ ok: "no" }', { ok: 'no' }, /"ok" must be a boolean, got "no"/],
    ['{ okk: false }', { okk: false }, /outcome: unknown key "okk" \(known: latencyMs, ok, failedNode, cachedTokens, neutral, busyNode\)/],
    ['{ latencyMs: 1e308 }', { latencyMs: 1e308 }, /"latencyMs" must be a number from 0 to 600000 \(ms\), got 1e\+308/],
    ['{ failedNode } without ok: false', { failedNode: 'a' }, /"failedNode" names the node that failed: give it with ok: false/],
  ])('%s is BadTelemetry naming the key; the lease stays open and nothing is fed', (_what, outcome, message) => {
    const swarm = createSwarm(lab, swarmConfig(4, 1), { seed: 1 });
    const { lease } = swarm.route({}, { reserve: true });
    const before = observed(swarm);
    expectError(caught(() => swarm.release(lease, outcome as never)), SwarmError, 'BadTelemetry', new RegExp(`release of lease "${lease.id}": .*${message.source}`));
    expect(observed(swarm)).toBe(before);
    expect(swarm.inFlight()).toBe(1);
    swarm.release(lease, { ok: false, failedNode: lease.nodes[0] as string }); // still open: a right call ends it
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });
});

describe('report', () => {
  it('{ latencyMs: 1e308 } is BadTelemetry naming the bound; the EWMA is unchanged', () => {
    const swarm = createSwarm(lab, swarmConfig(4, 1));
    swarm.report('a', { latencyMs: 10 });
    const before = swarm.state().nodes['a'];
    expectError(caught(() => swarm.report('a', { latencyMs: 1e308 })), SwarmError, 'BadTelemetry', /telemetry for node "a": "latencyMs" must be a number from 0 to 600000, got 1e\+308; the EWMA is unchanged/);
    expectError(caught(() => swarm.report('a', { load: 1001 })), SwarmError, 'BadTelemetry', /"load" must be a number from 0 to 1000, got 1001/);
    expectError(caught(() => swarm.report('a', { score: 2e6 })), SwarmError, 'BadTelemetry', /"score" must be a number from 0 to 1000000 \(and > 0\), got 2000000/);
    expect(swarm.state().nodes['a']).toEqual(before);
    swarm.stop();
  });

  it('a sample at the bound is taken, and 22 ordinary samples bring the node back (docs/inputs.md)', () => {
    const swarm = createSwarm(lab, swarmConfig(4, 1)); // alpha 0.3
    swarm.report('a', { latencyMs: 10 });
    expect(swarm.report('a', { latencyMs: 600_000 }).latencyMs).toBeCloseTo(0.3 * 600_000 + 0.7 * 10, 6);
    let samples = 0;
    while ((swarm.state().nodes['a']?.latencyMs as number) >= 100) {
      swarm.report('a', { latencyMs: 10 });
      samples++;
    }
    expect(samples).toBe(22);
    swarm.stop();
  });
});

describe('createSwarm', () => {
  it('refuses a failurePenaltyMs a latency sample could not carry', () => {
    expectError(caught(() => createSwarm(lab, { ...swarmConfig(4, 1), failurePenaltyMs: 600_001 })), SwarmError, 'InvalidInput', /config "failurePenaltyMs" must be a number from 0 to 600000, got 600001/);
    createSwarm(lab, { ...swarmConfig(4, 1), failurePenaltyMs: 600_000 }).stop();
  });
});

describe('sessions', () => {
  it('a misspelt request key is InvalidRequest, and no lease is left', () => {
    const h = harness();
    expectError(caught(() => h.swarm.session({ modle: 'x' } as never, h.runStage)), RoutingError, 'InvalidRequest', /request: unknown key "modle"/);
    expect(h.swarm.inFlight()).toBe(0);
    h.swarm.stop();
  });

  it('a host of your own never sees a bad request', () => {
    const h = harness();
    let routed = 0;
    const host: SessionHost = { route: () => (routed++, h.swarm.route({}, { reserve: true })), reserve: () => h.swarm.route({}, { reserve: true }), release: () => {}, state: () => h.swarm.state(), clock: h.timers };
    expectError(caught(() => openSession(host, { tokens: 2, model: 3 } as never, h.runStage)), RoutingError, 'InvalidRequest', /"model" must be a model id string, got 3/);
    expect(routed).toBe(0);
    h.swarm.stop();
  });

  it.each<[string, object, RegExp]>([
    ['a misspelt option', { stageTimeout: 5 }, /^session options: unknown key "stageTimeout" \(known: stageTimeoutMs, .*clock, priority, dropSession, historyBytes\)$/],
    ['allowDegraded: "yes"', { allowDegraded: 'yes' }, /session option "allowDegraded" must be a boolean, got "yes"/],
    ['a stage timeout past a timer’s range', { stageTimeoutMs: 3e9 }, /session option "stageTimeoutMs" must be a number > 0, at most 2147483647 or Infinity, got 3000000000/],
    ['a deadline past a timer’s range', { deadlineMs: 2 ** 31 }, /session option "deadlineMs"/],
    ['an infinite liveness poll', { aliveCheckMs: Infinity }, /session option "aliveCheckMs" must be a number > 0 and at most 2147483647, got Infinity/],
    ['a backoff past a timer’s range', { backoffMs: 1e12 }, /session option "backoffMs" must be a number from 0 to 2147483647/],
  ])('session options: %s is InvalidInput naming the key', (_what, options, message) => {
    const h = harness();
    expectError(caught(() => h.swarm.session({}, h.runStage, options as never)), SessionError, 'InvalidInput', message);
    expect(h.swarm.inFlight()).toBe(0);
    h.swarm.stop();
  });

  it('takes an infinite stage timeout and deadline (none)', () => {
    const h = harness();
    h.swarm.session({}, h.runStage, { stageTimeoutMs: Infinity, deadlineMs: Infinity, aliveCheckMs: 2 ** 31 - 1 }).close();
    h.swarm.stop();
  });

  it.each<[string, unknown, RegExp]>([
    ['a misspelt signal', { signall: new AbortController().signal }, /^step options: unknown key "signall" \(known: signal\)$/],
    ['a signal that is not an AbortSignal', { signal: 'stop' }, /^step options: "signal" must be an AbortSignal, got "stop"$/],
    ['null', null, /step options must be an object \{ signal\? \}, got null/],
  ])('step options: %s is InvalidInput, and the session goes on', async (_what, options, message) => {
    const h = harness();
    const session = h.swarm.session({}, h.runStage);
    expectError(await rejected(session.step(1, options as never)), SessionError, 'InvalidInput', message);
    expect(session.stats().state).toBe('open');
    expect(session.stats().calls).toBe(0);
    await h.drive(session.step(1));
    expect(session.stats().steps).toBe(1);
    session.close();
    h.swarm.stop();
  });

  it('a step longer than the latency bound still releases: the session feeds the bound', async () => {
    const h = harness({ swarmConfig: { ...config, leaseTtlMs: 100_000_000 } });
    for (const p of sessionProfiles) h.behaviour.set(p.id, () => ({ kind: 'ok', ms: 700_000 }));
    const session = h.swarm.session({}, h.runStage, { stageTimeoutMs: Infinity });
    const nodes = session.route.stages.map((s) => s.nodeId);
    await h.drive(session.step(1));
    expect(() => session.close()).not.toThrow();
    expect(h.swarm.inFlight()).toBe(0);
    for (const n of nodes) expect(h.swarm.state().nodes[n]?.latencyMs).toBeLessThanOrEqual(600_000);
    h.swarm.stop();
  });

  it('a stage failing after longer than the bound is charged the bound, and the step resumes', async () => {
    const h = harness({ swarmConfig: { ...config, leaseTtlMs: 100_000_000 } });
    const session = h.swarm.session({}, h.runStage, { stageTimeoutMs: 650_000 });
    const first = session.route.stages[0]?.nodeId as string;
    h.behaviour.set(first, () => ({ kind: 'hang' }));
    await h.drive(session.step(1));
    expect(session.stats().resumes).toBe(1);
    expect(h.swarm.state().nodes[first]?.latencyMs).toBeLessThanOrEqual(600_000);
    session.close();
    h.swarm.stop();
  });
});
