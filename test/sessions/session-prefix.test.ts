/** Sessions and the prefix cache (docs/prefix-cache.md): after a failover the new copy learns the session's prompt. */
import { describe, expect, it } from 'vitest';
import { prefixCache } from '../../src/prefix/index.js';
import { config, harness, nextInput } from './session-fixtures.js';

/** The fixture's swarm with room for KV caches (a quarter GB per layer: each node then holds 4 layers at most) and the prefix-cache plug-in, passed through the sessions entry's createSessionSwarm. */
const roomy = { swarmConfig: { ...config, models: config.models.map((m) => ({ ...m, kvReserveGb: 0.25 })) }, prefixCache: prefixCache() };

const prompt = 'The conversation so far, replayed into whichever copy serves it. '.repeat(20); // 1,300 characters: 20 blocks

describe('a session with a prompt', () => {
  it('its copy holds the prompt; after a failover to another copy, that copy learns it', async () => {
    const h = harness(roomy);
    const session = h.swarm.session({ prompt }, h.runStage, { backoffMs: 0, onFailure: 'restart' });
    const first = session.route.pipelineId;
    expect(h.swarm.prefixStats()).toMatchObject({ requests: 1, blocks: 20 }); // the session's copy holds it
    let x = 5;
    x = nextInput(await h.drive(session.step(x)), 0);
    h.kill(session.route.stages[0]?.nodeId as string);
    x = nextInput(await h.drive(session.step(x)), 1);
    expect(session.route.pipelineId).not.toBe(first);
    // The dead copy lost its entries; the copy the session moved to learnt the prompt.
    const next = h.swarm.route({ prompt: `${prompt}!` });
    expect(next.pipelineId).toBe(session.route.pipelineId);
    expect(next.cachedTokens).toBe(20 * 16);
    session.close();
  });

  it('a copy learns nothing from a request that opted out', async () => {
    const h = harness(roomy);
    const session = h.swarm.session({ prompt, cache: false }, h.runStage, { backoffMs: 0, onFailure: 'restart' });
    h.kill(session.route.stages[0]?.nodeId as string);
    await h.drive(session.step(5));
    expect(h.swarm.route({ prompt }).cachedTokens).toBe(0);
    session.close();
  });
});
