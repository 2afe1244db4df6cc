/**
 * W7's engine: requests with prompts run through the stages of the copy their router chose. Every
 * node is a compute server of `slots` parallel servers (the topology's, 1 by default: one request
 * at a time) with one FIFO queue and a prefix cache ({@link BlockCache}, LRU by its KV reserve). A prompt's prefill at a stage costs its uncached tokens (matched when the stage
 * starts it) × {@link PREFILL_MS_PER_TOKEN} × the stage's share of the layers ÷ the node's score;
 * cached tokens cost nothing. Its first token comes one hop after the last stage's prefill; then
 * every stage of the copy queues the decode work of its answer (× {@link DECODE_MS_PER_TOKEN}), and
 * caches prompt + answer when that is done. A client gives up `timeoutMs` after sending without a
 * first token: its queued work is dropped. Virtual time only.
 */
import { BlockCache } from './block-cache.js';
import { EventQueue } from './event-queue.js';
import type { BuiltTopology, SimStage } from './load-topology.js';
import { BLOCK_TOKENS, CLIENT_TIMEOUT_MS, DECODE_MS_PER_TOKEN, nodeCacheBlocks, PREFILL_MS_PER_TOKEN } from './prefix-constants.js';
import type { CopySample, PrefixPick, PrefixRouter, PrefixTruth, SimKvEvent } from './prefix-router.js';
import type { PrefixWorkload, PromptRequest } from './prefix-workloads.js';

/** What one request saw. */
export interface PrefixTrace {
  /** Time to first token, ms (the timeout for one that timed out; 0 when unroutable). */
  readonly ttft: Float64Array;
  /** 1 when the first token came before the timeout. */
  readonly ok: Uint8Array;
  /** Prompt tokens the first stage found cached (0 when it never started). */
  readonly cached: Float64Array;
  readonly promptTokens: Float64Array;
  /** Copy chosen, -1 when unroutable. */
  readonly pipeline: Int16Array;
}

/** What one engine run needs. */
export interface PrefixEngineOptions {
  readonly topology: BuiltTopology;
  readonly workload: PrefixWorkload;
  /** Arrivals per second (the workload's offsets are in mean gaps). */
  readonly ratePerS: number;
  readonly router: (truth: PrefixTruth) => PrefixRouter;
  readonly clock: { t: number };
  /** @defaultValue {@link CLIENT_TIMEOUT_MS} */
  readonly timeoutMs?: number;
  /** KV reserve per layer, GB. @defaultValue W7_MODEL's */
  readonly kvReserveGb?: number;
}

interface Req {
  readonly i: number;
  readonly r: PromptRequest;
  readonly t0: number;
  readonly pick: PrefixPick;
  stage: number;
  gaveUp: boolean;
  first: boolean;
  decodesLeft: number;
}

interface Job {
  readonly q: Req;
  readonly decode: boolean;
  readonly stage: number;
}

interface Server {
  readonly cache: BlockCache;
  readonly queue: Job[];
  head: number;
  /** When its latest job started ends (its backlog's estimate). */
  busyUntil: number;
  /** Jobs in service, at most `slots`. */
  running: number;
  readonly slots: number;
  readonly score: number;
  /** Blocks of the prompts queued or in prefill here, counted per prompt: cached once their prefill ends. */
  readonly pending: Map<number, number>;
}

type Ev = { k: 'arrive'; i: number } | { k: 'enter'; q: Req; stage: number } | { k: 'end'; node: number; job: Job } | { k: 'timeout'; q: Req } | { k: 'sample' } | { k: 'deliver'; s: CopySample[] };

