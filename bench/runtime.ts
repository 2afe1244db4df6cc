/**
 * Runtime benchmarks (issue 5): routing, telemetry, failure handling, planning, start/stop and
 * memory, on the built package, at the example topology, 100 × 8 and 1,000 × 8 pipelines and
 * 10,000 nodes. Every ratio is against a baseline measured in the same process, interleaved.
 * Run alone (`node dist/bench/runtime.js`) it prints a table.
 */
import { pathToFileURL } from 'node:url';
import { computeRescue } from '../machines/swarm.machine.js';
import { createSwarm, failoverInSwarm, planSwarm, routeRequest, type NodeProfile, type Route, type Swarm, type TelemetrySample } from '../src/index.js';
import { collectGarbage, medianMs, medianNs, QUICK } from './measure.js';
import { bareTelemetryActor, exampleTopology, fullScanRoute, pipelines8, type Topology } from './synthetic.js';
import type { BenchRow } from './types.js';

/** The targets of issue 5; a missed target is reported, never loosened here. */
export const TARGETS = {
  /** swarm.route at the example topology, as a multiple of pure routeRequest. */
  routeOverPure: 1.5,
  /** swarm.route at 1,000 pipelines, ns per route. */
  routeNs: 10_000,
  /** swarm.route at 1,000 pipelines, as a share of the full-scan baseline (5× faster). */
  routeOverScan: 0.2,
  /** report's event rate as a share of the bare XState actor's. */
  reportOverBare: 0.8,
  /** createSwarm + stop of 10,000 nodes, ms. */
  createStopMs: 1000,
  /** Heap per node at 10,000 nodes, bytes. */
  heapPerNode: 4096,
  /** markDown at 8,000 nodes, ms. */
  markDownMs: 1,
} as const;

const TOKENS = 512;
const round = (x: number, digits = 3): number => Number(x.toPrecision(digits + 1));

/** Seeded telemetry so routes compare measured, different costs (not only declared ones). */
function warm(swarm: Swarm, profiles: readonly NodeProfile[]): void {
  let seed = 7;
  const rnd = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  for (const p of profiles) swarm.report(p.id, { load: round(rnd(), 2), latencyMs: 2 + Math.floor(rnd() * 40) });
}

function reference(name: string, size: string, median: number, unit: string, extra: Partial<BenchRow> = {}): BenchRow {
  return { name, size, median: round(median), unit, target: '(reference)', pass: true, ...extra };
}

/** swarm.route against pure routeRequest, the full-scan baseline and a custom-weights request. */
function routing(t: Topology, swarm: Swarm, rows: BenchRow[]): void {
  const state = swarm.state();
  const model = swarm.route().modelId;
  const indexed = swarm.route({ tokens: TOKENS });
  const pure = routeRequest(model, { tokens: TOKENS }, state);
  const scan = fullScanRoute(state.plan, state.nodes, model, TOKENS);
  if (indexed.pipelineId !== pure.pipelineId || scan?.pipelineId !== pure.pipelineId) {
    throw new Error(`routes disagree at ${t.size}: index ${indexed.pipelineId}, routeRequest ${pure.pipelineId}, full scan ${String(scan?.pipelineId)}`);
  }
  const custom = { tokens: TOKENS, weights: { latency: 2 } };
  const [routeNs, pureNs, scanNs, customNs] = medianNs([
    { name: 'swarm.route', fn: () => void swarm.route({ tokens: TOKENS }) },
    { name: 'routeRequest', fn: () => void routeRequest(model, { tokens: TOKENS }, state) },
    { name: 'full scan', fn: () => void fullScanRoute(state.plan, state.nodes, model, TOKENS) },
    { name: 'swarm.route custom', fn: () => void swarm.route(custom) },
  ]) as [number, number, number, number];
  const example = t.size.startsWith('example');
  const large = state.plan.pipelines.length >= 1000;
  if (example) {
    const ratio = routeNs / pureNs;
    rows.push({
      name: 'swarm.route (index)',
      size: t.size,
      median: round(routeNs),
      unit: 'ns/op',
      baselineName: 'routeRequest (pure)',
      baseline: round(pureNs),
      ratio: round(ratio),
      target: `ratio <= ${TARGETS.routeOverPure}`,
      pass: ratio <= TARGETS.routeOverPure,
    });
  } else {
    const ratio = routeNs / scanNs;
    rows.push({
      name: 'swarm.route (index)',
      size: t.size,
      median: round(routeNs),
      unit: 'ns/op',
      baselineName: 'full scan (original formula)',
      baseline: round(scanNs),
      ratio: round(ratio),
      ...(large
        ? { target: `<= ${TARGETS.routeNs} ns/op and ratio <= ${TARGETS.routeOverScan}`, pass: routeNs <= TARGETS.routeNs && ratio <= TARGETS.routeOverScan }
        : { target: '(reference)', pass: true }),
    });
  }
  rows.push(reference('routeRequest (pure scan)', t.size, pureNs, 'ns/op', { baselineName: 'full scan (original formula)', baseline: round(scanNs), ratio: round(pureNs / scanNs) }));
  rows.push(reference('swarm.route, custom weights (scan)', t.size, customNs, 'ns/op', { baselineName: 'full scan (original formula)', baseline: round(scanNs), ratio: round(customNs / scanNs) }));
}

