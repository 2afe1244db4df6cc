/**
 * `node dist-bench/bench/scripted-engines.js N TOKEN_MS [PREFIX_CACHE_JSON]`: N scripted engines
 * (test/agent/upstream/scripted-upstream.ts) in their own process, so their work does not share
 * the router's event loop in bench/openai-upstream.ts. Prints their URLs as one JSON line; their
 * open streams are on each one's `/metrics` (`vllm:num_requests_running`). Given a line
 * `{"join": URL}` on stdin, it starts an upstream agent beside each engine, in this process (as one
 * deploys `hecate-node agent --upstream` on its engine's host), joining the orchestrator at URL, and
 * prints `"joined"`. Ends on stdin's close.
 */
import { createInterface } from 'node:readline';
import { startUpstreamAgent, type RunningUpstreamAgent } from '../src/agent/upstream/upstream-agent.js';
import { startScriptedUpstream } from '../test/agent/upstream/scripted-upstream.js';

const n = Number(process.argv[2] ?? 2);
const tokenMs = Number(process.argv[3] ?? 5);
const prefixCache = process.argv[4] === undefined ? undefined : (JSON.parse(process.argv[4]) as { blockChars: number; blocks: number; missMs: number });
const engines = await Promise.all(Array.from({ length: n }, () => startScriptedUpstream({ model: 'scripted', tokenMs, ...(prefixCache !== undefined ? { prefixCache } : {}) })));
process.stdout.write(`${JSON.stringify(engines.map((e) => e.url))}\n`);
const agents: RunningUpstreamAgent[] = [];
// A line `{"join": URL}`: an upstream agent beside each engine, in this process, joins the orchestrator at URL.
createInterface({ input: process.stdin }).on('line', (line) => {
  const { join } = JSON.parse(line) as { join: string };
  void (async () => {
    for (let i = 0; i < engines.length; i++) agents.push(await startUpstreamAgent({ id: `u${i}`, memoryGb: 4, score: 1, join, upstream: (engines[i] as { url: string }).url, heartbeatMs: 200 }));
    await Promise.all(agents.map((a) => a.joined));
    process.stdout.write('"joined"\n');
  })();
});
process.stdin.on('end', () => {
  void Promise.all([...agents.map((a) => a.stop()), ...engines.map((e) => e.close())]).then(() => process.exit(0));
});
