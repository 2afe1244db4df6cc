/**
 * Precise mode (docs/prefix-cache.md, "Precise mode"): a copy whose first stage's engine reports
 * its cache is fed by the reports, keyed on the router's own hash of the token ids; a gap, a
 * restart, a new copy ask for a snapshot and the copy is estimated until it comes.
 */
import { describe, expect, it } from 'vitest';
import { createSwarm, type NodeProfile } from '../../src/index.js';
import { kvReportIssue, preciseCache, type KvBlock, type KvEvent, type KvReport } from '../../src/prefix/index.js';
import { PROVISIONAL_REPORTS } from '../../src/prefix/precise-feeds.js';

const nodes: NodeProfile[] = Array.from({ length: 4 }, (_, i) => ({ id: `n${i}`, memoryGb: 16, score: 1, latencyMs: 10 }));
const config = { models: [{ id: 'm', layers: 8, layerGb: 1, pipelines: 4 }] };
const ids = (n: number, from: number): number[] => Array.from({ length: n }, (_, i) => from + i);

/** A prompt's blocks as an engine names them: any names (here its own counter), each after its parent. */
function engineBlocks(prompt: readonly number[], size: number, name: string): KvBlock[] {
  const out: KvBlock[] = [];
  for (let k = 0; (k + 1) * size <= prompt.length; k++) out.push({ hash: `${name}${k}`, ...(k > 0 ? { parent: `${name}${k - 1}` } : {}), tokens: prompt.slice(k * size, (k + 1) * size) });
  return out;
}

function setup() {
  const precise = preciseCache();
  const swarm = createSwarm(nodes, config, { seed: 1, prefixCache: precise.plugin });
  const pipelines = swarm.state().plan.pipelines;
  expect(pipelines.every((p) => p.stages.length === 1)).toBe(true);
  const feeds = () => {
    swarm.route({ prompt: [1] }); // the index is built at the first prompt
    return precise.feeds()!;
  };
  const report = (nodeId: string, r: Partial<KvReport> & { events?: KvEvent[] }): boolean => {
    const full: KvReport = { epoch: 'e1', blockSize: 16, events: [], ...r };
    expect(kvReportIssue(full)).toBeUndefined();
    return feeds().accept(nodeId, full);
  };
  return { swarm, pipelines, feeds, report };
}

