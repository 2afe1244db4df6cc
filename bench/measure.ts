/**
 * Measuring helpers on top of tinybench: medians of batched calls (so a sub-microsecond call is
 * not lost in the timer's resolution), paired measurements interleaved in rounds (so a baseline
 * and its rival see the same machine load), and wall-clock medians for slow one-shot operations.
 */
import { Bench } from 'tinybench';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';

/** How long each measurement runs; `BENCH_QUICK=1` shortens everything for a smoke run. */
export const QUICK = process.env['BENCH_QUICK'] === '1';

/** One function to time: called `batch` times per sample. */
export interface Timed {
  readonly name: string;
  readonly fn: () => void;
  /** Calls per tinybench sample. @defaultValue enough calls for about 20 µs */
  readonly batch?: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Median nanoseconds per call of each function. The functions are measured in `rounds`
 * rounds, interleaved and in alternating order; each round's median is taken, then the median
 * of the rounds, so a burst of load on the machine hits every contender alike.
 */
export function medianNs(tasks: readonly Timed[], options: { rounds?: number; timeMs?: number } = {}): number[] {
  const rounds = options.rounds ?? (QUICK ? 2 : 5);
  const timeMs = options.timeMs ?? (QUICK ? 40 : 150);
  const perRound: number[][] = tasks.map(() => []);
  const batches = tasks.map((t) => t.batch ?? autoBatch(t.fn));
  for (let round = 0; round < rounds; round++) {
    const order = tasks.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) {
      const t = tasks[i] as Timed;
      const batch = batches[i] as number;
      const bench = new Bench({ time: timeMs, warmupTime: round === 0 ? timeMs : 20, iterations: 16, throws: true });
      bench.add(t.name, () => {
        for (let k = 0; k < batch; k++) t.fn();
      });
      const [task] = bench.runSync();
      const result = task?.result;
      if (result === undefined || !('latency' in result)) throw new Error(`benchmark "${t.name}" did not complete`);
      (perRound[i] as number[]).push((result.latency.p50 * 1e6) / batch);
    }
  }
  return perRound.map(median);
}

/** Calls of `fn` that take about 20 µs, so a sample is well above the timer's resolution. */
function autoBatch(fn: () => void): number {
  for (let i = 0; i < 32; i++) fn();
  const start = performance.now();
  let calls = 0;
  while (performance.now() - start < 2) {
    fn();
    calls++;
  }
  const each = (performance.now() - start) / calls;
  return Math.max(1, Math.min(1024, Math.round(0.02 / each)));
}

/** Median wall-clock milliseconds of `runs` calls of `fn` (for operations of a millisecond or more). */
export function medianMs(runs: number, fn: (run: number) => number | void): number {
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    const inner = fn(run);
    times.push(typeof inner === 'number' ? inner : performance.now() - start);
  }
  return median(times);
}

export { median };

let gcFn: (() => void) | undefined;

/** A full garbage collection, without needing `node --expose-gc` on the command line. */
export function collectGarbage(): void {
  if (gcFn === undefined) {
    setFlagsFromString('--expose-gc');
    gcFn = runInNewContext('gc') as () => void;
  }
  gcFn();
  gcFn();
}
