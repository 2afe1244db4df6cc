/**
 * W7, prefix sharing (docs/prefix-cache.md, "Simulation"): the field's prefix-aware routers beside
 * ours and the oracle, 10 seeds by default, printed as a table with the targets (the same
 * `runPrefixSim` as `hecate-node load-sim --workload w7 --requests 8970`, full size). Writes
 * nothing. Run after `npm run build:bench`: `node dist-bench/bench/w7-prefix.js [seeds] [workload,...]`.
 */
import { prefixTable, runPrefixSim } from '../src/sim/load/prefix-sim.js';
import type { PrefixSimOptions } from '../src/sim/load/prefix-sim.js';

const seeds = Number(process.argv[2] ?? 10);
const workloads = process.argv[3]?.split(',') as PrefixSimOptions['workloads'];
const started = performance.now();
const result = runPrefixSim({ seed: 1, seeds, ...(workloads !== undefined ? { workloads } : {}) });
console.log(prefixTable(result));
const missed = result.targets.filter((t) => !t.pass);
console.log(`\n${result.targets.length} targets, ${missed.length} missed (${((performance.now() - started) / 1000).toFixed(1)} s, seeds ${result.seeds.join(', ')}).`);
