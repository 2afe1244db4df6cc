/**
 * `node dist-bench/bench/serve-cancel.js [generates] [runs]`: issue 27's cancellation check with real
 * processes (docs/serve.md, "Cancellation") — `hecate-node serve` and four `hecate-node agent`s
 * (two copies of an 8-layer model, two stages each); `generates` (default 200) concurrent
 * POST /v1/generate of 24 steps, every other client hanging up between 200 and 800 ms in
 * (mid-generation: under this load one takes seconds). Prints, per run, how
 * long after the last client every agent held 0 sessions and ran 0 calls (the target: within 1 s),
 * the orchestrator's leases, and the counts; then the median. Wall-clock on a shared machine.
 *
 * A third argument gives every agent `--slots N`: the copies saturate, most generations wait for
 * admission, and hung-up waiters leave the queue (`slots` 4: 16 at once on the two copies).
 *
 *     npm run build && npm run build:bench && node dist-bench/bench/serve-cancel.js 200 3 [slots]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cancelRun } from '../test/orchestrator/cancel-run.js';

const BIN = 'dist/src/cli/main.js';
const generates = Number(process.argv[2] ?? 200);
const runs = Number(process.argv[3] ?? 3);
/** With agent slots, the copies saturate and most generations wait in the admission queue first. */
const slots = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
const children = new Set<ChildProcess>();

function start(args: readonly string[], ready: RegExp): Promise<string> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')}: not ready after 30 s: ${out.slice(-2000)}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const m = ready.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1] ?? m[0]);
      }
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code})`)));
  });
}

async function stopAll(): Promise<void> {
  const all = [...children];
  for (const c of all) c.kill('SIGKILL');
  await Promise.all(all.map((c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(undefined) : c.once('exit', r)))));
}

async function once(run: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'hecate-cancel-bench-'));
  const token = join(dir, 'swarm-token');
  try {
    const url = await start(['serve', '--port', '0', '--layers', '8', '--pipelines', '2', '--token-file', token], /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const agents = await Promise.all(['k1', 'k2', 'k3', 'k4'].map((id) => start(['agent', '--id', id, '--memory', '5', '--score', '1', '--join', url, '--port', '0', '--per-layer-ms', '3', '--jitter', '0', '--token-file', token, ...(slots !== undefined ? ['--slots', String(slots)] : [])], /listening on (http:\/\/\S+?),/)));
    for (let i = 0; ; i++) {
      const s = (await (await fetch(`${url}/v1/status`)).json()) as { status: string; nodes: { state: string }[] };
      if (s.status === 'healthy' && s.nodes.length === 4 && s.nodes.every((n) => n.state === 'alive')) break;
      if (i > 300) throw new Error('the swarm was not planned within 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const f = await cancelRun(url, agents, { generates, steps: 24, abortAfterMs: [200, 800], timeoutMs: 30_000 });
    const m = (k: string) => f.metrics.get(k) ?? 0;
    const queued = [...f.metrics].filter(([k]) => k.startsWith('hecate_admission_queue_depth')).reduce((a, [, v]) => a + v, 0);
    const waited = m('hecate_admission_wait_seconds_count{class="default"}');
    const aborted = [...f.metrics].filter(([k]) => k.startsWith('hecate_stage_calls_total') && k.includes('outcome="aborted"')).reduce((a, [, v]) => a + v, 0);
    console.log(`run ${run}: ${f.generates} generates: ${f.ok} answered 200, ${f.hungUp} hung up (${m('hecate_requests_total{outcome="Cancelled"}')} cancelled on the orchestrator, ${aborted} running stage calls aborted), ${f.failures.length} failures${f.failures.length > 0 ? ` (${f.failures.slice(0, 3).join('; ')})` : ''}; peak sessions per agent ${f.peakSessions.join('/')}; every agent at 0 sessions and 0 calls ${f.drainedMs} ms after the last client; leases ${m('hecate_leases')}, queued ${queued}; ${waited} admitted (p50 wait ≤ ${waitQuantile(f.metrics, 0.5)} s), ${m('hecate_admission_rejections_total{reason="Cancelled"}')} left the queue hung up; drops ok ${m('hecate_session_drops_total{outcome="ok"}')}, refused ${m('hecate_session_drops_total{outcome="refused"}')}, unreachable ${m('hecate_session_drops_total{outcome="unreachable"}')}`);
    return f.drainedMs;
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

const drained: number[] = [];
for (let r = 1; r <= runs; r++) drained.push(await once(r));
drained.sort((a, b) => a - b);
console.log(`median time to 0 open sessions on every agent: ${drained[Math.floor(drained.length / 2)]} ms over ${runs} runs (target ≤ 1000 ms)`);

/** The upper bound of the histogram bucket holding quantile `q` of the admission waits. */
function waitQuantile(metrics: ReadonlyMap<string, number>, q: number): string {
  const buckets = [...metrics].filter(([k]) => k.startsWith('hecate_admission_wait_seconds_bucket{') && k.includes('class="default"')).map(([k, v]) => [/le="([^"]+)"/.exec(k)?.[1] ?? '+Inf', v] as const);
  const total = buckets.find(([le]) => le === '+Inf')?.[1] ?? 0;
  return buckets.find(([, v]) => v >= q * total)?.[0] ?? 'n/a';
}
