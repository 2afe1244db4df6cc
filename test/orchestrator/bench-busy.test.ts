/**
 * The bench and a busy answer (docs/security.md, "Membership: calls, not beats"): a 503 `Full` neither
 * proves a member nor clears its misses. A member that hangs (each hang costs a client its stage
 * budget) and answers 503 once before the bench's count is reached is still benched.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { createSwarm } from '../../src/runtime/index.js';
import { createParts } from '../../src/orchestrator/orchestrator-parts.js';
import { MemberBench } from '../../src/orchestrator/member-bench.js';
import { verdictOf } from '../../src/orchestrator/stage-client.js';
import { NodeBusyError } from '../../src/sessions/node-busy.js';

const models = [{ id: 'base', layers: 12, pipelines: 2 }];
const profiles = ['a', 'b', 'c', 'd'].map((id) => ({ id, memoryGb: 6 }));
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

describe('the bench and a busy answer', () => {
  it('a 503 neither proves a member on trial nor clears a proven one\'s misses', async () => {
    const clock = new ManualClock(10_000);
    const parts = createParts(clock, models, { models }, () => {});
    const swarm = createSwarm(profiles, { models }, { seed: 1, clock });
    parts.seat.seatLocal(swarm);
    for (const p of profiles) parts.registry.joined(p, `http://127.0.0.1:${9000 + p.id.charCodeAt(0)}`);
    const bench = new MemberBench(parts, { probe: () => Promise.resolve(false) });
    closers.push(() => bench.close(), () => swarm.stop());
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    const busy = verdictOf('busy', new NodeBusyError('a', 'agent "a" answered 503: Full'));
    // On trial: its first 503 must not make it proven (then its first unanswered call benches it).
    bench.called('a', busy);
    bench.called('a', 'unanswered');
    await settle();
    expect(bench.holds('a')).toBe(true);
    // Proven by a real answer, then four hangs and a 503, four times over: benched at the fifth hang in a row.
    bench.called('b', 'answered');
    for (let round = 0; round < 4 && !bench.holds('b'); round++) {
      for (let i = 0; i < 4; i++) bench.called('b', 'unanswered');
      bench.called('b', busy);
    }
    await settle();
    expect(bench.holds('b')).toBe(true);
  });
});
