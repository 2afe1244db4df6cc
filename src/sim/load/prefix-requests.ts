/**
 * How `hecate-node load-sim --requests` reads for W7 (docs/prefix-cache.md, "Simulation"): W7's
 * four workloads have their own sizes, so `--requests n` builds them at the scale
 * `n ÷` {@link W7_FULL_REQUESTS} (their requests together at full size), and the default is half size.
 */

/** W7a–d's requests together at full size (2,048 + 394 + 384 + 6,144; seed 1: W7b's varies a little). */
export const W7_FULL_REQUESTS = 8970;
/** W7's default `--requests`: half size, about 12 s for one seed on a busy 2-core machine (full size: about 40 s). */
export const W7_DEFAULT_REQUESTS = W7_FULL_REQUESTS / 2;
/** W7's bound on seeds × requests: ten seeds at full size (the published run, about 13 minutes). */
export const W7_WORK_LIMIT = 10 * W7_FULL_REQUESTS;

/** The scale W7's workloads are built at for `requests` (at most {@link W7_FULL_REQUESTS}). */
export function w7Scale(requests: number): number {
  return requests / W7_FULL_REQUESTS;
}
