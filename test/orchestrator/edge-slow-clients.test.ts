/**
 * Slow clients and bodies before trust, on real processes (docs/security.md, "Connections and
 * bodies"): 1,000 connections from 10 source addresses, each sending its request a byte every
 * 100 ms (a quarter their headers, which never end; the rest their bodies after headers that look
 * signed or, to serve's client route, need nothing), against
 * serve and against an agent at once, leave each within +100 MB while ordinary generations keep
 * succeeding; a request its headers already condemn (unsigned, stale, a route's bound passed by
 * its content-length) is answered at once, its body never read, its connection closed.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedDigest } from '../../src/wire/digest.js';
import { FRAME_CONTENT_TYPE } from '../../src/wire/frames.js';
import { stopAll, waitFor } from './processes.js';
import { audienceOf, postJson, removeServeDirs, rssMb, startAgentCli, startServe, statusNodes, topologyFile, type StartedServe } from './edge-helpers.js';
import { agentAudience } from '../../src/wire/request-signing.js';
import { answerToHeadOnly, openSlowClients, type SlowRequest } from './slow-clients.js';

const topology = topologyFile('slow-clients', { models: [{ id: 'base', kind: 'base', layers: 12, pipelines: 1 }], nodes: [{ id: 'h0', memoryGb: 16, score: 3 }] });

let serve: StartedServe;
let agent: { child: { process: { pid?: number } }; url: string };
let serveAudience: string;

beforeAll(async () => {
  serve = await startServe('serve slow', ['--topology', topology], { process: true });
  agent = await startAgentCli('h0', serve, 16, 3, ['--jitter', '0'], { process: true });
  await waitFor('h0 alive', async () => ((await statusNodes(serve.url)).get('h0')?.state === 'alive' ? true : undefined), 10_000, 50);
  serveAudience = await audienceOf(serve.url);
}, 60_000);

afterAll(async () => {
  await stopAll();
  removeServeDirs();
});

/** Headers that look signed (a fresh timestamp, an unused nonce, a signature that cannot be checked before the body). */
const lookSigned = (audience: string): string =>
  [`x-hecate-audience: ${audience}`, `x-hecate-timestamp: ${Date.now()}`, `x-hecate-nonce: ${randomBytes(16).toString('hex')}`, `x-hecate-signature: ${'0'.repeat(64)}`, 'x-hecate-agent-key: AAAA', 'x-hecate-agent-signature: AAAA'].join('\r\n');
/** Headers that never end within the test: a byte every 100 ms of 1,000 (the headers timeout, 10 s, may close them). */
const PAD = `x-pad: ${'a'.repeat(1000)}`;
const post = (path: string, extra = ''): string => `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json${extra === '' ? '' : `\r\n${extra}`}`;

/** The least RSS of `pid` over the next second: what it keeps, not a collection's moment. */
async function settledRss(pid: number): Promise<number> {
  let least = rssMb(pid);
  for (let i = 0; i < 10; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    least = Math.min(least, rssMb(pid));
  }
  return least;
}

describe('1,000 slow connections against serve and 1,000 against an agent', () => {
  it('leave each within +100 MB while ordinary generations succeed meanwhile', async () => {
    const servePid = serve.child.process.pid as number;
    const agentPid = agent.child.process.pid as number;
    const generate = () => postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: 'hi', steps: 1 });
    expect((await generate()).status).toBe(200);
    const [serveBefore, agentBefore] = [await settledRss(servePid), await settledRss(agentPid)];

    const toServe = (i: number): SlowRequest =>
      [
        { head: post('/v1/generate', PAD), bodyLength: 60_000, slowHead: true },
        { head: post('/v1/generate'), bodyLength: 60_000 },
        { head: post('/v1/nodes', lookSigned(serveAudience)), bodyLength: 8000 },
        { head: post('/v1/nodes/ghost/heartbeat', lookSigned(serveAudience)), bodyLength: 2000 },
      ][i % 4] as SlowRequest;
    const toAgent = (i: number): SlowRequest =>
      [
        { head: post('/v1/stage', PAD), bodyLength: 2000, slowHead: true },
        { head: post('/v1/stage', lookSigned(agentAudience('h0'))).replace('application/json', FRAME_CONTENT_TYPE), bodyLength: 100_000 },
        { head: post('/v1/stage', lookSigned(agentAudience('h0'))), bodyLength: 100_000 },
        { head: post('/v1/sessions/drop', lookSigned(agentAudience('h0'))), bodyLength: 2000 },
      ][i % 4] as SlowRequest;
    const options = { sources: 10, tickMs: 100 };
    const floods = await Promise.all([openSlowClients(serve.url, 1000, toServe, options), openSlowClients(agent.url, 1000, toAgent, options)]);
    try {
      const answers: number[] = [];
      const until = Date.now() + 8000;
      while (Date.now() < until) {
        answers.push((await generate()).status);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      for (const f of floods) f.pause();
      const bodies = (i: number): boolean => i % 4 !== 0;
      const [toServeOpen, toAgentOpen] = floods.map((f) => f.open(bodies));
      const [serveAfter, agentAfter] = [await settledRss(servePid), await settledRss(agentPid)];
      const health = await fetch(`${agent.url}/v1/health`);
      console.log(
        `slow clients (${floods[0]?.sent()} and ${floods[1]?.sent()} bytes sent): serve ${serveBefore.toFixed(1)} → ${serveAfter.toFixed(1)} MB, agent ${agentBefore.toFixed(1)} → ${agentAfter.toFixed(1)} MB; ` +
          `slow bodies open ${toServeOpen} and ${toAgentOpen} of 750; ${answers.filter((s) => s === 200).length} of ${answers.length} generations 200`,
      );
      // Held, not refused: the bound is what a held connection costs.
      expect(toServeOpen).toBe(750);
      expect(toAgentOpen).toBe(750);
      expect(serveAfter - serveBefore).toBeLessThan(100);
      expect(agentAfter - agentBefore).toBeLessThan(100);
      expect(answers.length).toBeGreaterThan(5);
      expect(answers.every((s) => s === 200)).toBe(true);
      expect(health.status).toBe(200);
    } finally {
      await Promise.all(floods.map((f) => f.close()));
    }
    expect((await generate()).status).toBe(200);
  }, 60_000);
});

