/**
 * `node dist-bench/bench/openai-router.js URL,URL,… [MEMORY_GB] [apart|beside]`: the router of
 * bench/openai-upstream.ts in its own process: an orchestrator of model "m" and one upstream agent
 * in front of each scripted engine. With `apart`, each agent runs in a child process of its own:
 * each program's event loop then handles its own hop. Prints the orchestrator's URL as one JSON
 * line once its swarm is planned; ends (and ends its agents) on stdin's close. With `beside`, it
 * starts no agent (they run in the engines' process, bench/scripted-engines.ts, as `serve` and
 * `hecate-node agent --upstream` deploy: an agent beside its engine, the orchestrator elsewhere):
 * it prints its URL at once, then `"planned"` once the agents joined and its swarm is planned.
 *
 * `node dist-bench/bench/openai-router.js agent ID ORCHESTRATOR_URL ENGINE_URL MEMORY_GB`: one
 * such agent; prints a line once it joined, ends on stdin's close.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startUpstreamAgent, type RunningUpstreamAgent } from '../src/agent/upstream/upstream-agent.js';
import { startOrchestrator } from '../src/orchestrator/orchestrator.js';

const onStdinEnd = (stop: () => Promise<unknown>): void => {
  process.stdin.resume();
  process.stdin.on('end', () => {
    void stop().then(() => process.exit(0));
  });
};

const agent = (id: string, join: string, upstream: string, memoryGb: number): Promise<RunningUpstreamAgent> => startUpstreamAgent({ id, memoryGb, score: 1, join, upstream, heartbeatMs: 200 });

if (process.argv[2] === 'agent') {
  const [id, join, upstream, memory] = process.argv.slice(3) as [string, string, string, string];
  const running = await agent(id, join, upstream, Number(memory));
  await running.joined;
  process.stdout.write('joined\n');
  onStdinEnd(() => running.stop());
} else {
  const urls = (process.argv[2] ?? '').split(',').filter((u) => u !== '');
  /** Each agent's memory: 4 GB holds the 4 layers' weights; more is the engine's KV cache the prefix index fills. */
  const memoryGb = Number(process.argv[3] ?? 4);
  const apart = process.argv[4] === 'apart';
  /** `beside`: no agent here; each runs beside its engine (bench/scripted-engines.ts) and joins the URL printed first. */
  const beside = process.argv[4] === 'beside';
  const orchestrator = await startOrchestrator({ models: [{ id: 'm', kind: 'base', layers: 4, pipelines: urls.length }] });
  const children: ChildProcess[] = [];
  const agents: RunningUpstreamAgent[] = [];
  if (beside) {
    process.stdout.write(`${JSON.stringify(orchestrator.url)}\n`);
  } else if (apart) {
    await Promise.all(urls.map(async (upstream, i) => {
      const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), 'agent', `u${i}`, orchestrator.url, upstream, String(memoryGb)], { stdio: ['pipe', 'pipe', 'inherit'] });
      children.push(child);
      await new Promise((resolve) => child.stdout?.once('data', resolve));
    }));
  } else {
    agents.push(...(await Promise.all(urls.map((upstream, i) => agent(`u${i}`, orchestrator.url, upstream, memoryGb)))));
    await Promise.all(agents.map((a) => a.joined));
  }
  for (let i = 0; i < 200 && orchestrator.swarm()?.state().plan.pipelines.length !== urls.length; i++) await new Promise((r) => setTimeout(r, 25));
  if (orchestrator.swarm()?.state().plan.pipelines.length !== urls.length) throw new Error(`the swarm was not planned with ${urls.length} copies within 5 s`);
  process.stdout.write(`${JSON.stringify(beside ? 'planned' : orchestrator.url)}\n`);
  onStdinEnd(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await Promise.all(children.map((c) => new Promise((resolve) => {
      c.once('exit', resolve);
      c.stdin?.end();
    })));
    await orchestrator.close();
  });
}
