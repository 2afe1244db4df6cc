/**
 * `node dist-bench/bench/scripted-engines.js N TOKEN_MS [PREFIX_CACHE_JSON]`: N scripted engines
 * (test/agent/upstream/scripted-upstream.ts) in their own process, so their work does not share
 * the router's event loop in bench/openai-upstream.ts. Prints their URLs as one JSON line; their
 * open streams are on each one's `/metrics` (`vllm:num_requests_running`). Ends on stdin's close.
 */
import { startScriptedUpstream } from '../test/agent/upstream/scripted-upstream.js';

const n = Number(process.argv[2] ?? 2);
const tokenMs = Number(process.argv[3] ?? 5);
const prefixCache = process.argv[4] === undefined ? undefined : (JSON.parse(process.argv[4]) as { blockChars: number; blocks: number; missMs: number });
const engines = await Promise.all(Array.from({ length: n }, () => startScriptedUpstream({ model: 'scripted', tokenMs, ...(prefixCache !== undefined ? { prefixCache } : {}) })));
process.stdout.write(`${JSON.stringify(engines.map((e) => e.url))}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void Promise.all(engines.map((e) => e.close())).then(() => process.exit(0));
});