describe('a request its headers condemn', () => {
  it('is answered at once from them, its body never read, its connection closed', async () => {
    // Serve: unsigned, stale, or a body past its route's bound (16 KB for a member, 1 MB for a client).
    expect(await answerToHeadOnly(serve.url, post('/v1/nodes'), 10_000)).toEqual({ status: 401, closed: true });
    expect(await answerToHeadOnly(serve.url, post('/v1/nodes/h0/heartbeat', lookSigned(serveAudience).replace(/x-hecate-timestamp: \d+/, `x-hecate-timestamp: ${Date.now() - 120_000}`)), 100)).toEqual({ status: 401, closed: true });
    expect(await answerToHeadOnly(serve.url, post('/v1/nodes/ghost/heartbeat', lookSigned(serveAudience)), 17 * 1024)).toEqual({ status: 413, closed: true });
    expect(await answerToHeadOnly(serve.url, post('/v1/generate'), 2 * 1024 * 1024)).toEqual({ status: 413, closed: true });
    // Another key than h0's for h0: refused for the key its headers name.
    expect(await answerToHeadOnly(serve.url, post('/v1/nodes/h0/heartbeat', lookSigned(serveAudience)), 100)).toEqual({ status: 409, closed: true });
    // A content type no route reads.
    expect(await answerToHeadOnly(serve.url, post('/v1/generate').replace('application/json', 'text/plain'), 1000)).toEqual({ status: 415, closed: true });
    // The agent: unsigned, past the stage call's bound (655 KB with the digest engine's width), past a drop's (4 KB).
    expect(await answerToHeadOnly(agent.url, post('/v1/stage'), 100_000)).toEqual({ status: 401, closed: true });
    expect(await answerToHeadOnly(agent.url, post('/v1/stage', lookSigned(agentAudience('h0'))), 4 * 1024 * 1024)).toEqual({ status: 413, closed: true });
    expect(await answerToHeadOnly(agent.url, post('/v1/sessions/drop', lookSigned(agentAudience('h0'))), 8 * 1024)).toEqual({ status: 413, closed: true });
    // Ordinary work goes on.
    const r = await postJson(`${serve.url}/v1/generate`, { model: 'base', prompt: 'hi', steps: 2 });
    expect(r.status).toBe(200);
    expect(r.body.digest).toBe(expectedDigest(12, 'hi', 2));
  });
});

describe('what a client is shown', () => {
  it('is every agent and its state but not where it listens (/v1/status, /v1/events); the operator token shows it, the swarm secret does not', async () => {
    const client = await statusNodes(serve.url);
    expect(client.get('h0')?.state).toBe('alive');
    expect(client.get('h0')?.url).toBeNull();
    expect((await statusNodes(serve.url, serve.secret.toString('utf8'))).get('h0')?.url).toBeNull(); // a member's credential
    expect((await statusNodes(serve.url, serve.operatorToken)).get('h0')?.url).toBe(agent.url);
    const hello = async (headers: Record<string, string>): Promise<string> => {
      const controller = new AbortController();
      const response = await fetch(`${serve.url}/v1/events`, { headers, signal: controller.signal });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      let text = '';
      while (!text.includes('event: hello')  || !text.endsWith('\n\n')) text += Buffer.from((await reader.read()).value ?? []).toString('utf8');
      controller.abort();
      return text;
    };
    const seen = await hello({});
    expect(seen).toContain('"id":"h0"');
    expect(seen).not.toContain(agent.url);
    expect(await hello({ authorization: `Bearer ${serve.secret.toString('utf8')}` })).not.toContain(agent.url);
    expect(await hello({ authorization: `Bearer ${serve.operatorToken}` })).toContain(agent.url);
  });
});
