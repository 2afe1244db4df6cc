/**
 * Blame the right node, and read no reply unchecked (docs/security.md): a rogue agent process
 * (fixtures/rogue-agent.mjs), a member holding the swarm secret and its own key, holds the first
 * stage of the one copy, an honest agent the second.
 * Whatever the rogue answers — a non-number output, a reply of the wrong shape, a reply far past
 * the size cap, a redirect — the orchestrator refuses it before the honest agent sees it, and
 * charges the rogue: it is ejected, the honest agent is never called and stays alive. The
 * orchestrator's memory stays flat under the oversized reply (scaled down from the issue's
 * 400 MB to 64 MiB: the cap is 1 MiB, so the point holds at any size past it). A 503 `Full` (an
 * agent at capacity) is no failure: never charged, never ejected (docs/sessions.md, "A busy node");
 * nor is a first 409 `UnknownSession` (an agent that evicted the state): the call goes again, fresh.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseMetrics, stopAll, waitFor } from './processes.js';
import { postJson, removeServeDirs, rssMb, startAgentCli, startRogue, startServe, statusNodes, topologyFile, type StartedServe } from './edge-helpers.js';

const topology = topologyFile('blame', {
  models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }],
  // The faster node takes the first stage (checked below): the rogue, upstream of the honest h1.
  nodes: [
    { id: 'imp', memoryGb: 6, score: 3 },
    { id: 'h1', memoryGb: 6, score: 1 },
  ],
});

let serve: StartedServe;
let recorder: Server;
let recorded = 0;
let recorderUrl = '';

beforeAll(async () => {
  serve = await startServe('serve', ['--topology', topology, '--eject-after', '2'], { process: true });
  await startAgentCli('h1', serve, 6, 1);
  recorder = createServer((request, response) => {
    recorded++;
    request.resume();
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"nodeId":"imp","layerStart":0,"layerEnd":6,"output":7,"replayOutputs":[],"ms":1}');
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  recorderUrl = `http://127.0.0.1:${(recorder.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await stopAll();
  await new Promise((resolve) => recorder.close(resolve));
  removeServeDirs();
});

async function stageCalls(node: string, outcome: string): Promise<number> {
  return parseMetrics(await (await fetch(`${serve.url}/metrics`)).text()).get(`hecate_stage_calls_total{node="${node}",outcome="${outcome}"}`) ?? 0;
}

/** Until imp is alive and its copy whole again (the Swarm's status, not only imp's state): else a generation is refused as degraded before imp is called. */
async function seated(): Promise<void> {
  await waitFor('imp alive', async () => ((await statusNodes(serve.url)).get('imp')?.state === 'alive' ? true : undefined), 10_000, 50);
  await waitFor('the swarm healthy', async () => (((await (await fetch(`${serve.url}/v1/status`)).json()) as { status: string }).status === 'healthy' ? true : undefined), 10_000, 50);
}

const modes: [string, string, string][] = [
  ['an output that is not a number ("pwned")', 'pwned', ''],
  ['a reply of the wrong shape (layers [null, null], output 1 and no more)', 'nulls', ''],
  ['a reply of 64 MiB', 'huge', '64'],
  ['a 307 redirect to another server', 'redirect', 'RECORDER'],
];

describe('a rogue first stage', () => {
  it('is first in the copy, upstream of the honest agent', async () => {
    const status = (await (await fetch(`${serve.url}/v1/status`)).json()) as { plan: { pipelines: { stages: { nodeId: string }[] }[] } };
    expect(status.plan.pipelines[0]?.stages.map((s) => s.nodeId)).toEqual(['imp', 'h1']);
  });

  for (const [what, mode, extra] of modes) {
    it(`answering ${what} is charged and ejected; the honest agent after it is never called and stays alive`, async () => {
      const rogue = await startRogue(serve, 'imp', 6, 3, mode, extra === 'RECORDER' ? recorderUrl : extra);
      try {
        await seated();
        const h1Errors = await stageCalls('h1', 'error');
        const h1Ok = await stageCalls('h1', 'ok');
        const rssBefore = rssMb(serve.child.process.pid as number);
        const answers = [];
        for (let i = 0; i < 3; i++) answers.push(await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: `p${i}`, steps: 2 }));
        const rssAfter = rssMb(serve.child.process.pid as number);
        // No layers [0, 6) without the rogue: the swarm cannot serve (503), never a wrong 200 or a 500.
        for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(503);
        const nodes = await statusNodes(serve.url);
        expect(nodes.get('imp')?.state).toBe('down');
        expect(nodes.get('h1')?.state).toBe('alive');
        expect(await stageCalls('h1', 'error')).toBe(h1Errors);
        expect(await stageCalls('h1', 'ok')).toBe(h1Ok); // its input never came
        expect(await stageCalls('imp', 'error')).toBeGreaterThanOrEqual(2);
        expect(recorded).toBe(0); // no redirect followed
        expect(rssAfter - rssBefore).toBeLessThan(50);
      } finally {
        await rogue.kill();
      }
    }, 60_000);
  }

  it('answering 503 Full (at capacity) is not charged: never ejected, it stays alive; the generation fails 503 with Retry-After once its retries are spent', async () => {
    const rogue = await startRogue(serve, 'imp', 6, 3, 'full');
    try {
      await seated();
      const h1Ok = await stageCalls('h1', 'ok');
      const impErrors = await stageCalls('imp', 'error'); // the rogues before it were charged
      for (let i = 0; i < 3; i++) {
        const answer = await fetch(`${serve.url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: `full ${i}`, steps: 2 }) });
        const body = await answer.text();
        expect(answer.status, body).toBe(503);
        expect(answer.headers.get('retry-after')).toBe('1');
        expect(body).toContain('"code":"Full"');
      }
      expect(await stageCalls('imp', 'busy')).toBeGreaterThanOrEqual(6); // with --eject-after 2, as failures these would have ejected it
      expect(await stageCalls('imp', 'error')).toBe(impErrors);
      expect(await stageCalls('h1', 'ok')).toBe(h1Ok);
      expect((await statusNodes(serve.url)).get('imp')?.state).toBe('alive');
    } finally {
      await rogue.kill();
    }
  }, 60_000);

  it('answering 409 UnknownSession once to a warm call (it evicted the state) is not charged: the step goes again fresh, with its replay, and succeeds', async () => {
    const rogue = await startRogue(serve, 'imp', 6, 3, 'lost');
    try {
      await seated();
      const impErrors = await stageCalls('imp', 'error');
      const lost = await stageCalls('imp', 'lost');
      for (let i = 0; i < 3; i++) {
        const answer = await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: `lost ${i}`, steps: 3 });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      }
      expect((await stageCalls('imp', 'lost')) - lost).toBe(3); // step 1 of each generation, then fresh
      expect(await stageCalls('imp', 'error')).toBe(impErrors);
      expect((await statusNodes(serve.url)).get('imp')?.state).toBe('alive');
    } finally {
      await rogue.kill();
    }
  }, 60_000);
});
