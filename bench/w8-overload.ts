/**
 * W8, overload (docs/admission.md, "Measured: W8"): arrivals at 150% of the swarm's capacity in
 * three classes (critical 10%, standard 60%, sheddable 30%) with deadlines, through the real
 * `swarm.admit`, against no admission (today) and one FIFO queue; medians over 10 seeds; and the
 * same at 80% load, where admission must cost nothing. The same comparison as
 * `hecate-node load-sim --workload w8` (`runOverloadComparison`). Writes nothing. Run after
 * `npm run build:bench`: `node dist-bench/bench/w8-overload.js [seeds] [requests]`.
 */
import { overloadTable, runOverloadComparison } from '../src/sim/load/overload-comparison.js';

const seeds = Number(process.argv[2] ?? 10);
const requests = Number(process.argv[3] ?? 4000);
const started = performance.now();
const result = await runOverloadComparison({ seed: 1, seeds, requests });
console.log(overloadTable(result));
const missed = result.targets.filter((t) => !t.pass);
console.log(`${result.targets.length} targets, ${missed.length} missed (${((performance.now() - started) / 1000).toFixed(1)} s).`);