/** Runs one W7 workload at one rate through one router. */
export function runPrefixEngine(options: PrefixEngineOptions): PrefixTrace {
  const { topology, workload, clock } = options;
  const timeoutMs = options.timeoutMs ?? CLIENT_TIMEOUT_MS;
  const hop = topology.spec.hopMs;
  const layersTotal = topology.spec.model.layers;
  const n = workload.requests.length;
  const trace: PrefixTrace = { ttft: new Float64Array(n), ok: new Uint8Array(n), cached: new Float64Array(n), promptTokens: new Float64Array(n), pipeline: new Int16Array(n).fill(-1) };
  const layersOn = new Map<number, number>();
  for (const p of topology.pipelines) for (const s of p.stages) layersOn.set(s.node, (layersOn.get(s.node) ?? 0) + s.layers);
  const servers: Server[] = topology.nodes.map((node) => ({ cache: new BlockCache(nodeCacheBlocks(layersOn.get(node.index) ?? 1, options.kvReserveGb)), queue: [], head: 0, busyUntil: 0, running: 0, slots: node.slots, score: node.score, pending: new Map() }));
  const server = (i: number): Server => servers[i] as Server;
  const ev = new EventQueue<Ev>();
  const gapMs = 1000 / options.ratePerS;
  workload.requests.forEach((r, i) => ev.push(r.at * gapMs, { k: 'arrive', i }));
  ev.push(100, { k: 'sample' });
  let open = 0;

  const stageOf = (q: Req, k: number): SimStage => q.pick.stages[k] as SimStage;
  const workMs = (job: Job, node: number, cachedTokens: number): number => {
    const share = stageOf(job.q, job.stage).layers / layersTotal;
    const tokens = job.decode ? job.q.r.outTokens * DECODE_MS_PER_TOKEN : (job.q.r.ids.length - cachedTokens) * PREFILL_MS_PER_TOKEN;
    return (share * tokens) / server(node).score;
  };
  const truth: PrefixTruth = {
    cachedBlocks: (node, blocks) => server(node).cache.peek(blocks),
    comingBlocks: (node, blocks) => {
      const s = server(node);
      let k = 0;
      while (k < blocks.length && (s.cache.has(blocks[k] as number) || s.pending.has(blocks[k] as number))) k++;
      return k;
    },
    backlogMs: (node) => {
      const s = server(node);
      let ms = Math.max(s.busyUntil - clock.t, 0);
      for (let k = s.head; k < s.queue.length; k++) {
        const job = s.queue[k] as Job;
        if (!job.q.gaveUp || job.decode) ms += workMs(job, node, job.decode ? 0 : s.cache.peek(job.q.r.blocks) * BLOCK_TOKENS);
      }
      return ms / s.slots;
    },
  };
  const router = options.router(truth);
  /** Node `node` caches `hashes`, blocks `offset` on of `ids`: its engine's events to a router that hears them. */
  const insert = (node: number, hashes: Float64Array, ids: Uint32Array, offset: number, parent: number | undefined): void => {
    if (router.kv === undefined) return server(node).cache.insert(hashes);
    const events: SimKvEvent[] = [];
    const removed: string[] = [];
    server(node).cache.insert(hashes, {
      stored: (all, from) => {
        const blocks = [];
        for (let k = from; k < all.length; k++) {
          const up = k > 0 ? all[k - 1] : parent;
          blocks.push({ hash: String(all[k]), ...(up !== undefined ? { parent: String(up) } : {}), tokens: Array.from(ids.subarray((offset + k) * BLOCK_TOKENS, (offset + k + 1) * BLOCK_TOKENS)) });
        }
        events.push({ kind: 'stored', blocks });
      },
      removed: (h) => removed.push(String(h)),
    });
    if (removed.length > 0) events.push({ kind: 'removed', hashes: removed });
    for (const e of events) router.kv(node, e);
  };

  /** Starts queued jobs while the node has a free slot. */
  const start = (node: number): void => {
    const s = server(node);
    while (s.running < s.slots && s.head < s.queue.length) {
      const job = s.queue[s.head++] as Job;
      if (s.head > 512 && s.head * 2 > s.queue.length) {
        s.queue.splice(0, s.head);
        s.head = 0;
      }
      if (job.q.gaveUp && !job.decode) {
        unpend(s, job.q.r.blocks);
        continue; // the client left: its prefill is dropped
      }
      let cachedTokens = 0;
      if (!job.decode) {
        cachedTokens = Math.min(s.cache.peek(job.q.r.blocks) * BLOCK_TOKENS, job.q.r.ids.length); // marked used when its prefill ends
        if (job.stage === 0) trace.cached[job.q.i] = cachedTokens;
      }
      const ms = workMs(job, node, cachedTokens);
      s.running++;
      s.busyUntil = clock.t + ms;
      ev.push(clock.t + ms, { k: 'end', node, job });
    }
  };
  const unpend = (s: Server, blocks: Float64Array): void => {
    for (let k = 0; k < blocks.length; k++) {
      const h = blocks[k] as number;
      const c = (s.pending.get(h) ?? 0) - 1;
      if (c > 0) s.pending.set(h, c);
      else s.pending.delete(h);
    }
  };
  const enqueue = (node: number, job: Job): void => {
    const s = server(node);
    if (!job.decode) for (let k = 0; k < job.q.r.blocks.length; k++) s.pending.set(job.q.r.blocks[k] as number, (s.pending.get(job.q.r.blocks[k] as number) ?? 0) + 1);
    s.queue.push(job);
    if (s.running < s.slots) start(node);
  };
  const finishFirst = (q: Req, ok: boolean, ttft: number): void => {
    if (q.first) return;
    q.first = true;
    trace.ttft[q.i] = ttft;
    trace.ok[q.i] = ok ? 1 : 0;
    router.first(clock.t, q.pick, q.r, { ok, ttftMs: ttft, cachedTokens: trace.cached[q.i] ?? 0 });
  };
  const finish = (q: Req): void => {
    open--;
    router.done(clock.t, q.pick, q.r);
  };

  while (ev.size > 0) {
    const t = ev.peekTime();
    const e = ev.pop() as Ev;
    clock.t = t;
    switch (e.k) {
      case 'arrive': {
        const r = workload.requests[e.i] as PromptRequest;
        trace.promptTokens[e.i] = r.ids.length;
        const pick = router.pick(t, r);
        if (pick === undefined) break;
        trace.pipeline[e.i] = pick.pipeline;
        const q: Req = { i: e.i, r, t0: t, pick, stage: 0, gaveUp: false, first: false, decodesLeft: pick.stages.length };
        open++;
        ev.push(t + hop, { k: 'enter', q, stage: 0 });
        ev.push(t + timeoutMs, { k: 'timeout', q });
        break;
      }
      case 'enter':
        if (!e.q.gaveUp) enqueue(stageOf(e.q, e.stage).node, { q: e.q, decode: false, stage: e.stage });
        break;
      case 'end': {
        const { job, node } = e;
        const q = job.q;
        if (job.decode) {
          insert(node, q.r.fullBlocks.subarray(q.r.blocks.length), q.r.fullIds, q.r.blocks.length, q.r.blocks[q.r.blocks.length - 1]); // the prompt's blocks were held at its prefill
          if (--q.decodesLeft === 0 && !q.gaveUp) finish(q);
        } else {
          insert(node, q.r.blocks, q.r.ids, 0, undefined);
          unpend(server(node), q.r.blocks);
          if (job.stage + 1 < q.pick.stages.length) {
            ev.push(t + hop, { k: 'enter', q, stage: job.stage + 1 });
          } else if (!q.gaveUp) {
            finishFirst(q, true, t + hop - q.t0);
            for (let k = 0; k < q.pick.stages.length; k++) enqueue(stageOf(q, k).node, { q, decode: true, stage: k });
          }
        }
        server(node).running--; // its slot frees only now: the decodes it queued wait behind earlier jobs
        start(node);
        break;
      }
      case 'timeout':
        if (!e.q.first) {
          e.q.gaveUp = true;
          finishFirst(e.q, false, timeoutMs);
          finish(e.q);
        }
        break;
      case 'sample': {
        const samples = topology.pipelines.map((p) => {
          let queue = 0;
          let kvUtil = 0;
          for (const st of p.stages) {
            const s = server(st.node);
            queue += s.queue.length - s.head;
            kvUtil = Math.max(kvUtil, s.cache.size / s.cache.capacity);
          }
          return { queue, kvUtil };
        });
        ev.push(t + 50, { k: 'deliver', s: samples });
        if (open > 0 || ev.size > 1) ev.push(t + 100, { k: 'sample' });
        break;
      }
      case 'deliver':
        router.telemetry(t, e.s);
        break;
    }
  }
  return trace;
}