/** report through the node actors against bare XState actors (one per node) given the same events. */
function telemetry(t: Topology, swarm: Swarm, rows: BenchRow[]): void {
  const ids = t.profiles.map((p) => p.id);
  const events: { id: string; index: number; sample: TelemetrySample }[] = [];
  for (let i = 0; i < 4096; i++) events.push({ id: ids[i % ids.length] as string, index: i % ids.length, sample: { load: (i % 10) / 10, latencyMs: 3 + (i % 17) } });
  const bare = ids.map(() => bareTelemetryActor());
  let r = 0;
  let b = 0;
  const [reportNs, bareNs] = medianNs([
    {
      name: 'report',
      fn: () => {
        const e = events[r++ & 4095] as (typeof events)[number];
        swarm.report(e.id, e.sample);
      },
    },
    {
      name: 'bare actor',
      fn: () => {
        const e = events[b++ & 4095] as (typeof events)[number];
        bare[e.index]?.send({ type: 'node.telemetry', sample: e.sample });
      },
    },
    // Many short interleaved rounds: both contenders are allocation-heavy XState sends, so a GC
    // or a noisy neighbour during one long round would swing the ratio (seen: 0.46 to 0.90).
  ], { rounds: QUICK ? 4 : 21, timeMs: QUICK ? 20 : 40 }) as [number, number];
  for (const a of bare) a.stop();
  const reportRate = 1e9 / reportNs;
  const bareRate = 1e9 / bareNs;
  const ratio = reportRate / bareRate;
  rows.push({
    name: 'report (node actor EWMA + index)',
    size: t.size,
    median: round(reportRate),
    unit: 'ops/s',
    baselineName: 'bare XState actor, one assign (one per node)',
    baseline: round(bareRate),
    ratio: round(ratio),
    target: `ratio >= ${TARGETS.reportOverBare}`,
    pass: ratio >= TARGETS.reportOverBare,
  });
}

