import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadTopology, type Topology } from '../../src/sim/topology.js';
import { newcomerOf, runSwarmSim, swarmSimOptionIssue } from '../../src/sim/swarm-sim.js';

function example(pipelines = 2): Topology {
  const r = loadTopology(readFileSync('examples/swarm.json', 'utf8'), 'examples/swarm.json', { pipelines });
  if (!r.ok) throw r.error;
  return r.value;
}

describe('runSwarmSim', () => {
  it('runs start, failover, growth and revive, with a status and a route after each', () => {
    const report = runSwarmSim(example(), { kill: 'gpu', seed: 1 });
    expect(report.steps.map((s) => [s.step, s.status])).toEqual([
      ['start', 'healthy'],
      ['failover', 'degraded'],
      ['growth', 'healthy'],
      ['revive', 'healthy'],
    ]);
    expect(report.planValid).toBe(true);
    expect(report.planIssues).toEqual([]);
  });

  it('fails over by copy to a route that avoids the killed node, computed from the route that used it', () => {
    const failover = runSwarmSim(example(), { kill: 'gpu', seed: 1 }).steps[1];
    if (failover?.step !== 'failover') throw new Error('no failover step');
    expect(failover.recovery?.strategy).toBe('copy');
    expect(failover.recovery?.from.stages.map((s) => s.nodeId)).toContain('gpu');
    expect(failover.route?.stages.map((s) => s.nodeId)).not.toContain('gpu');
    expect(failover.unrecoverable).toEqual([]);
  });

  it('grows with a twin of the killed node by default, which serves in its place', () => {
    const growth = runSwarmSim(example(), { kill: 'gpu', seed: 1 }).steps[2];
    if (growth?.step !== 'growth') throw new Error('no growth step');
    expect(growth.added).toEqual({ id: 'gpu-2', memoryGb: 24, score: 16, latencyMs: 4 });
    // Six nodes, three models of two copies each: every node is one copy of its own (disjoint
    // copies, docs/cost.md), so the base model is short of an intact copy and the twin restores it.
    expect(growth.role).toBe('restore');
    expect(growth.route?.stages.map((s) => s.nodeId)).toContain('gpu-2');
    expect(growth.route?.stages.map((s) => s.nodeId)).not.toContain('gpu');
  });

  it("shows each copy's per-token time after every step; the route is the intact copy with the lowest", () => {
    const report = runSwarmSim(example(), { kill: 'gpu', seed: 1 });
    for (const step of report.steps) {
      expect(step.copies.length).toBeGreaterThanOrEqual(2);
      for (const c of step.copies) {
        expect(c.modelId).toBe('hecate-8b');
        expect(c.perTokenMs).toBeCloseTo(c.computeMs + c.hopMs, 1);
        expect(c.computeMs).toBeGreaterThan(0);
      }
      const intact = step.copies.filter((c) => c.intact);
      const best = Math.min(...intact.map((c) => c.perTokenMs));
      const served = step.copies.find((c) => c.pipelineId === step.route?.pipelineId);
      expect(served?.intact).toBe(true);
      expect(served?.perTokenMs).toBe(best);
      if (step.step === 'start') expect(step.copies.map((c) => c.pipelineId)).toEqual(step.pipelines.filter((id) => id.startsWith('hecate-8b/')).sort());
    }
    // After gpu dies its copy is reported broken.
    expect(report.steps[1]?.copies.some((c) => !c.intact)).toBe(true);
  });

  it("gives each copy its throughput with every node's compute counted once, 0 when broken", () => {
    const topology = example();
    const report = runSwarmSim(topology, { kill: 'gpu', seed: 1 });
    const [start, failover] = report.steps;
    const score = new Map(topology.nodes.map((n) => [n.id, n.score ?? 1] as const));
    // Disjoint copies: each copy runs at 1 / its slowest stage.
    expect(start?.copies.map((c) => c.throughput)).toEqual([16 / 32, (score.get('desktop') ?? 0) / 32]);
    expect(failover?.copies.find((c) => !c.intact)?.throughput).toBe(0);
  });

  it('kills the first node of the initial route when no node is named', () => {
    expect(runSwarmSim(example(), { seed: 1 }).kill).toBe('gpu');
  });

  it('retires a node on request and relocates or drops its layers, keeping the plan valid', () => {
    const report = runSwarmSim(example(), { kill: 'gpu', seed: 1, retire: 'tablet' });
    const retire = report.steps[4];
    if (retire?.step !== 'retire') throw new Error('no retire step');
    expect(retire.relocated.length + retire.dropped.length).toBeGreaterThan(0);
    expect(report.plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId))).not.toContain('tablet');
    expect(report.planValid).toBe(true);
  });

  it('is deterministic with a seed', () => {
    expect(JSON.stringify(runSwarmSim(example(), { kill: 'gpu', seed: 3 }))).toBe(JSON.stringify(runSwarmSim(example(), { kill: 'gpu', seed: 3 })));
  });

  it('reports a route error instead of throwing when nothing is left to serve', () => {
    const t: Topology = { models: [{ id: 'base', layers: 4 }], nodes: [{ id: 'a', memoryGb: 4 }] };
    const report = runSwarmSim(t, { kill: 'a', add: { id: 'tiny', memoryGb: 1 }, revive: false, seed: 1 });
    expect(report.steps[1]).toMatchObject({ step: 'failover', status: 'failed', route: null, routeError: { code: 'NoHealthyPipeline' }, unrecoverable: ['base'] });
  });
});

describe('swarmSimOptionIssue', () => {
  it('names the flag, the file and the known nodes', () => {
    expect(swarmSimOptionIssue(example(), { kill: 'toaster', source: 'x.json' })).toMatch(/^--kill: unknown node "toaster" in x\.json \(nodes: gpu, desktop/);
    expect(swarmSimOptionIssue(example(), { add: { id: 'gpu', memoryGb: 1 } })).toMatch(/^--add: node "gpu" is already/);
    expect(swarmSimOptionIssue(example(), { model: 'nope' })).toMatch(/^--model: unknown model "nope"/);
    expect(swarmSimOptionIssue(example(), { kill: 'gpu', retire: 'gpu-2' })).toBeUndefined();
  });

  it('picks a fresh id for the default newcomer', () => {
    const t: Topology = { models: [{ id: 'base', layers: 2 }], nodes: [{ id: 'a', memoryGb: 2 }, { id: 'a-2', memoryGb: 2 }] };
    expect(newcomerOf(t, { kill: 'a' })?.id).toBe('a-3');
  });
});
