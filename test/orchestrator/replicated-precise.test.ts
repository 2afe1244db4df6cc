/**
 * Precise reports shared by replicas (docs/prefix-cache.md, "Precise mode"; a real nats-server):
 * an agent's KV report to one orchestrator feeds the other's index too, over the load channel, so
 * a prompt sharing the reported blocks routes with them cached on either.
 */
import { describe, expect, it } from 'vitest';
import type { RunningOrchestrator } from '../../src/orchestrator/orchestrator.js';
import { waitFor } from './processes.js';
import { replicatedPair } from './replicated-pair.js';

let a: RunningOrchestrator;
let b: RunningOrchestrator;
replicatedPair('precise', (pair) => ({ a, b } = pair));

const post = async (url: string, body: unknown): Promise<any> => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
const gauge = async (o: RunningOrchestrator, name: string): Promise<number | undefined> => {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(await (await fetch(`${o.url}/metrics`)).text());
  return m === null ? undefined : Number(m[1]);
};
const prompt = Array.from({ length: 40 }, (_, i) => 7 + i);
const block = (k: number) => ({ hash: `h${k}`, ...(k > 0 ? { parent: `h${k - 1}` } : {}), tokens: prompt.slice(16 * k, 16 * (k + 1)) });

describe('precise reports over NATS', () => {
  it('a report to one orchestrator makes the copy precise on both, and its blocks route the same on both', async () => {
    expect(await post(`${a.url}/v1/nodes`, { id: 'a1', memoryGb: 8, score: 2, url: 'http://127.0.0.1:9' })).toMatchObject({ id: 'a1', state: 'alive' });
    await waitFor('b to know a1', async () => ((await (await fetch(`${b.url}/v1/status`)).json()) as any).nodes[0]?.url === 'http://127.0.0.1:9' || undefined, 15_000);
    expect(await post(`${a.url}/v1/nodes/a1/kv`, { epoch: 'e1', blockSize: 16, events: [] })).toEqual({ snapshot: true });
    const first = { epoch: 'e1', blockSize: 16, events: [], snapshot: { seq: 0, stored: [{ model: 'base', blocks: [block(0)] }] } };
    let taken = await post(`${a.url}/v1/nodes/a1/kv`, first);
    if (taken.snapshot === true) taken = await post(`${a.url}/v1/nodes/a1/kv`, first); // the plan changed meanwhile (below)
    expect(taken).toEqual({ snapshot: false });
    // An orchestrator asks again for the whole set when the plan changed meanwhile (the join still
    // settling on the replicas): the agent answers with it, as kv-reporter.ts does.
    const report = async (o: RunningOrchestrator, seq: number, event: object, held: number[]) => {
      const answer = await post(`${o.url}/v1/nodes/a1/kv`, { epoch: 'e1', blockSize: 16, events: [{ seq, model: 'base', ...event }] });
      if (answer.snapshot === true) expect(await post(`${o.url}/v1/nodes/a1/kv`, { epoch: 'e1', blockSize: 16, events: [], snapshot: { seq, stored: [{ model: 'base', blocks: held.map(block) }] } })).toEqual({ snapshot: false });
      else expect(answer).toEqual({ snapshot: false });
    };
    await report(a, 1, { kind: 'stored', blocks: [block(1)] }, [0, 1]);
    for (const o of [a, b]) await waitFor('the copy precise with 2 blocks', async () => ((await gauge(o, 'hecate_prefix_copy_precise')) === 1 && (await gauge(o, 'hecate_prefix_precise_blocks')) === 2) || undefined, 15_000);
    for (const o of [a, b]) expect(o.swarm()!.route({ prompt }).cachedTokens).toBe(32);
    // a removal reported to B reaches A
    await report(b, 2, { kind: 'removed', hashes: ['h1'] }, [0]);
    await waitFor('a to hear the removal', async () => (await gauge(a, 'hecate_prefix_precise_blocks')) === 1 || undefined, 15_000);
    for (const o of [a, b]) expect(o.swarm()!.route({ prompt }).cachedTokens).toBe(16);
  });
});
