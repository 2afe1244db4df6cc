import { describe, expect, it } from 'vitest';
import { SessionError } from '../../src/core/errors.js';
import { createSessionSwarm, openSession } from '../../src/sessions/index.js';
import { OUTWEIGH, SpanStanding, STANDING_CAP } from '../../src/sessions/span-standing.js';

const one = (nodeId: string) => [{ nodeId, layerStart: 0, layerEnd: 4 }];

describe('SpanStanding', () => {
  it('weighs a node 1 + its agreed checks up to the cap, 1 once it lost a vote, a chain by its lightest hop', () => {
    const s = new SpanStanding();
    expect(s.weight('a')).toBe(1);
    for (let i = 0; i < STANDING_CAP + 5; i++) s.agreed(['a', 'a', 'b']); // a node counted once per check
    expect(s.of('a')).toEqual({ agreed: STANDING_CAP + 5, disagreed: 0 });
    expect(s.weight('a')).toBe(1 + STANDING_CAP);
    expect(s.copyWeight([...one('a'), ...one('c')])).toBe(1);
    s.disagreed('b');
    expect(s.weight('b')).toBe(1);
  });

  it('starts a node\'s record again when its incarnation changes (an agent that joined again)', () => {
    const joins = new Map([['a', 1]]);
    const s = new SpanStanding({ incarnation: (id) => joins.get(id) });
    s.agreed(['a', 'a']);
    s.agreed(['a']);
    expect(s.weight('a')).toBe(3);
    joins.set('a', 2);
    expect(s.of('a')).toEqual({ agreed: 0, disagreed: 0 });
    s.agreed(['a']);
    expect(s.weight('a')).toBe(2);
    expect(() => new SpanStanding({ incarnation: 1 } as never)).toThrow(/SpanStanding options must be/);
    expect(() => new SpanStanding({ incarnations: () => 1 } as never)).toThrow(SessionError);
  });

  it('draws among the copies the heaviest would not outweigh alone, with the random given', () => {
    const s = new SpanStanding();
    for (let i = 0; i < 10; i++) s.agreed(['a', 'b']);
    const copies = [one('a'), one('fresh'), one('b')];
    const drawn = new Set([0, 0.4, 0.6, 0.99].map((r) => s.draw(copies, () => r)?.[0]?.nodeId));
    expect(drawn).toEqual(new Set(['a', 'b'])); // weight 1 × OUTWEIGH ≤ 11: never drawn while they are
    expect(s.draw([one('fresh'), one('new')], () => 0.7)?.[0]?.nodeId).toBe('new'); // all fresh: any
    expect(s.draw([], () => 0)).toBeUndefined();
    expect(OUTWEIGH).toBe(4);
  });
});

describe('a session whose runner rejects Disputed', () => {
  it('fails the step at once with Disputed, charging no node and retrying nowhere', async () => {
    const swarm = createSessionSwarm([{ id: 'a', memoryGb: 6, score: 1 }, { id: 'b', memoryGb: 6, score: 1 }], { models: [{ id: 'm', kind: 'base', layers: 4, pipelines: 2 }] }, { seed: 1 });
    let calls = 0;
    const session = openSession<number>(swarm, { model: 'm' }, () => {
      calls++;
      throw new SessionError('Disputed', 'disagreed with its check and no third holder could settle it');
    });
    await expect(session.step(1)).rejects.toMatchObject({ code: 'Disputed', message: expect.stringContaining('no third holder') });
    expect(calls).toBe(1);
    expect(['a', 'b'].map((id) => swarm.node(id)?.failures)).toEqual([0, 0]);
    swarm.stop();
  });
});
