/**
 * `node dist-bench/bench/shared-load-sim.js [seeds] [requests] [orchestrators]`: W5 in the load
 * simulation with several orchestrators sharing the load signal at modelled announcement delays
 * (bench/shared-load-model.ts; docs/replication.md, "Shared load"). Prints p99 against one
 * orchestrator's on the same arrivals, per seed and as the median ratio.
 *
 *     npm run build:bench && node dist-bench/bench/shared-load-sim.js 5 20000 8
 */
import { runSharedLoadSim, sharedLoadTable } from './shared-load-model.js';

const seeds = Number(process.argv[2] ?? 5);
const requests = Number(process.argv[3] ?? 20_000);
const routers = Number(process.argv[4] ?? 8);
const began = performance.now();
const result = runSharedLoadSim({ seeds, requests, routers });
console.log(`W5 (Poisson ρ 0.7, the load simulation's default topology), ${routers} orchestrators, seeds ${result.seeds.join(', ')}, ${requests} requests per run (${((performance.now() - began) / 1000).toFixed(1)} s)\n`);
console.log(sharedLoadTable(result));
