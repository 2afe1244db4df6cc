/**
 * The data plane's cost (docs/performance.md, "Data plane"): one orchestrator → agent stage call
 * with zero compute (an engine that returns its input) against a raw fastify server answering the
 * same reply bytes, both through the same pooled client (peer-post.ts) and the same HMAC signing
 * both ways (request and reply), in the same run and the same process. At 4 KB ([1, 1024] f32)
 * and 4 MB ([1024, 1024] f32) activations: the median latency at c = 1 and the calls/s at c = 16,
 * rounds alternating between the two so drift hits both. Targets: ≤ 1.3× the raw latency,
 * ≥ 0.8× the raw calls/s.
 */
import { AGENT_MAX_AHEAD_MS } from '../src/agent/stage-guard.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { startAgent } from '../src/agent/agent.js';
import type { EngineHoldings, StageEngine, StageStep } from '../src/agent/stage-engine.js';
import { createPeerPoster, type PeerPost } from '../src/net/peer-post.js';
import { callStage } from '../src/orchestrator/stage-call.js';
import { systemClock } from '../src/runtime/clock.js';
import { loadAgentKey } from '../src/wire/agent-key.js';
import { FRAME_CONTENT_TYPE } from '../src/wire/frames.js';
import { NonceCache } from '../src/wire/nonce-cache.js';
import { agentAudience, replySignatureHeaders, SIGNATURE_HEADERS, verifySignature } from '../src/wire/request-signing.js';
import { encodeStageReply, type StageRequest } from '../src/wire/stage-protocol.js';
import { f32Tensor, type Tensor } from '../src/wire/tensor.js';
import type { BenchRow } from './types.js';

/** Zero compute: each step's output is its input, each replay its own output. */
class EchoEngine implements StageEngine {
  readonly kind = 'echo';
  readonly maxWidth = 1024;
  async load(): Promise<void> {}
  async step(call: StageStep): Promise<Tensor> {
    return call.input;
  }
  async rebuild(_s: string, _span: unknown, inputs: readonly Tensor[]): Promise<readonly Tensor[]> {
    return inputs;
  }
  drop(): boolean {
    return false;
  }
  holds(): EngineHoldings {
    return { sessions: 0, cachedTokens: 0, memoryBytes: 0, spans: [] };
  }
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** Runs `calls` calls of `one` with `concurrency` workers; resolves with each call's ms and the wall ms. */
async function drive(one: (i: number) => Promise<void>, calls: number, concurrency: number): Promise<{ each: number[]; wallMs: number }> {
  const each: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < calls) {
      const i = next++;
      const t = performance.now();
      await one(i);
      each.push(performance.now() - t);
    }
  }));
  return { each, wallMs: performance.now() - started };
}

