/**
 * Admission's costs (docs/admission.md, docs/performance.md): `swarm.admit` with room against
 * `route(…, { reserve: true })` in the same process (median of interleaved rounds, ≤ 2×); one
 * queue operation (a push and a pop) at two queue sizes, to show O(log n); the bytes a waiter
 * holds, so the queue's memory at its bound is known. Writes nothing. Run after
 * `npm run build && npm run build:bench`: `node dist-bench/bench/admission.js`.
 */
import { createSwarm, ManualClock } from '../src/runtime/index.js';
import { AdmissionQueue, type Waiter } from '../src/runtime/admission-queue.js';
import type { LeasedRoute } from '../src/runtime/types.js';
import { collectGarbage, median, QUICK } from './measure.js';

const profiles = [
  { id: 'gpu', memoryGb: 24, score: 10, slots: 1_000_000 },
  { id: 'desk', memoryGb: 16, score: 5, slots: 1_000_000 },
  { id: 'lap-a', memoryGb: 8, score: 3, slots: 1_000_000 },
  { id: 'lap-b', memoryGb: 8, score: 3, slots: 1_000_000 },
];
const config = { models: [{ id: 'base', layers: 16, pipelines: 2 }], leaseTtlMs: 3_600_000 };

// 1. admit with room against route({ reserve: true }): batches of N calls, released after each (untimed).
const clock = new ManualClock();
const swarm = createSwarm(profiles, config, { clock, seed: 1 });
const N = 1000;
const rounds = QUICK ? 5 : 31;
const routeNs: number[] = [];
const admitNs: number[] = [];
const leases: LeasedRoute[] = [];
for (let round = 0; round < rounds; round++) {
  for (const which of round % 2 === 0 ? ['route', 'admit'] : ['admit', 'route']) {
    const t0 = performance.now();
    if (which === 'route') {
      for (let i = 0; i < N; i++) leases.push(swarm.route({}, { reserve: true }));
      (round > 0 ? routeNs : []).push(((performance.now() - t0) * 1e6) / N);
    } else {
      const ps: Promise<LeasedRoute>[] = [];
      for (let i = 0; i < N; i++) ps.push(swarm.admit({}));
      (round > 0 ? admitNs : []).push(((performance.now() - t0) * 1e6) / N);
      leases.push(...(await Promise.all(ps)));
    }
    for (const l of leases) swarm.release(l.lease);
    leases.length = 0;
  }
}
const r = median(routeNs);
const a = median(admitNs);
console.log(`admit with room: ${a.toFixed(0)} ns per call; route({ reserve: true }): ${r.toFixed(0)} ns; ratio ${(a / r).toFixed(2)} (target ≤ 2): ${a / r <= 2 ? 'pass' : 'MISS'}`);
swarm.stop();

// 2. One queue operation (push one waiter, pop the next) at two sizes: O(log n) means the big queue costs a few times the small one, not 100×.
interface W extends Waiter {
  readonly at: number[];
}
let seq = 0;
const waiter = (priority: number): W => ({ at: [-1, -1, -1], seq: ++seq, priority, deadlineAt: Infinity, resumed: false });
function opNs(size: number): number {
  const q = new AdmissionQueue<W>(false, new Map([[0, 0.3]]), 100);
  for (let i = 0; i < size; i++) q.push(waiter(i % 4));
  const ops = 200_000;
  const samples: number[] = [];
  for (let s = 0; s < (QUICK ? 3 : 9); s++) {
    const t0 = performance.now();
    for (let i = 0; i < ops; i++) {
      q.push(waiter(i % 4));
      const w = q.next() as W;
      q.remove(w);
      q.admitted(w.priority);
    }
    samples.push(((performance.now() - t0) * 1e6) / ops);
  }
  return median(samples);
}
const small = opNs(1_000);
const big = opNs(100_000);
console.log(`queue op (push + serve one) at 1,000 waiters: ${small.toFixed(0)} ns; at 100,000: ${big.toFixed(0)} ns; ratio ${(big / small).toFixed(2)} for 100× the waiters (log2 ratio ${(Math.log2(100_000) / Math.log2(1_000)).toFixed(2)})`);

// 3. Bytes per waiter: a full queue of 100,000 through swarm.admit, heap before and after.
const full = createSwarm([{ id: 'a', memoryGb: 8, slots: 1 }], { models: [{ id: 'base', layers: 4 }], admission: { queueSize: 100_000 } }, { clock: new ManualClock(), seed: 1 });
await full.admit();
collectGarbage();
const before = process.memoryUsage().heapUsed;
const waiting: Promise<unknown>[] = [];
for (let i = 0; i < 100_000; i++) waiting.push(full.admit({}, { priority: i % 3, deadlineMs: 60_000 }).catch(() => undefined));
collectGarbage();
const after = process.memoryUsage().heapUsed;
const perWaiter = (after - before) / 100_000;
console.log(`queue memory: ${full.saturation().queued} waiters hold ${((after - before) / 1e6).toFixed(1)} MB, ${perWaiter.toFixed(0)} bytes each (the caller's promise included); the default queueSize 1,024 bounds it at ${((perWaiter * 1024) / 1024).toFixed(0)} KB`);
full.stop();
await Promise.all(waiting);
