/**
 * Verification that decides, attacked with real processes (docs/security.md, "Verification"):
 * (1) the default two copies, an agent lying on 30% of its calls, 1 call in 5 verified, 100
 * generations: a disagreement is settled by a third node re-running the span, the liar is
 * quarantined and no answer a check disagreed with is returned; with `--verify-probation 16`
 * (every call of a new agent verified until 16 checks agreed) no wrong answer at all. (2) Three
 * copies, two agents restarted as liars that always agree: the honest agent, established by its
 * checks, outweighs them; they are quarantined, it is not, and 200 of 200 answers are right.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { expectedDigest } from '../../src/wire/digest.js';
import { parseMetrics, stopAll, waitFor, type Child } from './processes.js';
import { postJson, removeServeDirs, startAgentCli, startServe, statusNodes, topologyFile, type StartedServe } from './edge-helpers.js';

const LAYERS = 4;

afterAll(async () => {
  await stopAll();
  removeServeDirs();
});

/** A serve on `topology` with `flags` and its agents (`lies`: id → its --lie-rate), each alive at its URL. */
async function swarm(name: string, topology: string, memoryGb: number, ids: readonly string[], flags: readonly string[], lies: Record<string, number> = {}) {
  const serve = await startServe(name, ['--topology', topology, ...flags]);
  const agents = new Map<string, Child>();
  const start = async (id: string, lieRate = lies[id]): Promise<void> => {
    const { child, url } = await startAgentCli(id, serve, memoryGb, 2, ['--per-layer-ms', '0.1', ...(lieRate !== undefined ? ['--lie-rate', String(lieRate), '--seed', '7'] : [])], { process: true }); // liars are killed and restarted
    agents.set(id, child);
    await waitFor(`agent ${id} alive at ${url}`, async () => {
      const n = (await statusNodes(serve.url, serve.operatorToken)).get(id);
      return n?.state === 'alive' && n.url === url ? true : undefined;
    }, 20_000);
  };
  await Promise.all(ids.map((id) => start(id)));
  return { serve, agents, start };
}

/** `count` generations of 3 steps, four at a time: how many came back right, wrong, failed; the index of each wrong one. */
async function generate(serve: StartedServe, label: string, count: number) {
  const tally = { right: 0, wrong: 0, failed: 0, wrongAt: [] as number[] };
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      const prompt = `${label} ${i}`;
      const reply = await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt, steps: 3 });
      if (reply.status !== 200) tally.failed++;
      else if (reply.body.digest === expectedDigest(LAYERS, prompt, 3)) tally.right++;
      else (tally.wrong++, tally.wrongAt.push(i));
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  tally.wrongAt.sort((a, b) => a - b);
  return tally;
}

const verdicts = async (serve: StartedServe) => {
  const m = parseMetrics(await (await fetch(`${serve.url}/metrics`)).text());
  return Object.fromEntries(['agreed', 'quarantined', 'inconclusive', 'disputed', 'skipped'].map((v) => [v, m.get(`hecate_verifications_total{verdict="${v}"}`) ?? 0]));
};
const states = async (serve: StartedServe) => Object.fromEntries([...(await statusNodes(serve.url))].map(([id, n]) => [id, n.downCause === null ? n.state : `${n.state} ${n.downCause}`]));

describe('two copies, one liar (lie rate 0.3, 1 call in 5 verified, 100 generations)', () => {
  // 3 GB agents: two copies of two stages each (n1 → n2, n3 → n4); n1 lies.
  const topology = topologyFile('verify-two', { models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 2 }], nodes: ['n1', 'n2', 'n3', 'n4'].map((id) => ({ id, memoryGb: 3, score: 2 })) });

  for (const probation of [0, 16]) {
    it(`settles every disagreement before answering${probation > 0 ? `; with --verify-probation ${probation} no wrong answer at all` : ''}`, async () => {
      const flags = ['--verify-sample', '0.2', ...(probation > 0 ? ['--verify-probation', String(probation)] : [])];
      const { serve } = await swarm(`serve two copies ${probation}`, topology, 3, ['n1', 'n2', 'n3', 'n4'], flags, { n1: 0.3 });
      const plan = (await (await fetch(`${serve.url}/v1/status`)).json()) as { plan: { pipelines: { stages: { nodeId: string }[] }[] } };
      expect(plan.plan.pipelines.map((p) => p.stages.map((s) => s.nodeId).join(' '))).toEqual(['n1 n2', 'n3 n4']);
      const tally = await generate(serve, `two ${probation}`, 100);
      const v = await verdicts(serve);
      console.log(`two copies, liar n1 at 0.3, sample 0.2, probation ${probation}: ${tally.right} right, ${tally.wrong} wrong (generations ${tally.wrongAt.join(', ') || 'none'}), ${tally.failed} failed of 100; verdicts ${JSON.stringify(v)}; ${JSON.stringify(await states(serve))}`);
      expect(await states(serve)).toEqual({ n1: 'down integrity', n2: 'alive', n3: 'alive', n4: 'alive' });
      expect(v['quarantined']).toBeGreaterThanOrEqual(1); // once, or again by a generation that saw it lie before the mark
      // Every disagreement was settled (a third node re-ran the span): none answered unchecked, none failed.
      expect([v['inconclusive'], v['disputed'], tally.failed]).toEqual([0, 0, 0]);
      // A wrong answer is a lie no check saw, before the liar was caught; on probation there is none.
      if (probation > 0) expect(tally.wrong).toBe(0);
      else expect(tally.wrong).toBeLessThan(20);
      await stopAll();
    }, 120_000);
  }
});

describe('three copies, two liars that agree', () => {
  const topology = topologyFile('verify-collude', { models: [{ id: 'base', kind: 'base', layers: LAYERS, pipelines: 3 }], nodes: ['a', 'b', 'c'].map((id) => ({ id, memoryGb: 6, score: 2 })) });

  it('cannot get the established honest agent quarantined: they are, and 200 of 200 answers are right', async () => {
    const { serve, agents, start } = await swarm('serve collude', topology, 6, ['a', 'b', 'c'], ['--verify-sample', '1']);
    const honest = await generate(serve, 'honest', 12); // every call checked: each agent earns its standing
    expect(honest).toMatchObject({ right: 12, wrong: 0, failed: 0 });
    // b and c restart as liars (the same ids and keys: a rejoin), wrong on every call, alike.
    for (const id of ['b', 'c']) agents.get(id)?.process.kill('SIGKILL');
    await Promise.all(['b', 'c'].map((id) => start(id, 1)));
    const tally = await generate(serve, 'collude', 200);
    const v = await verdicts(serve);
    console.log(`three copies, b and c lying alike on every call after a rejoin: ${tally.right} right, ${tally.wrong} wrong, ${tally.failed} failed of 200; verdicts ${JSON.stringify(v)}; ${JSON.stringify(await states(serve))}`);
    expect(await states(serve)).toEqual({ a: 'alive', b: 'down integrity', c: 'down integrity' });
    expect(tally).toMatchObject({ right: 200, wrong: 0, failed: 0 });
  }, 120_000);
});
