/**
 * `npm run bench:split`: decode tokens/s of the engine benches' generated ~100 M-parameter f32
 * model (engine-model.ts) split over 2 and 4 agents on loopback against one agent holding every
 * layer, one stream at a time, same run, medians (docs/engine-reference.md, target ≥ 0.8×). Each
 * configuration is its own orchestrator (`POST /v1/completions`, signed stage calls as `serve`
 * makes them) with reference-engine agents, all in this process on one thread: a split does the
 * same arithmetic as one agent, so the ratio is what the wire, the HTTP and the orchestrator cost.
 * The configurations take turns (1, 2, 4, then 4, 2, 1, …) so a burst of load on a shared machine
 * hits them alike. A decode step's time is the interval between two first-stage calls of one
 * greedy completion; the engines' own time in it is measured too, the rest is the overhead. On a
 * loaded machine every hop waits for the scheduler (loopback packets, the event loop's wake-up),
 * so the process's CPU time per step is reported beside the wall time: what the step costs, not
 * what the neighbours cost it. Writes `bench/completion-split.json`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startAgent, type RunningAgent } from '../src/agent/agent.js';
import { ReferenceEngine } from '../src/agent/engines/reference/reference-engine.js';
import type { StageEngine } from '../src/agent/stage-engine.js';
import { modelParameters } from '../src/model/config.js';
import { makeModel } from '../src/model/make-model.js';
import { startOrchestrator, type RunningOrchestrator } from '../src/orchestrator/orchestrator.js';
import { readServedModel, type ServedModel } from '../src/orchestrator/served-model.js';
import { loadAgentKey } from '../src/wire/agent-key.js';
import { ENGINE_MODEL, QUICK, median } from './engine-model.js';
import type { BenchRow } from './types.js';

const SPLITS = [1, 2, 4] as const;
const ROUNDS = QUICK ? 3 : 9;
const DECODE = QUICK ? 12 : 17;
const PROMPT = Array.from({ length: 32 }, (_, i) => 3 + ((i * 37) % 250));
const log = (line: string) => console.error(line);
const uptime = (): string => execFileSync('uptime', { encoding: 'utf8' }).trim();

/** What one configuration measured: per decode step, the whole step, the engines' part of it and the process's CPU time (ms). */
interface Steps {
  readonly stepMs: number[];
  readonly engineMs: number[];
  readonly cpuMs: number[];
}

