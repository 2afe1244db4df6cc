/**
 * The bench (member-bench.ts), in process on a ManualClock: a member on trial is benched at its
 * first unanswered stage call, a proven one at five in a row; neither its heartbeats nor its
 * joins revive it; it is probed when heard past a back-off that grows with each strike, and
 * readmitted on trial when it answers one; a call it answers clears its record.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { createSwarm } from '../../src/runtime/index.js';
import { createParts } from '../../src/orchestrator/orchestrator-parts.js';
import { heartbeat, join, leave } from '../../src/orchestrator/agent-routes.js';
import { createJoinEdge } from '../../src/orchestrator/join-edge.js';
import { MemberBench } from '../../src/orchestrator/member-bench.js';
import { verdictOf } from '../../src/orchestrator/stage-client.js';
import { ServeError } from '../../src/wire/serve-error.js';

const models = [{ id: 'base', layers: 12, pipelines: 2 }];
const profiles = ['a', 'b', 'c', 'd'].map((id) => ({ id, memoryGb: 6 }));
const url = (id: string) => `http://127.0.0.1:${9000 + id.charCodeAt(0)}`;
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A swarm of a–d, every one joined, and a bench whose probes the test answers. */
function setUp() {
  const clock = new ManualClock(10_000);
  const parts = createParts(clock, models, { models }, () => {});
  const swarm = createSwarm(profiles, { models }, { seed: 1, clock });
  parts.seat.seatLocal(swarm);
  for (const p of profiles) parts.registry.joined(p, url(p.id));
  const probes: { id: string; answer: (ok: boolean) => void }[] = [];
  const bench = new MemberBench(parts, { probe: (_url, id) => new Promise<boolean>((resolve) => probes.push({ id, answer: resolve })) });
  parts.registry.whenForgotten((id) => bench.forget(id));
  const edge = { ...createJoinEdge(parts, {}), bench };
  closers.push(() => edge.silent.close(), () => swarm.stop());
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { clock, parts, swarm, bench, probes, edge, settle };
}

describe('the bench', () => {
  it('benches a member on trial at its first unanswered call; its heartbeats and joins do not revive it', async () => {
    const { swarm, bench, probes, parts, edge, settle } = setUp();
    bench.called('a', 'other'); // an answered error, an aborted call: nothing
    expect(bench.holds('a')).toBe(false);
    bench.called('a', 'unanswered');
    await settle();
    expect(bench.holds('a')).toBe(true);
    expect(swarm.node('a')).toMatchObject({ state: 'down', cause: 'manual' });
    expect(await parts.metrics.registry.getSingleMetricAsString('hecate_node_bench_total')).toContain('hecate_node_bench_total{event="benched"} 1');
    // Heard: probed at once (its first strike has no back-off), still down meanwhile.
    await heartbeat(parts, 'a', {}, bench);
    await join(parts, { id: 'a', memoryGb: 6, url: url('a') }, edge);
    expect(probes.map((p) => p.id)).toEqual(['a']); // one at a time
    expect(swarm.node('a')?.state).toBe('down');
    probes[0]?.answer(false);
    await settle();
    expect(bench.holds('a')).toBe(true);
    // A leave and a join put it back in the plan: down again at once.
    await leave(parts, 'a');
    await join(parts, { id: 'a', memoryGb: 6, url: url('a') }, edge);
    expect(swarm.node('a')).toMatchObject({ state: 'down', cause: 'manual' });
    expect(bench.holds('a')).toBe(true);
    // Revived by another orchestrator's word (a replica's heartbeat route): its next unanswered call takes it down again.
    await swarm.markAlive('a');
    bench.called('a', 'unanswered');
    await settle();
    expect(swarm.node('a')).toMatchObject({ state: 'down', cause: 'manual' });
  });

  it('probes past a back-off growing with each strike, and readmits on trial at an answered probe', async () => {
    const { clock, swarm, bench, probes, settle } = setUp();
    bench.called('b', 'unanswered');
    await settle();
    const answerNext = async (ok: boolean) => {
      probes.at(-1)?.answer(ok);
      await settle();
    };
    bench.heard('b');
    expect(probes.length).toBe(1);
    /** Heard just before `ms` have passed, it is not probed; heard at `ms`, it is. */
    const probedAfter = (ms: number) => {
      const before = probes.length;
      bench.heard('b');
      clock.advance(ms - 1);
      bench.heard('b');
      expect(probes.length).toBe(before);
      clock.advance(1);
      bench.heard('b');
      expect(probes.length).toBe(before + 1);
    };
    await answerNext(false); // strike 2: 15 s
    probedAfter(15_000);
    await answerNext(false); // strike 3: 30 s
    probedAfter(30_000);
    await answerNext(true);
    expect(bench.holds('b')).toBe(false);
    expect(swarm.node('b')?.state).toBe('alive');
    // On trial: its first unanswered call benches it again, the back-off longer still (strike 4: 60 s).
    bench.called('b', 'unanswered');
    await settle();
    expect(swarm.node('b')).toMatchObject({ state: 'down', cause: 'manual' });
    probedAfter(60_000);
    await answerNext(true);
    // A call it answers proves it: its strikes are cleared, and it takes five misses in a row.
    bench.called('b', 'answered');
    for (let i = 0; i < 4; i++) bench.called('b', 'unanswered');
    bench.called('b', 'answered');
    for (let i = 0; i < 4; i++) bench.called('b', 'unanswered');
    await settle();
    expect(bench.holds('b')).toBe(false);
    bench.called('b', 'unanswered');
    await settle();
    expect(bench.holds('b')).toBe(true);
    bench.heard('b'); // strike 1 after a proof: no back-off
    expect(probes.length).toBe(5);
  });

  it('forgets a member forgotten from the address book: joined again, it is on trial afresh', async () => {
    const { bench, parts, settle } = setUp();
    bench.called('c', 'unanswered');
    await settle();
    expect(bench.holds('c')).toBe(true);
    expect(bench.benched).toBe(1);
    parts.registry.forget('c');
    expect(bench.holds('c')).toBe(false);
    bench.called('c', 'unanswered'); // not a member any more: nothing
    expect(bench.benched).toBe(0);
  });
});

describe('verdictOf', () => {
  it('counts an answer, a call past its budget or with no HTTP reply, and nothing else', () => {
    expect(verdictOf('ok')).toBe('answered');
    expect(verdictOf('timeout', new ServeError('StageFailed', 504, 'late'))).toBe('unanswered');
    expect(verdictOf('error', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('unanswered');
    expect(verdictOf('error', new ServeError('StageFailed', 502, 'agent "a" answered 503'))).toBe('other');
    expect(verdictOf('aborted', new Error('aborted'))).toBe('other');
  });
});