/** markDown on a node of a served route (rescue + mark), undone by markAlive between samples. */
function failures(t: Topology, swarm: Swarm, rows: BenchRow[], large: boolean): void {
  const models = swarm.state().plan.models.map((m) => m.id);
  const victimOf = (i: number): string => {
    const route = swarm.route({ model: models[i % models.length] as string });
    return (route.stages[Math.floor(i / models.length) % route.stages.length] as Route['stages'][number]).nodeId;
  };
  const ops = QUICK ? 40 : large ? 300 : 600;
  for (let i = 0; i < 20; i++) {
    const v = victimOf(i);
    swarm.markDown(v);
    swarm.markAlive(v);
  }
  const markDownMs = medianMs(ops, (i) => {
    const v = victimOf(i);
    const start = performance.now();
    swarm.markDown(v);
    const ms = performance.now() - start;
    swarm.markAlive(v);
    return ms;
  });
  const rescueMs = medianMs(ops, (i) => {
    const v = victimOf(i);
    const context = swarm.actor.getSnapshot().context;
    const start = performance.now();
    computeRescue(context, v);
    return performance.now() - start;
  });
  rows.push({
    name: 'markDown (rescue + mark)',
    size: t.size,
    median: round(markDownMs),
    unit: 'ms',
    ...(large ? { target: `<= ${TARGETS.markDownMs} ms`, pass: markDownMs <= TARGETS.markDownMs } : { target: '(reference)', pass: true }),
  });
  // What markNodeDown's assign does to the `alive` mirror: a copy-on-write of the byte array per event.
  const aliveCopyMs = medianMs(ops, (i) => {
    const alive = swarm.actor.getSnapshot().context.alive;
    const slot = i % alive.length;
    const start = performance.now();
    const copy = new Uint8Array(alive);
    copy[slot] = 0;
    const ms = performance.now() - start;
    if (copy[slot] !== 0) throw new Error('unreachable');
    return ms;
  });
  rows.push(reference('  of which computeRescue', t.size, rescueMs, 'ms'));
  rows.push(reference('  of which the alive-record copy (markNodeDown)', t.size, aliveCopyMs, 'ms'));

  const state = swarm.state();
  const cases = models.map((m, i) => {
    const route = routeRequest(m, { tokens: TOKENS }, state);
    return { route, failed: (route.stages[i % route.stages.length] as Route['stages'][number]).nodeId };
  });
  let c = 0;
  const [failoverNs] = medianNs([
    {
      name: 'failoverInSwarm',
      fn: () => {
        const k = cases[c++ % cases.length] as (typeof cases)[number];
        failoverInSwarm(k.route, k.failed, state, { allowDegraded: true, request: { tokens: TOKENS } });
      },
    },
  ]) as [number];
  rows.push(reference('failoverInSwarm (pure)', t.size, failoverNs, 'ns/op'));
}

function planning(t: Topology, rows: BenchRow[]): void {
  const runs = QUICK ? 2 : t.profiles.length > 1000 ? 5 : t.profiles.length > 100 ? 15 : 200;
  planSwarm(t.profiles, t.config);
  rows.push(reference('planSwarm', t.size, medianMs(runs, () => void planSwarm(t.profiles, t.config)), 'ms'));
}

/** createSwarm + stop and heap per node at 10,000 nodes. */
function lifecycle(t: Topology, rows: BenchRow[]): void {
  const nodes = t.profiles.length;
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  let swarm: Swarm | undefined = createSwarm(t.profiles, t.config, { seed: 1 });
  collectGarbage();
  const perNode = (process.memoryUsage().heapUsed - before) / nodes;
  swarm.stop();
  swarm = undefined;
  collectGarbage();

  const runs = QUICK ? 2 : 5;
  const create: number[] = [];
  const stop: number[] = [];
  const total = medianMs(runs, () => {
    const start = performance.now();
    const s = createSwarm(t.profiles, t.config, { seed: 1 });
    const mid = performance.now();
    s.stop();
    const end = performance.now();
    create.push(mid - start);
    stop.push(end - mid);
    collectGarbage();
    return end - start;
  });
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;
  rows.push({ name: 'createSwarm + stop', size: t.size, median: round(total), unit: 'ms', target: `<= ${TARGETS.createStopMs} ms`, pass: total <= TARGETS.createStopMs });
  rows.push(reference('  of which createSwarm (incl. planSwarm)', t.size, med(create), 'ms'));
  rows.push(reference('  of which stop', t.size, med(stop), 'ms'));
  rows.push({ name: 'heap per node (running swarm)', size: t.size, median: Math.round(perNode), unit: 'bytes/node', target: `<= ${TARGETS.heapPerNode} bytes/node`, pass: perNode <= TARGETS.heapPerNode });
}

/** Every runtime benchmark, in order: routing, telemetry, failures, planning, lifecycle. */
export async function runtimeBench(log: (line: string) => void = () => {}): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const sizes: Topology[] = [exampleTopology(), pipelines8(25), pipelines8(250)];
  for (const t of sizes) {
    log(`runtime: ${t.size}`);
    const swarm = createSwarm(t.profiles, t.config, { seed: 1 });
    warm(swarm, t.profiles);
    routing(t, swarm, rows);
    if (t.size.startsWith('example') || t.profiles.length >= 8000) telemetry(t, swarm, rows);
    failures(t, swarm, rows, t.profiles.length >= 8000);
    planning(t, rows);
    swarm.stop();
    collectGarbage();
  }
  const big = pipelines8(312, 4);
  log(`runtime: ${big.size}`);
  planning(big, rows);
  lifecycle(big, rows);
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await runtimeBench((line) => console.error(line));
  console.table(rows);
}
