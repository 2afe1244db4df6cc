/**
 * In-flight accounting: how reserved requests raise a node's cost before its telemetry shows
 * them. A reservation counts as extra load on every node of its route, so the very next route
 * sees it at once.
 *
 * One reservation costs what it will delay the next request on that node: the node's expected
 * service time, i.e. its latency estimate (the measured EWMA, else the declared latency, else the
 * unknown-latency penalty). With `count` reservations the node's latency and in-flight terms add
 * up to `latency · (1 + RESERVATION_SERVICE_FACTOR · count)`, the shape of peak-EWMA's
 * `RTT · (pending + 1)`. A fixed load per reservation (the first version, 0.5 → 60 cost units)
 * charged a 10 ms GPU as much as a 60 ms laptop chain, so the fast copies stayed overloaded
 * while the slow ones idled, and the error grew with ρ.
 *
 * The load term of the cost is `w_c · load · 120`, so the extra is expressed in load units:
 * `count · factor · latency / 120`. No reservation, no extra: `reserve: false` is the original design.
 *
 * The factor is measured, not guessed: `hecate-node load-sim` (bench/load-sim/) swept it over
 * every workload, seeds 1–3, 20 000 requests. Cells are ours' p99 / P2C + peak-EWMA's p99
 * (medians); herd is W2's herd index (target ≤ 2/N = 0.333); W4 cells are requests to the dead
 * node, ours / P2C + peak-EWMA.
 *
 * | factor | W1 ρ0.5 | W1 ρ0.7 | W1 ρ0.9 | W2 | herd | W3 | W4 black-hole | W4 fail-fast | W5 |
 * |--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
 * | 0.5 | 0.64 | 0.91 | 1.16 | 1.16 | 0.421 | 0.95 | 5 / 4 | 0 / 8 | 1.33 |
 * | 1 | 0.53 | 0.74 | 1.04 | 1.06 | 0.368 | 0.83 | 3 / 4 | 0 / 8 | 0.93 |
 * | 1.5 | 0.51 | 0.72 | 0.99 | 1.08 | 0.359 | 0.78 | 3 / 4 | 0 / 8 | 0.82 |
 * | 2 | 0.50 | 0.70 | 0.97 | 1.03 | 0.354 | 0.77 | 3 / 4 | 0 / 8 | 0.77 |
 * | 2.5 | 0.52 | 0.72 | 0.95 | 1.02 | 0.344 | 0.78 | 3 / 4 | 0 / 8 | 0.75 |
 * | **3** | 0.52 | 0.72 | 1.00 | 1.04 | 0.339 | 0.77 | 4 / 4 | 0 / 8 | 0.73 |
 * | 4 | 0.56 | 0.72 | 0.92 | 1.01 | 0.339 | 0.77 | 2 / 4 | 1 / 8 | 0.74 |
 * | 6 | 0.64 | 0.74 | 0.93 | 1.02 | 0.331 | 0.79 | 3 / 4 | 2 / 8 | 0.76 |
 * | 8 | 0.68 | 0.76 | 0.93 | 1.00 | 0.331 | 0.78 | 2 / 4 | 2 / 8 | 0.76 |
 *
 * The two targets that move trade against each other, so the finalists ran again on 10 seeds
 * (W1 ρ0.7 p99 ratio, target ≤ 0.70 / W2 herd index, target ≤ 0.333): 2 → 0.716 / 0.354,
 * 3 → 0.721 / 0.338, 4 → 0.724 / 0.339, 6 → 0.742 / 0.333, 8 → 0.756 / 0.330. A small factor
 * packs bursts onto the fastest copy (herd up); a large one spreads steady traffic onto slow
 * copies (W1 p99 up). No factor meets both; 3 misses the worse of the two by the least (W1 by
 * 3%, herd by 1.5%), keeps W1 ρ0.9 at P2C + peak-EWMA's level and W5 at 0.73. W2's p99
 * ratio (target 0.70) sits at 1.0–1.08 for every factor: even the oracle that reads every
 * queue reaches only 0.98 there, so it is not the factor that holds it back.
 * The fixed 0.5 load of the first version measured, on 10 seeds: W1 ρ0.7 0.757, ρ0.9 1.25,
 * W2 1.118, W4 fail-fast 19.5 / 8 dead-node requests (before failed releases fed a penalty).
 *
 * The sweep above predates windowed release latencies (`releaseSampleMs`), which removed most
 * of the noise the factor was trading against. Swept again with a first form of the 400 ms
 * window (started at the first held release, never fed alone; seeds 1–20, W1 ρ0.7 / W2 herd /
 * W5): 2 → 0.684 / 0.295 / 0.778, 2.5 → 0.679 / 0.290 / 0.756,
 * 3 → 0.689 / 0.294 / 0.729, 3.5 → 0.700 / 0.288 / 0.718, 4 → 0.705 / 0.289 / 0.714. Every
 * factor now meets the herd target. With the committed form of the window, seeds 1–20: 2 →
 * 0.687 / 0.293 / 0.787, 2.5 → 0.687 / 0.291 / 0.749, 3 → 0.697 / 0.289 / 0.738, 3.5 → 0.697 /
 * 0.291 / 0.723; on seeds 21–40, 2.5 → 0.705 and 3 → 0.709. No factor moves W1 beyond seed
 * noise, so 3 stays.
 */
import { DEFAULT_PENALTIES } from '../core/cost.js';
import type { NodeTelemetry } from '../core/types.js';

/** Cost units per unit of load in the original design's cost formula (`w_c · load · 120`, docs/design.md §4). */
const COST_PER_LOAD = 120;

/**
 * How many of the node's expected service times one reservation costs. 1 is peak-EWMA's
 * `RTT · (pending + 1)`; 3 measured best across every workload (sweep above): the latency
 * estimate lags, and the original design's capability and hop terms keep slow copies dearer than they are.
 * @defaultValue 3
 */
export const RESERVATION_SERVICE_FACTOR = 3;

/**
 * The extra load of `count` in-flight reservations on one node: each costs the node's expected
 * service time (its latency estimate), in load units. 0 without a reservation.
 * @param telemetry the node's current telemetry; its `latencyMs` is the measured EWMA, else the
 *   declared latency; without one, `penaltyLatencyMs` (docs/design.md §4's unknown-latency penalty).
 * @example inflightLoad(2, { alive: true, latencyMs: 30, samples: 4 }) // 2 · 30 / 120 = 0.5
 */
export function inflightLoad(count: number, telemetry: NodeTelemetry | undefined, penaltyLatencyMs = DEFAULT_PENALTIES.latencyMs): number {
  if (count <= 0) return 0;
  const latencyMs = telemetry?.latencyMs ?? penaltyLatencyMs;
  return (count * RESERVATION_SERVICE_FACTOR * latencyMs) / COST_PER_LOAD;
}