describe('precise mode', () => {
  const prompt = ids(64, 100);

  it('a snapshot makes a copy precise: its blocks route the prompt to it; a route\'s blocks are provisional until its engine reports them', () => {
    const { swarm, pipelines, feeds, report } = setup();
    const [p2] = [pipelines[2]!];
    const node = p2.stages[0]!.nodeId;
    expect(report(node, {})).toBe(true); // a new node: asks for its snapshot
    expect(feeds().stats().precise).toEqual([]);
    expect(report(node, { snapshot: { seq: 0, stored: [{ model: 'm', blocks: engineBlocks(prompt, 16, 'x') }] } })).toBe(false);
    expect(feeds().stats().precise).toEqual([p2.id]);
    const r = swarm.route({ prompt: [...prompt, 7, 8] });
    expect([r.pipelineId, r.cachedTokens]).toEqual([p2.id, 64]);
    // every copy precise: a route's blocks are provisional on its copy (coming: its prefill will
    // store them), and go after PROVISIONAL_REPORTS reports of its engine that do not store them
    for (const p of pipelines) if (p !== p2) report(p.stages[0]!.nodeId, { snapshot: { seq: 0, stored: [] } });
    expect(feeds().stats().precise).toHaveLength(4);
    const other = ids(48, 5000);
    const sent = swarm.route({ prompt: other });
    const again = swarm.route({ prompt: other });
    expect([again.pipelineId, again.cachedTokens]).toEqual([sent.pipelineId, 48]);
    const sentNode = pipelines.find((p) => p.id === sent.pipelineId)!.stages[0]!.nodeId;
    for (let i = 1; i < PROVISIONAL_REPORTS; i++) report(sentNode, {});
    expect(swarm.route({ prompt: other }).cachedTokens).toBe(48);
    report(sentNode, {});
    expect(swarm.route({ prompt: other }).cachedTokens).toBe(0);
    swarm.stop();
  });

  it('stored and removed events keep the copy exact; removing a block drops the blocks after it', () => {
    const { swarm, pipelines, report } = setup();
    const p0 = pipelines[0]!;
    const node = p0.stages[0]!.nodeId;
    report(node, {});
    report(node, { snapshot: { seq: 3, stored: [] } });
    const blocks = engineBlocks(prompt, 16, 'h');
    expect(report(node, { events: [{ seq: 4, kind: 'stored', model: 'm', blocks: blocks.slice(0, 2) }, { seq: 5, kind: 'stored', model: 'm', blocks: blocks.slice(2) }] })).toBe(false);
    expect(swarm.route({ prompt }).cachedTokens).toBe(64);
    expect(report(node, { events: [{ seq: 5, kind: 'stored', model: 'm', blocks: [] }, { seq: 6, kind: 'removed', model: 'm', hashes: ['h2'] }] })).toBe(false);
    const r = swarm.route({ prompt });
    expect([r.pipelineId, r.cachedTokens]).toEqual([p0.id, 32]); // h3 went with h2
    report(node, { events: [{ seq: 7, kind: 'cleared' }] });
    expect(swarm.route({ prompt }).cachedTokens).toBe(0);
    swarm.stop();
  });

  it('a gap in the sequence numbers falls back to estimation until a snapshot heals it', () => {
    const { swarm, pipelines, feeds, report } = setup();
    const p1 = pipelines[1]!;
    const node = p1.stages[0]!.nodeId;
    report(node, {});
    report(node, { snapshot: { seq: 0, stored: [] } });
    expect(report(node, { events: [{ seq: 1, kind: 'stored', model: 'm', blocks: engineBlocks(prompt, 16, 'a').slice(0, 1) }] })).toBe(false);
    expect(report(node, { events: [{ seq: 3, kind: 'stored', model: 'm', blocks: engineBlocks(prompt, 16, 'a').slice(1) }] })).toBe(true); // 2 was lost
    expect(feeds().stats()).toMatchObject({ precise: [], gaps: 1, gapsHealed: 0 });
    expect(report(node, {})).toBe(true); // still waiting: events are not applied
    expect(report(node, { snapshot: { seq: 3, stored: [{ model: 'm', blocks: engineBlocks(prompt, 16, 'a') }] }, events: [{ seq: 4, kind: 'removed', model: 'm', hashes: ['a3'] }] })).toBe(false);
    expect(feeds().stats()).toMatchObject({ precise: [p1.id], gaps: 1, gapsHealed: 1, snapshots: 2 });
    const r = swarm.route({ prompt });
    expect([r.pipelineId, r.cachedTokens]).toEqual([p1.id, 48]); // the snapshot, then the event after it
    swarm.stop();
  });

  it('a restart (a new epoch) wipes the copy and asks for a snapshot; the engine block size cuts id prompts', () => {
    const { swarm, pipelines, feeds, report } = setup();
    const p3 = pipelines[3]!;
    const node = p3.stages[0]!.nodeId;
    report(node, {});
    report(node, { snapshot: { seq: 0, stored: [{ model: 'm', blocks: engineBlocks(prompt, 16, 'b') }] } });
    expect(swarm.route({ prompt }).cachedTokens).toBe(64);
    expect(report(node, { epoch: 'e2', blockSize: 32 })).toBe(true);
    expect(feeds().stats()).toMatchObject({ precise: [], restarts: 1 });
    expect(swarm.route({ prompt }).cachedTokens).toBe(0);
    report(node, { epoch: 'e2', blockSize: 32, snapshot: { seq: 0, stored: [{ model: 'm', blocks: engineBlocks(prompt.slice(0, 48), 32, 'c') }] } });
    expect(feeds().blockSize('m')).toBe(32);
    const r = swarm.route({ prompt });
    expect([r.pipelineId, r.cachedTokens]).toEqual([p3.id, 32]);
    swarm.stop();
  });

  it('refuses a malformed report naming the field', () => {
    expect(kvReportIssue({ epoch: 'e', blockSize: 2, events: [{ seq: 1, kind: 'stored', model: 'm', blocks: [{ hash: 'a', tokens: [1] }] }] })).toBe('events/0/blocks/0/tokens: expected 2 token ids (the block size)');
    expect(kvReportIssue({ epoch: 'e', blockSize: 2, events: [{ seq: 2, kind: 'cleared' }, { seq: 2, kind: 'cleared' }] })).toBe("events/1/seq: expected an integer above the previous event's");
    expect(kvReportIssue({ epoch: '', blockSize: 2, events: [] })).toMatch(/^epoch/);
  });
});
