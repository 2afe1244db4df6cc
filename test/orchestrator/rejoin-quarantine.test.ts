/**
 * Joining again does not end a quarantine (docs/security.md, "Roles"): a liar quarantined for a
 * wrong output rejoins under its id and stays down (`integrity`); a node the detector or a leave
 * took down comes back on its join, as before. In process: the join route is the point, not the
 * process boundary.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';

let orchestrator: RunningOrchestrator;

beforeAll(async () => {
  orchestrator = await startOrchestrator({ models: [{ id: 'base', kind: 'base', layers: 4, pipelines: 1 }], nodes: [{ id: 'liar', memoryGb: 8, score: 2 }, { id: 'spare', memoryGb: 8, score: 1 }] });
});

afterAll(async () => {
  await orchestrator.close();
});

const join = async (id: string): Promise<number> => (await fetch(`${orchestrator.url}/v1/nodes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, memoryGb: 8, url: 'http://127.0.0.1:9' }) })).status;

describe('a rejoin', () => {
  it('leaves a quarantined node down (integrity); brings back one marked down', async () => {
    expect(await join('liar')).toBe(200);
    expect(await join('spare')).toBe(200);
    const swarm = orchestrator.swarm();
    if (swarm === undefined) throw new Error('no swarm');
    expect(swarm.node('liar')?.state).toBe('alive');
    swarm.quarantine('liar');
    expect(swarm.node('liar')).toMatchObject({ state: 'down', cause: 'integrity' });
    expect(await join('liar')).toBe(200);
    expect(swarm.node('liar')).toMatchObject({ state: 'down', cause: 'integrity' });
    swarm.markDown('spare');
    expect(swarm.node('spare')).toMatchObject({ state: 'down', cause: 'manual' });
    expect(await join('spare')).toBe(200);
    expect(swarm.node('spare')?.state).toBe('alive');
  });
});
