/**
 * W6 (kills mid-generation) on two seeds: W6's targets for resume against restart, and
 * determinism. The figures are virtual time and layer counts, not wall-clock measurements.
 */
import { describe, expect, it } from 'vitest';
import { runSessionSim } from '../../src/sim/load/session-sim.js';

describe('runSessionSim (W6)', () => {
  it('resume loses no session that has a cover, answers right, and recomputes only the failed spans', async () => {
    const result = await runSessionSim({ seed: 1, seeds: 2, sessions: 24 });
    const by = new Map(result.strategies.map((s) => [s.strategy, s]));
    const resume = by.get('resume');
    const restart = by.get('restart');
    if (resume === undefined || restart === undefined) throw new Error('missing strategy');
    for (const s of result.strategies) {
      for (const run of s.runs) {
        expect(run.lostWithCover).toBe(0);
        expect(run.correct).toBe(run.completed);
      }
    }
    expect(resume.runs.reduce((n, r) => n + r.failures, 0)).toBeGreaterThan(0);
    expect(resume.runs.every((r) => r.rerunLayerSteps === 0)).toBe(true);
    expect(restart.runs.some((r) => r.rerunLayerSteps > 0)).toBe(true);
    const target = (text: string) => result.targets.find((t) => t.target.startsWith(text));
    expect(target('worst failure')?.pass).toBe(true);
    expect(target('recomputed layer-steps')?.pass).toBe(true);
    expect(target('sessions lost where a cover exists')?.value).toBe(0);
  });

  it('is deterministic: the same seed gives the same figures', async () => {
    const a = await runSessionSim({ seed: 3, seeds: 1, sessions: 8 });
    const b = await runSessionSim({ seed: 3, seeds: 1, sessions: 8 });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
  });
});
