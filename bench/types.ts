/** One measured line of `bench/results.json`. */
export interface BenchRow {
  /** What was measured, e.g. `swarm.route` or `plan throughput / gpu-lab`. */
  readonly name: string;
  /** The size it was measured at, e.g. `1000 pipelines x 8 stages`. */
  readonly size: string;
  /** The median of the measurement. */
  readonly median: number;
  /** Unit of `median` and `baseline`: `ns/op`, `ops/s`, `ms`, `bytes/node`, `throughput`, ... */
  readonly unit: string;
  /** What it is compared with, measured in the same run (absent when the target is absolute). */
  readonly baselineName?: string;
  readonly baseline?: number;
  /** median / baseline (or as the target states it). */
  readonly ratio?: number;
  /** The target in words, e.g. `<= 10000 ns/op and ratio <= 0.2`. */
  readonly target: string;
  readonly pass: boolean;
}
