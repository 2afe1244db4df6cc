/**
 * `node dist-bench/bench/openai-router.js URL,URL,… [MEMORY_GB]`: the router of bench/openai-upstream.ts in
 * its own process, as `serve` and its agents run deployed: an orchestrator of model "m" and one
 * upstream agent in front of each scripted engine. Prints the orchestrator's URL as one JSON line
 * once its swarm is planned; ends on stdin's close.
 */
import { startUpstreamAgent } from '../src/agent/upstream/upstream-agent.js';
import { startOrchestrator } from '../src/orchestrator/orchestrator.js';

const urls = (process.argv[2] ?? '').split(',').filter((u) => u !== '');
/** Each agent's memory: 4 GB holds the 4 layers' weights; more is the engine's KV cache the prefix index fills. */
const memoryGb = Number(process.argv[3] ?? 4);
const orchestrator = await startOrchestrator({ models: [{ id: 'm', kind: 'base', layers: 4, pipelines: urls.length }] });
const agents = await Promise.all(urls.map((upstream, i) => startUpstreamAgent({ id: `u${i}`, memoryGb, score: 1, join: orchestrator.url, upstream, heartbeatMs: 200 })));
await Promise.all(agents.map((a) => a.joined));
for (let i = 0; i < 200 && orchestrator.swarm()?.state().plan.pipelines.length !== urls.length; i++) await new Promise((r) => setTimeout(r, 25));
process.stdout.write(`${JSON.stringify(orchestrator.url)}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void Promise.all(agents.map((a) => a.stop()))
    .then(() => orchestrator.close())
    .then(() => process.exit(0));
});
