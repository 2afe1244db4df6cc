import { describe, expect, it } from 'vitest';
import { runLoadSim } from '../../src/sim/load/run.js';
import { oursDetect, SIM_DETECTOR } from '../../src/sim/load/swarm-policy.js';
import { evaluateTargets } from '../../src/sim/load/targets.js';
import { p2cPeakEwma } from '../../src/sim/load/peak-ewma.js';

describe('ours-detect: W4 without health reports', () => {
  const run = (detect = SIM_DETECTOR) => runLoadSim({ workloads: ['w4'], seeds: 1, requests: 4000, policies: [p2cPeakEwma(), oursDetect({ detect })] });

  it('finds the dead node itself: the detector and ejection stop the traffic to it', () => {
    const found = run();
    // The same swarm with a detector too dull to ever fire: only leases and ejection (on timeouts and errors) act.
    const blind = run({ ...SIM_DETECTOR, threshold: 300, acceptablePauseMs: 3_600_000 });
    for (const id of ['w4-black-hole', 'w4-fail-fast']) {
      const dead = (r: typeof found) => r.workloads.find((w) => w.workload === id)?.policies.find((p) => p.policy === 'ours-detect')?.median.deadSent ?? Number.NaN;
      expect(dead(found), id).toBeLessThan(30);
      expect(dead(found), id).toBeLessThanOrEqual(dead(blind));
    }
  });

  it('is judged on the dead-node target beside ours-reserve', () => {
    const targets = evaluateTargets(run().workloads, 6).filter((t) => t.target.includes('ours-detect'));
    expect(targets.map((t) => t.workload)).toEqual(['w4-black-hole', 'w4-fail-fast']);
  });
});
