/**
 * Serve's forwarded completion read as it arrives (src/net/peer-stream.ts), through
 * `runCompletion` with the poster's `stream`, against a local server: an informational head
 * (103 Early Hints) before the answer is not the answer, a busy agent's 503 with its `Full` code
 * past 500 characters is busy, and an error answer past 64 KB is refused without telling the
 * client the agent's address. End to end, an engine that sends Early Hints before each answer,
 * behind an upstream agent, streams through serve.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPeerPoster } from '../../../src/net/peer-post.js';
import { createSwarm } from '../../../src/runtime/create-swarm.js';
import { runCompletion } from '../../../src/orchestrator/openai/upstream-completion.js';
import type { NodeRegistry } from '../../../src/orchestrator/node-registry.js';
import { startUpstreamAgent } from '../../../src/agent/upstream/upstream-agent.js';
import { startOrchestrator } from '../../../src/orchestrator/orchestrator.js';
import { waitFor } from '../processes.js';
import { writeBig } from '../../net/big-answer.js';

const SSE = ['data: {"choices":[{"text":"ok","finish_reason":null}]}\n\n', 'data: {"choices":[{"text":"","finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n'];
const FULL = JSON.stringify({ error: { message: `every slot taken: ${'x'.repeat(600)}`, code: 'Full' } });
let server: Server;
let base = '';
let fullServed = 0;
/** The answers the server ended, by path: whole, or cut before their end. */
const ended = new Map<string, boolean>();

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '';
      res.on('close', () => ended.set(path, res.writableFinished));
      if (path === '/v1/models') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'hinting', object: 'model' }] }));
      if (path === '/health') return void res.writeHead(200).end('ok');
      if (path.startsWith('/full-once') && fullServed++ === 0) return void res.writeHead(503, { 'content-type': 'application/json' }).end(FULL);
      if (path.startsWith('/huge-400')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        return writeBig(res);
      }
      if (path.startsWith('/hints') || path.endsWith('/v1/completions')) res.writeEarlyHints({ link: '</x.css>; rel=preload' });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(SSE.join(''));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const clock = { now: () => Date.now(), setTimeout: (f: () => void, ms: number) => setTimeout(f, ms), clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout) };
const job = { chat: false, model: 'm', prompt: 'hi', messages: undefined, maxTokens: 4, stop: [], stream: true, includeUsage: false, sampling: {} } as const;

/** `runCompletion` over two agents at `path`/u0 and `path`/u1 with a real poster's `stream`: its text, or its error. */
async function complete(path: string, nodes = ['u0', 'u1']): Promise<{ text: string; error?: Error; failures: Record<string, number>; nodes: readonly string[] }> {
  const swarm = createSwarm(nodes.map((id) => ({ id, memoryGb: 8, score: 1, latencyMs: 5 })), { models: [{ id: 'm', layers: 4, pipelines: nodes.length }] });
  const registry = new Map(nodes.map((id) => [id, { url: `${base}${path}/${id}`, inflight: 0 }])) as unknown as NodeRegistry;
  const poster = createPeerPoster({ clock });
  let text = '';
  try {
    const outcome = await runCompletion({ swarm, registry, clock, post: poster.post, stream: poster.stream, affinity: 'hi', priority: 0, deadlineMs: undefined, signal: new AbortController().signal, backoffMs: 1 }, job, (t) => (text += t));
    return { text, failures: Object.fromEntries(nodes.map((id) => [id, swarm.node(id)?.failures ?? -1])), nodes: outcome.nodes };
  } catch (error) {
    return { text, error: error as Error, failures: Object.fromEntries(nodes.map((id) => [id, swarm.node(id)?.failures ?? -1])), nodes: [] };
  } finally {
    poster.close();
    swarm.stop?.();
  }
}

describe("serve's forwarded completion, read as it arrives", () => {
  it('takes the answer after an informational 103, not the 103', async () => {
    const run = await complete('/hints');
    expect(run.error).toBeUndefined();
    expect(run.text).toBe('ok');
    expect(run.failures).toEqual({ u0: 0, u1: 0 });
  });

  it('is busy, not failed, on a 503 whose code Full comes after 500 characters', async () => {
    fullServed = 0;
    const run = await complete('/full-once');
    expect(run.text).toBe('ok');
    const busy = ['u0', 'u1'].find((n) => !run.nodes.includes(n)) as string;
    expect(run.failures[busy], 'a busy agent is not a failed one').toBe(0);
  });

  it("refuses an error answer past 64 KB without reading it all, and tells the client no agent's address", async () => {
    const run = await complete('/huge-400', ['u0']);
    expect(run.error?.message).toMatch(/^the engine refused the request: 400 \(its body was not read: over 64 KB/);
    expect(run.error?.message).not.toContain('127.0.0.1');
    await waitFor('the server saw its answer cut', () => (ended.has('/huge-400/u0/v1/upstream/completions') ? true : undefined), 5000, 10);
    expect(ended.get('/huge-400/u0/v1/upstream/completions')).toBe(false);
  });
});

describe('an engine that sends Early Hints before each answer', () => {
  it('streams through its upstream agent and serve', async () => {
    const orchestrator = await startOrchestrator({ models: [{ id: 'tiny', kind: 'base', layers: 4, pipelines: 1 }] });
    const agent = await startUpstreamAgent({ id: 'h0', memoryGb: 4, score: 1, join: orchestrator.url, upstream: `${base}/v1`, heartbeatMs: 200, probeMs: 200 });
    try {
      await agent.joined;
      await waitFor('the swarm planned over the agent', () => (orchestrator.swarm()?.state().plan.pipelines.length === 1 ? true : undefined), 10_000, 20);
      const client = new OpenAI({ baseURL: `${orchestrator.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const stream = await client.completions.create({ model: 'tiny', prompt: 'hints', max_tokens: 4, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      expect(text).toBe('ok');
      expect(orchestrator.swarm()?.node('h0')?.failures).toBe(0);
    } finally {
      await agent.stop();
      await orchestrator.close();
    }
  });
});
