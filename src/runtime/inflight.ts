/**
 * In-flight accounting: how reserved requests raise a node's cost before its telemetry shows
 * them. A reservation counts as extra load on every node of its route, so the very next route
 * sees it; the load term of the cost is `w_c · load · 120`, so one reservation adds
 * `RESERVATION_LOAD · 120` cost units to each node it holds.
 *
 * The value is measured, not guessed: `hecate-node load-sim` (bench/load-sim/) swept 0.25, 0.5,
 * 1 and 2 over every workload. 0.25 leaves four routers sharing the swarm worse than P2C with
 * peak-EWMA (each router sees too little of its own load); 1 and 2 over-spread onto the slow
 * copies when the fastest copy slows down (W3). 0.5 is the best balance of the four.
 */

/** Extra load one in-flight reservation adds to a node (half a node's worth). @defaultValue 0.5 */
export const RESERVATION_LOAD = 0.5;

/** The extra load of `count` in-flight reservations on one node. */
export function inflightLoad(count: number): number {
  return count * RESERVATION_LOAD;
}
