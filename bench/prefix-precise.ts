/**
 * Precise mode's hit rates against the oracle's (docs/prefix-cache.md, "Precise mode") on H1, H2
 * and W7a–d. Writes nothing. Run after `npm run build:bench`:
 * `node dist-bench/bench/prefix-precise.js [seeds] [workload-prefix,...] [scale]`.
 */
import { preciseTable, runPreciseHitRates } from '../src/sim/load/precise-sim.js';

const seeds = Number(process.argv[2] ?? 3);
const only = process.argv[3] !== undefined && process.argv[3] !== 'all' ? process.argv[3].split(',') : undefined;
const scale = Number(process.argv[4] ?? 1);
const started = performance.now();
const rows = runPreciseHitRates(Array.from({ length: seeds }, (_, i) => 1 + i), scale, only);
console.log(preciseTable(rows));
console.log(`\n(${((performance.now() - started) / 1000).toFixed(1)} s, ${seeds} seeds, scale ${scale}; hit rate (÷ the oracle's))`);
