/**
 * `swarm-sim --rebalance` and its HTML report (docs/rebalance.md, docs/cli.md): a last
 * `rebalance` step with each move, drawn in the report.
 */
import { describe, expect, it } from 'vitest';
import { runSwarmSim } from '../../src/sim/swarm-sim.js';
import { renderHtmlReport } from '../../src/sim/report-html.js';
import type { Topology } from '../../src/sim/topology.js';

const topology: Topology = {
  models: [{ id: 'base', layers: 32 }],
  nodes: [
    { id: 'fast', memoryGb: 8, score: 8 },
    { id: 'slow', memoryGb: 32, score: 1 },
    { id: 'mid', memoryGb: 16, score: 3 },
  ],
};

describe('swarm-sim rebalance step', () => {
  it('ends with the moves made, the throughput before and after, and a valid plan; the report shows each move', () => {
    const report = runSwarmSim(topology, { kill: 'mid', add: { id: 'new', memoryGb: 20, score: 8 }, rebalance: true, seed: 1 });
    const last = report.steps[report.steps.length - 1];
    expect(last?.step).toBe('rebalance');
    if (last?.step !== 'rebalance') return;
    expect(last.moves.length).toBeGreaterThan(0);
    expect(last.after).toBeGreaterThan(last.before);
    expect(report.planValid).toBe(true);
    for (const m of last.moves) for (const p of m.adds) expect(report.plan.pipelines.map((q) => q.id)).toContain(p.id);
    const html = renderHtmlReport({ report });
    for (const m of last.moves) expect(html).toContain(`move ${m.id}`);
    expect(html).toContain('rebalance');
    // Without the flag the run is what it was: no rebalance step.
    expect(runSwarmSim(topology, { kill: 'mid', seed: 1 }).steps.map((s) => s.step)).not.toContain('rebalance');
  });
});