/** The data-plane rows: per size, latency at c = 1 and calls/s at c = 16, the agent against the raw server. */
export async function dataPlaneBench(log: (line: string) => void, quick = process.env['BENCH_QUICK'] === '1'): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'hecate-data-plane-'));
  const secret = new TextEncoder().encode('data-plane-bench-secret-of-32-bytes!');
  const { key } = loadAgentKey(join(dir, 'key.json'), 'dp');
  // No orchestrator: the join retries in the background; the stage server does not need it.
  const agent = await startAgent({ id: 'dp', memoryGb: 1, score: 1, join: 'http://127.0.0.1:9', heartbeatMs: 60_000, engine: new EchoEngine(), auth: { secret, key } });
  await new Promise((resolve) => setTimeout(resolve, AGENT_MAX_AHEAD_MS)); // it takes calls from then (stage-guard.ts)

  // The raw server: fastify, the same signature check of the request, the same reply bytes, signed.
  const replies = new Map<'small' | 'large', Uint8Array>();
  const raw = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
  const nonces = new NonceCache(60_000);
  raw.addContentTypeParser(FRAME_CONTENT_TYPE, { parseAs: 'buffer' }, (_r, body, done) => done(null, body));
  raw.post('/v1/stage', async (request, reply) => {
    const body = request.body as Buffer;
    const verdict = verifySignature(secret, { method: request.method, path: request.url, headers: request.headers, body }, Date.now(), nonces, { audience: agentAudience('dp') });
    if (!verdict.ok) return reply.status(401).send({ error: verdict.reason });
    const answer = replies.get(body.byteLength > 1024 * 1024 ? 'large' : 'small') as Uint8Array;
    void reply.header('content-type', FRAME_CONTENT_TYPE).headers(replySignatureHeaders(secret, { audience: agentAudience('dp'), method: 'POST', path: request.url, nonce: request.headers[SIGNATURE_HEADERS.nonce] as string, timestamp: Date.now(), body: answer }));
    return reply.send(Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength));
  });
  await raw.listen({ host: '127.0.0.1', port: 0 });
  const rawUrl = `http://127.0.0.1:${(raw.server.address() as { port: number }).port}`;

  const poster = createPeerPoster({ signer: { secret }, clock: systemClock });
  const post: PeerPost = poster.post;
  const rows: BenchRow[] = [];
  try {
    for (const [label, tokens] of [['4 KB', 1], ['4 MB', 1024]] as const) {
      const input = f32Tensor(Float32Array.from({ length: tokens * 1024 }, (_, i) => Math.sin(i)), [tokens, 1024]);
      const request = (step: number): StageRequest => ({ sessionId: 'bench', modelId: 'm', layerStart: 0, layerEnd: 1, step, fresh: false, tokens, input, replay: [] });
      replies.set(tokens === 1 ? 'small' : 'large', encodeStageReply({ nodeId: 'dp', layerStart: 0, layerEnd: 1, output: input, replayOutputs: [], ms: 0 }));
      const viaAgent = async (i: number): Promise<void> => {
        const reply = await callStage(post, agent.url, 'dp', request(i), AbortSignal.timeout(30_000));
        if (reply.output.data.byteLength !== input.data.byteLength) throw new Error('the agent answered another tensor');
      };
      // The same client work on both sides (callStage: the request encoded, the reply's signature
      // checked and its frames decoded), so the difference is the two servers'.
      const viaRaw = async (i: number): Promise<void> => {
        const reply = await callStage(post, rawUrl, 'dp', request(i), AbortSignal.timeout(30_000));
        if (reply.output.data.byteLength !== input.data.byteLength) throw new Error('the raw server answered another tensor');
      };
      const small = tokens === 1;
      // Rounds long enough that a GC pause or the machine's drift is a small part of one (at 4 KB a
      // round at c = 16 is about a second), and enough of them that the median holds still.
      const rounds = quick ? 3 : 9;
      const serial = (small ? 400 : 20) / (quick ? 2 : 1);
      const parallel = (small ? 4000 : 64) / (quick ? 2 : 1);
      await drive(viaAgent, serial, 1); // warm both: connections, JIT
      await drive(viaRaw, serial, 1);
      const latency = { agent: [] as number[], raw: [] as number[] };
      const rate = { agent: [] as number[], raw: [] as number[] };
      for (let r = 0; r < rounds; r++) {
        log(`data plane ${label}: round ${r + 1}/${rounds}`);
        for (const [name, one] of (r % 2 === 0 ? [['agent', viaAgent], ['raw', viaRaw]] : [['raw', viaRaw], ['agent', viaAgent]]) as [keyof typeof latency, (i: number) => Promise<void>][]) {
          latency[name].push(median((await drive(one, serial, 1)).each));
          const { wallMs } = await drive(one, parallel, 16);
          rate[name].push((parallel / wallMs) * 1000);
        }
      }
      const lat = { agent: median(latency.agent), raw: median(latency.raw) };
      const cps = { agent: median(rate.agent), raw: median(rate.raw) };
      const latRatio = lat.agent / lat.raw;
      const cpsRatio = cps.agent / cps.raw;
      rows.push({ name: 'data plane: stage call latency, c = 1', size: label, median: lat.agent, unit: 'ms', baselineName: 'raw fastify', baseline: lat.raw, ratio: latRatio, target: 'ratio <= 1.3', pass: latRatio <= 1.3 });
      rows.push({ name: 'data plane: stage calls/s, c = 16', size: label, median: cps.agent, unit: 'calls/s', baselineName: 'raw fastify', baseline: cps.raw, ratio: cpsRatio, target: 'ratio >= 0.8', pass: cpsRatio >= 0.8 });
    }
  } finally {
    poster.close();
    await agent.stop().catch(() => {});
    await raw.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = await dataPlaneBench((line) => console.error(line));
  const fmt = (x: number | undefined) => (x === undefined ? '' : x >= 100 ? String(Math.round(x)) : String(Number(x.toPrecision(3))));
  console.log('| measure | size | hecate (agent) | raw fastify | ratio | target | pass |');
  console.log('|---|---|---:|---:|---:|---|---|');
  for (const r of rows) console.log(`| ${r.name} | ${r.size} | ${fmt(r.median)} ${r.unit} | ${fmt(r.baseline)} ${r.unit} | ${fmt(r.ratio)} | ${r.target} | ${r.pass ? 'PASS' : 'FAIL'} |`);
}
