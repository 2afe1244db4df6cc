/**
 * Failure detection, side by side (docs/detection.md), in virtual time on a ManualClock: 50 nodes send
 * heartbeats for 10 simulated hours — every 1 s with normal jitter (σ 100 ms), plus GC-like pauses
 * (a few per hour, up to 2.5 s) — and crash now and then (dead 60 s, then back). The phi-accrual
 * detector runs in the real node actors (the node statechart, its delayed transitions on the
 * clock); fixed 3 s and 30 s timeouts read the same heartbeat trace. Measured: false downs (a
 * live node declared down) and detection time after a crash, p50 and p99. Deterministic (seeded).
 * Run alone (`node dist/bench/detection.js`) it prints a table.
 */
import { pathToFileURL } from 'node:url';
import { createActor } from 'xstate';
import { nodeMachine } from '../machines/node.machine.js';
import type { PhiOptions } from '../src/core/phi.js';
import { uniform } from '../src/core/random.js';
import { ManualClock } from '../src/runtime/clock.js';
import { QUICK } from './measure.js';
import type { BenchRow } from './types.js';

/** The simulated fleet. */
export interface DetectionScenario {
  readonly nodes: number;
  readonly hours: number;
  readonly seed: number;
  readonly intervalMs: number;
  readonly jitterSdMs: number;
  /** Mean GC-like pauses per node and hour (Poisson). */
  readonly pausesPerHour: number;
  readonly minPauseMs: number;
  readonly maxPauseMs: number;
  /** Mean crashes per node and hour (Poisson). */
  readonly crashesPerHour: number;
  /** How long a crashed node stays dead before it sends heartbeats again. */
  readonly deadMs: number;
}

/** The fleet of the detection target (docs/detection.md): 50 nodes × 10 h, 1 s ± 100 ms heartbeats, 3 pauses an hour up to 2.5 s. */
export const FLEET: DetectionScenario = {
  nodes: 50,
  hours: QUICK ? 1 : 10,
  seed: 15,
  intervalMs: 1000,
  jitterSdMs: 100,
  pausesPerHour: 3,
  minPauseMs: 500,
  maxPauseMs: 2500,
  crashesPerHour: 1,
  deadMs: 60_000,
};

/** One node's heartbeats and crashes, in ms. */
export interface NodeTrace {
  readonly beats: readonly number[];
  /** Each crash: when it died and when its next heartbeat came (the restart). */
  readonly crashes: readonly { readonly at: number; readonly back: number }[];
  readonly pauses: number;
}

/** What one detector did over the fleet. */
export interface DetectionResult {
  readonly falseDowns: number;
  /** Detection time of each crash, ms after the crash. */
  readonly detections: readonly number[];
  /** Crashes never detected before the node came back. */
  readonly missed: number;
}

/** The heartbeat trace of every node, seeded. */
export function generateTraces(s: DetectionScenario): NodeTrace[] {
  const random = uniform(s.seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const exponential = (ratePerMs: number) => -Math.log(1 - random()) / ratePerMs;
  const end = s.hours * 3_600_000;
  const traces: NodeTrace[] = [];
  for (let n = 0; n < s.nodes; n++) {
    const beats: number[] = [];
    const crashes: { at: number; back: number }[] = [];
    let pauses = 0;
    let nextPause = exponential(s.pausesPerHour / 3_600_000);
    let nextCrash = exponential(s.crashesPerHour / 3_600_000);
    let t = random() * s.intervalMs; // nodes start out of phase
    beats.push(Math.round(t));
    for (;;) {
      let next = t + Math.max(s.intervalMs + s.jitterSdMs * normal(), 1);
      // A pause freezes the process: the heartbeat due after it starts is late by its length.
      while (nextPause < next) {
        next += s.minPauseMs + random() * (s.maxPauseMs - s.minPauseMs);
        pauses++;
        nextPause = next + exponential(s.pausesPerHour / 3_600_000);
      }
      if (nextCrash < next) {
        const back = nextCrash + s.deadMs;
        crashes.push({ at: Math.round(nextCrash), back: Math.round(back) });
        next = back;
        nextCrash = back + exponential(s.crashesPerHour / 3_600_000);
        nextPause = Math.max(nextPause, back);
      }
      if (next >= end) break;
      t = next;
      beats.push(Math.round(t));
    }
    traces.push({ beats, crashes, pauses });
  }
  return traces;
}

/** A fixed timeout: down when `timeoutMs` pass without a heartbeat. */
export function fixedTimeout(traces: readonly NodeTrace[], timeoutMs: number): DetectionResult {
  let falseDowns = 0;
  const detections: number[] = [];
  for (const { beats, crashes } of traces) {
    let c = 0;
    for (let i = 0; i + 1 < beats.length; i++) {
      const last = beats[i] as number;
      const next = beats[i + 1] as number;
      const crash = crashes[c];
      if (crash !== undefined && crash.at >= last && crash.at < next) {
        if (last + timeoutMs < crash.at) falseDowns++; // already down (wrongly) when it crashed
        detections.push(Math.max(last + timeoutMs - crash.at, 0));
        c++;
      } else if (next - last > timeoutMs) {
        falseDowns++;
      }
    }
  }
  return { falseDowns, detections, missed: 0 };
}

/**
 * The phi-accrual detector in real node actors sharing one ManualClock: every heartbeat is a
 * `node.heartbeat` event at its time; downs are the actors' own delayed transitions, heard as their
 * `node.down` reports. A node the detector took down comes back with its next heartbeat.
 */
export function phiActors(traces: readonly NodeTrace[], phi: PhiOptions = {}): DetectionResult {
  // One sorted stream of (time, node, kind): kind 0 = heartbeat, 1 = crash.
  const keys: number[] = [];
  traces.forEach((t, n) => {
    for (const b of t.beats) keys.push(b * 256 + n * 2);
    for (const c of t.crashes) keys.push(c.at * 256 + n * 2 + 1);
  });
  const stream = Float64Array.from(keys).sort();
  const clock = new ManualClock();
  const crashedAt: (number | undefined)[] = traces.map(() => undefined);
  const down: boolean[] = traces.map(() => false);
  let falseDowns = 0;
  let missed = 0;
  const detections: number[] = [];
  const actors = traces.map((_, n) => {
    const actor = createActor(nodeMachine, { input: { id: `n${n}`, phi }, clock });
    actor.on('node.down', () => {
      down[n] = true;
      const at = crashedAt[n];
      if (at === undefined) falseDowns++;
      else {
        detections.push(clock.now() - at);
        crashedAt[n] = undefined;
      }
    });
    actor.on('node.alive', () => (down[n] = false));
    actor.start();
    return actor;
  });
  for (const key of stream) {
    const t = Math.floor(key / 256);
    const n = (key % 256) >> 1;
    clock.set(Math.max(t, clock.now()));
    if (key % 2 === 1) {
      if (down[n]) {
        falseDowns++; // it was (wrongly) down already when it died
        detections.push(0);
      } else crashedAt[n] = t;
    } else {
      if (crashedAt[n] !== undefined) {
        missed++; // back before the detector noticed
        crashedAt[n] = undefined;
      }
      actors[n]?.send({ type: 'node.heartbeat', at: t });
    }
  }
  for (const a of actors) a.stop();
  return { falseDowns, detections, missed };
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(Math.ceil((p / 100) * sorted.length) - 1, sorted.length - 1)] as number;
}