/** When a first-stage call began (wall and CPU ms), and the engines' time in its step. */
interface Mark {
  readonly start: number;
  readonly cpu: number;
  engineMs: number;
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** A reference engine whose first-stage calls are timestamped and whose compute is timed, per step. */
function timedEngine(engine: ReferenceEngine, marks: Map<number, Mark>): StageEngine {
  return {
    kind: engine.kind,
    maxWidth: engine.maxWidth,
    load: (span, signal) => engine.load(span, signal),
    async step(call) {
      const t0 = performance.now();
      if (call.span.layerStart === 0) marks.set(call.step, { start: t0, cpu: cpuMs(), engineMs: 0 });
      try {
        return await engine.step(call);
      } finally {
        const mark = marks.get(call.step);
        if (mark !== undefined) mark.engineMs += performance.now() - t0;
      }
    },
    rebuild: (sessionId, span, inputs, signal) => engine.rebuild(sessionId, span, inputs, signal),
    drop: (sessionId) => engine.drop(sessionId),
    holds: () => engine.holds(),
  };
}

/** One configuration: an orchestrator and `n` agents each able to hold only its share of the layers. */
interface Swarm {
  readonly n: number;
  readonly orchestrator: RunningOrchestrator;
  readonly agents: RunningAgent[];
  readonly marks: Map<number, Mark>;
  readonly steps: Steps;
  ids?: string;
}

async function swarmOf(n: number, dir: string, work: string, served: ServedModel): Promise<Swarm> {
  const secret = new Uint8Array(32).fill(n);
  const orchestrator = await startOrchestrator({ models: [served.spec], textModels: new Map([[served.text.id, served.text]]), stageTimeoutMs: 120_000, deadlineMs: 600_000, auth: { secret } });
  const layers = served.config.num_hidden_layers;
  const ends = (2 * served.config.vocab_size * served.config.hidden_size * 4) / 1e9;
  const memoryGb = (served.spec.layerGb ?? 1) * (layers / n) * 1.01 + ends;
  const marks = new Map<number, Mark>();
  const agents: RunningAgent[] = [];
  for (let i = 0; i < n; i++) {
    const id = `s${n}-${i}`;
    const engine = timedEngine(new ReferenceEngine({ models: new Map([[served.text.id, dir]]) }), marks);
    agents.push(await startAgent({ id, memoryGb, score: 1, join: orchestrator.url, engine, auth: { secret, key: loadAgentKey(join(work, `${id}.key`), id).key } }));
  }
  for (let i = 0; i < 600 && orchestrator.swarm() === undefined; i++) await new Promise((r) => setTimeout(r, 50));
  if (orchestrator.swarm() === undefined) throw new Error(`no plan over ${n} agent(s)`);
  return { n, orchestrator, agents, marks, steps: { stepMs: [], engineMs: [], cpuMs: [] } };
}

/** One greedy completion of 1 + DECODE tokens; its decode steps' times join `swarm.steps`. */
async function complete(swarm: Swarm, model: string): Promise<void> {
  swarm.marks.clear();
  const r = await fetch(`${swarm.orchestrator.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, prompt: PROMPT, max_tokens: 1 + DECODE, temperature: 0 }) });
  const body = (await r.json()) as { choices?: { token_ids: number[] }[]; hecate?: { path: unknown[] } };
  if (r.status !== 200 || body.hecate?.path.length !== swarm.n) throw new Error(`${swarm.n} agent(s): ${r.status} ${JSON.stringify(body).slice(0, 500)}`);
  const ids = JSON.stringify(body.choices?.[0]?.token_ids);
  if (swarm.ids !== undefined && swarm.ids !== ids) throw new Error(`${swarm.n} agent(s): the greedy ids changed between runs`);
  swarm.ids = ids;
  for (let step = 1; step < DECODE; step++) {
    const a = swarm.marks.get(step);
    const b = swarm.marks.get(step + 1);
    if (a === undefined || b === undefined) throw new Error(`${swarm.n} agent(s): step ${step} was not timed`);
    swarm.steps.stepMs.push(b.start - a.start);
    swarm.steps.engineMs.push(a.engineMs);
    swarm.steps.cpuMs.push(b.cpu - a.cpu);
  }
}

const work = mkdtempSync(join(tmpdir(), 'hecate-bench-split-'));
const swarms: Swarm[] = [];
try {
  const dir = join(work, 'm');
  log(`writing the model (${JSON.stringify(ENGINE_MODEL)})`);
  const made = await makeModel(dir, ENGINE_MODEL);
  const served = await readServedModel(dir, 1);
  const before = uptime();
  log(before);
  for (const n of SPLITS) swarms.push(await swarmOf(n, dir, work, served));
  log('warming up: one completion each (the agents load their layers on the first call)');
  for (const s of swarms) await complete(s, served.text.id);
  for (const s of swarms) s.steps.stepMs.length = s.steps.engineMs.length = s.steps.cpuMs.length = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? swarms : [...swarms].reverse();
    for (const s of order) await complete(s, served.text.id);
    log(`round ${round + 1}/${ROUNDS}: ${swarms.map((s) => `${s.n}: ${(1000 / median(s.steps.stepMs.slice(-(DECODE - 1)))).toFixed(2)} tokens/s`).join(', ')}`);
  }
  const after = uptime();
  log(after);
  if (new Set(swarms.map((s) => s.ids)).size !== 1) throw new Error('the greedy ids differ between configurations');
  const one = swarms[0] as Swarm;
  const rate = (s: Swarm) => 1000 / median(s.steps.stepMs);
  const cpuRate = (s: Swarm) => 1000 / median(s.steps.cpuMs);
  const size = `${(modelParameters(made.config) / 1e6).toFixed(1)} M params f32, ${ROUNDS} x ${DECODE - 1} decode steps each`;
  const rows: BenchRow[] = swarms.slice(1).map((s) => ({ name: `completion decode, ${s.n} agents`, size, median: rate(s), unit: 'tokens/s', baselineName: '1 agent', baseline: rate(one), ratio: rate(s) / rate(one), target: 'ratio >= 0.8', pass: rate(s) / rate(one) >= 0.8 }));
  for (const s of swarms.slice(1)) rows.push({ name: `completion decode on CPU time, ${s.n} agents`, size, median: cpuRate(s), unit: 'tokens/CPU-s', baselineName: '1 agent', baseline: cpuRate(one), ratio: cpuRate(s) / cpuRate(one), target: 'reported', pass: true });
  const breakdown = swarms.map((s) => ({ agents: s.n, tokensPerSecond: rate(s), stepMs: median(s.steps.stepMs), engineMs: median(s.steps.engineMs), cpuMs: median(s.steps.cpuMs), overheadMs: median(s.steps.stepMs.map((t, i) => t - (s.steps.engineMs[i] as number))) }));
  const report = {
    environment: { node: process.version, cpu: `${cpus()[0]?.model ?? 'unknown'} x ${cpus().length}`, loadAverage: loadavg()[0], uptimeBefore: before, uptimeAfter: after, quick: QUICK },
    model: { ...ENGINE_MODEL, parameters: modelParameters(made.config), weightBytes: made.weightBytes },
    breakdown,
    rows,
  };
  writeFileSync(new URL('../../bench/completion-split.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  for (const b of breakdown) console.log(`${b.agents} agent(s): ${b.tokensPerSecond.toFixed(2)} tokens/s | step ${b.stepMs.toFixed(1)} ms = engines ${b.engineMs.toFixed(1)} ms + overhead ${b.overheadMs.toFixed(1)} ms; CPU ${b.cpuMs.toFixed(1)} ms (medians)`);
  for (const r of rows) console.log(`${r.name} | ${r.size} | ${r.median.toFixed(2)} ${r.unit} | ${r.baselineName}: ${r.baseline?.toFixed(2)} | ratio ${r.ratio?.toFixed(3)} | ${r.target} | ${r.pass ? 'PASS' : 'FAIL'}`);
} finally {
  for (const s of swarms) {
    await Promise.all(s.agents.map((a) => a.stop()));
    await s.orchestrator.close();
  }
  rmSync(work, { recursive: true, force: true });
}
