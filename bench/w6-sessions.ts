/**
 * W6, kills mid-generation (docs/sessions.md): sessions that resume from the failed stage beside
 * restart from scratch, 10 seeds × 48 sessions, printed as the load simulation prints it. Writes
 * nothing. Run after `npm run build:bench`: `node dist-bench/bench/w6-sessions.js [seeds]`. The same figures
 * come from `hecate-node load-sim --workload w6`.
 */
import { runSessionSim, sessionTable } from '../src/sim/load/session-sim.js';

const seeds = Number(process.argv[2] ?? 10);
const started = performance.now();
const result = await runSessionSim({ seed: 1, seeds });
console.log(sessionTable(result));
const missed = result.targets.filter((t) => !t.pass);
console.log(`${result.targets.length} targets, ${missed.length} missed${missed.length > 0 ? `: ${missed.map((t) => `${t.target} (${t.value} > ${t.limit})`).join('; ')}` : ''} (${((performance.now() - started) / 1000).toFixed(1)} s).`);