/** The detection rows of `npm run bench`. */
export function detectionBench(log: (line: string) => void = () => {}, s: DetectionScenario = FLEET): BenchRow[] {
  const traces = generateTraces(s);
  const crashes = traces.reduce((k, t) => k + t.crashes.length, 0);
  const pauses = traces.reduce((k, t) => k + t.pauses, 0);
  const size = `${s.nodes} nodes x ${s.hours} h, ${crashes} crashes, ${pauses} pauses`;
  log(`detection: ${size}`);
  const started = performance.now();
  const phi = phiActors(traces);
  const actorMs = performance.now() - started;
  const t3 = fixedTimeout(traces, 3000);
  const t30 = fixedTimeout(traces, 30_000);
  const p = (r: DetectionResult, q: number) => Math.round(percentile(r.detections, q));
  const [phi50, phi99, t3p50, t3p99, t30p50, t30p99] = [p(phi, 50), p(phi, 99), p(t3, 50), p(t3, 99), p(t30, 50), p(t30, 99)];
  const beats = traces.reduce((k, t) => k + t.beats.length, 0);
  return [
    {
      name: 'detection false downs / phi in node actors',
      size,
      median: phi.falseDowns,
      unit: 'downs',
      baselineName: 'fixed 3 s timeout',
      baseline: t3.falseDowns,
      target: '0, and <= fixed 3 s timeout',
      pass: phi.falseDowns === 0 && phi.falseDowns <= t3.falseDowns,
    },
    { name: 'detection false downs / fixed 30 s timeout', size, median: t30.falseDowns, unit: 'downs', target: '(reference)', pass: true },
    {
      name: 'detection time p50 / phi in node actors',
      size,
      median: phi50,
      unit: 'ms',
      baselineName: 'fixed 30 s timeout',
      baseline: t30p50,
      ratio: Number((phi50 / t30p50).toPrecision(3)),
      target: '<= fixed 30 s timeout',
      pass: phi50 <= t30p50 && phi.missed === 0,
    },
    {
      name: 'detection time p99 / phi in node actors',
      size,
      median: phi99,
      unit: 'ms',
      baselineName: 'fixed 30 s timeout',
      baseline: t30p99,
      ratio: Number((phi99 / t30p99).toPrecision(3)),
      target: '<= 5000 ms and <= fixed 30 s timeout',
      pass: phi99 <= 5000 && phi99 <= t30p99 && phi.missed === 0,
    },
    { name: 'detection time p50 / fixed 3 s timeout', size, median: t3p50, unit: 'ms', target: '(reference)', pass: true },
    { name: 'detection time p99 / fixed 3 s timeout', size, median: t3p99, unit: 'ms', target: '(reference)', pass: true },
    { name: 'detection heartbeats through node actors', size, median: Math.round((beats / actorMs) * 1000), unit: 'beats/s', target: '(reference)', pass: true },
  ];
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const rows = detectionBench((l) => console.error(l));
  for (const r of rows) console.log(`${r.name} | ${r.median} ${r.unit}${r.baselineName === undefined ? '' : ` vs ${r.baseline} (${r.baselineName})`} | ${r.target} | ${r.pass ? 'PASS' : 'FAIL'}`);
}
