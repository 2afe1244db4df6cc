/**
 * In-flight accounting: how reserved requests raise a node's cost before its telemetry shows
 * them. A reservation counts as extra load on every node of its route, so the very next route
 * sees it; the load term of the cost is `w_c · load · 120`.
 */

/** Extra load one in-flight reservation adds to a node. @defaultValue 0.25 */
export const RESERVATION_LOAD = 0.25;

/** The extra load of `count` in-flight reservations on one node. */
export function inflightLoad(count: number): number {
  return count * RESERVATION_LOAD;
}
