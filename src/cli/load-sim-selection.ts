/**
 * Which simulations `hecate-node load-sim --workload` selects (docs/performance.md): the request
 * workloads W1–W5 (run together by `runLoadSim`), W6 (sessions), and W7a–d (prefix sharing) and
 * W8 (overload), which have their own simulators and run only when named.
 */
import { W8_ID } from '../sim/load/overload-comparison.js';
import { PREFIX_WORKLOADS, type PrefixWorkloadSpec } from '../sim/load/prefix-workloads.js';
import { W6_ID } from '../sim/load/session-sim.js';
import { WORKLOADS } from '../sim/load/workloads.js';
import { UsageError } from './args.js';

/** What one `load-sim` run simulates. */
export interface LoadSimSelection {
  /** Ids for `runLoadSim` (W1–W5), as given. */
  readonly requestIds: readonly string[];
  readonly runRequests: boolean;
  readonly runW6: boolean;
  /** W7's workloads to run, in their order; empty when W7 does not run. */
  readonly w7: readonly PrefixWorkloadSpec['id'][];
  readonly runW8: boolean;
}

/** Every id `--workload` knows, in order. */
export function allWorkloadIds(): string[] {
  return [...WORKLOADS.map((w) => w.id), W6_ID, ...PREFIX_WORKLOADS.map((w) => w.id), W8_ID];
}

/**
 * Splits `--workload` ids (exact or a prefix) into the simulations to run. No ids: W1–W6, as
 * always. W7 and W8 run only for an id beginning `w7` or `w8` (so `w` alone still means W1–W6).
 * @throws {UsageError} naming `--workload` and an id that selects nothing.
 */
export function selectLoadSim(workloads: readonly string[]): LoadSimSelection {
  const matches = (full: string, id: string) => full === id || full.startsWith(id);
  const w7Of = (id: string) => (id.startsWith('w7') ? PREFIX_WORKLOADS.filter((w) => matches(w.id, id)) : []);
  const isW8 = (id: string) => id.startsWith('w8') && matches(W8_ID, id);
  const isW6 = (id: string) => matches(W6_ID, id);
  for (const id of workloads) {
    if (!allWorkloadIds().some((full) => matches(full, id)) || (id.startsWith('w7') && w7Of(id).length === 0)) {
      throw new UsageError(`flag --workload: unknown workload "${id}" (workloads: ${allWorkloadIds().join(', ')})`);
    }
  }
  // W6 runs sessions, not requests: it has its own simulator. An id that names only W6 selects only it.
  const rest = workloads.filter((id) => w7Of(id).length === 0 && !isW8(id));
  const requestIds = rest.filter((id) => !isW6(id) || WORKLOADS.some((w) => matches(w.id, id)));
  const w7 = PREFIX_WORKLOADS.filter((w) => workloads.some((id) => w7Of(id).includes(w))).map((w) => w.id);
  return {
    requestIds,
    runRequests: workloads.length === 0 || requestIds.length > 0,
    runW6: workloads.length === 0 || rest.some(isW6),
    w7,
    runW8: workloads.some(isW8),
  };
}
