/**
 * The discrete-event engine: requests run through the stages of the copy their router chose,
 * each node serving `slots` requests at once from a FIFO queue, with a delay on every hop, a
 * client timeout, and a telemetry monitor that samples every node every `periodMs` and
 * delivers the samples `delayMs` later. Virtual time only: nothing sleeps.
 */
import type { TelemetrySample } from '../../runtime/types.js';
import { EventQueue } from './event-queue.js';
import type { EngineView, Pick, Router } from './router.js';
import type { BuiltTopology, SimStage } from './load-topology.js';
import type { Workload } from './workloads.js';

/** The telemetry monitor. */
export interface MonitorOptions {
  /** Sampling period, ms. @defaultValue 100 */
  readonly periodMs: number;
  /** Delay before a sample reaches the routers, ms. @defaultValue 50 */
  readonly delayMs: number;
}

/** How a request ended. */
export const OUTCOME = { ok: 0, timeout: 1, error: 2, unroutable: 3 } as const;

/** Everything the engine recorded, one entry per arrival (in arrival order). */
export interface EngineTrace {
  /** Latency as the client saw it (the timeout for a timeout). */
  readonly latency: Float64Array;
  /** One of {@link OUTCOME}. */
  readonly outcome: Uint8Array;
  /** The copy chosen (-1 when unroutable). */
  readonly pipeline: Int16Array;
  /** 1 when the route used a node that was dead when the request was sent. */
  readonly sentToDead: Uint8Array;
}

/** A mutable virtual clock the engine moves and routers read. */
export interface SimClock {
  t: number;
  now(): number;
}

/** A fresh virtual clock at 0. */
export function simClock(): SimClock {
  return {
    t: 0,
    now() {
      return this.t;
    },
  };
}

/** What one engine run needs. */
export interface EngineOptions {
  readonly topology: BuiltTopology;
  readonly workload: Workload;
  /** Builds one router per `workload.routers`; the view is the engine's truth, for the oracle only. */
  readonly routers: (view: EngineView) => readonly Router[];
  readonly clock: SimClock;
  /** @defaultValue 2000 */
  readonly timeoutMs?: number;
  readonly monitor?: Partial<MonitorOptions>;
}

interface Req {
  readonly i: number;
  readonly t0: number;
  readonly size: number;
  readonly router: Router;
  readonly pick: Pick;
  stage: number;
  enteredAt: number;
  done: boolean;
}

interface NodeRun {
  readonly slots: number;
  busy: number;
  readonly queue: Req[];
  head: number;
  readonly inService: Set<Req>;
  alive: boolean;
  failFast: boolean;
  epoch: number;
  speed: number;
  slowFactor: number;
  coldUntil: number;
  coldFactor: number;
  sojournSum: number;
  sojournCount: number;
  /** ∫ busy slots dt since the last sample, and when `busy` last changed. */
  busyArea: number;
  busySince: number;
}

type Ev =
  | { readonly k: 'arrive'; readonly i: number }
  | { readonly k: 'enter'; readonly r: Req }
  | { readonly k: 'served'; readonly r: Req; readonly node: number; readonly epoch: number }
  | { readonly k: 'respond'; readonly r: Req; readonly ok: boolean }
  | { readonly k: 'timeout'; readonly r: Req }
  | { readonly k: 'sample' }
  | { readonly k: 'deliver'; readonly samples: readonly (TelemetrySample | undefined)[] }
  | { readonly k: 'disrupt'; readonly d: number }
  | { readonly k: 'warm'; readonly node: number };

/** Runs one workload through the routers; returns what every request saw. */
export function runEngine(options: EngineOptions): EngineTrace {
  const { topology, workload, clock } = options;
  const timeoutMs = options.timeoutMs ?? 2000;
  const periodMs = options.monitor?.periodMs ?? 100;
  const delayMs = options.monitor?.delayMs ?? 50;
  const hopMs = topology.spec.hopMs;
  const msPerLayer = topology.spec.msPerLayer;
  const n = workload.arrivals.length;
  const trace: EngineTrace = { latency: new Float64Array(n), outcome: new Uint8Array(n), pipeline: new Int16Array(n).fill(-1), sentToDead: new Uint8Array(n) };
  const nodes: NodeRun[] = topology.nodes.map((node) => ({
    slots: node.slots, busy: 0, queue: [], head: 0, inService: new Set(), alive: true, failFast: false, epoch: 0,
    speed: 1, slowFactor: 1, coldUntil: -Infinity, coldFactor: 1, sojournSum: 0, sojournCount: 0, busyArea: 0, busySince: 0,
  }));
  const nodeOf = (i: number): NodeRun => nodes[i] as NodeRun;
  // Requests routed through a node and not yet served there (queued, in service, or on their way).
  const committed = new Int32Array(nodes.length);
  const q = new EventQueue<Ev>();
  let routingSize = 0; // the size of the request being routed, for the oracles' view
  const lastArrival = workload.arrivals[n - 1]?.time ?? 0;
  let open = 0; // requests not finished yet

  for (let i = 0; i < n; i++) q.push((workload.arrivals[i] as { time: number }).time, { k: 'arrive', i });
  workload.disruptions.forEach((d, index) => {
    q.push(d.at, { k: 'disrupt', d: index });
    if (d.kind === 'slow') q.push(d.until, { k: 'disrupt', d: -1 - index });
  });
  q.push(periodMs, { k: 'sample' });
  // Previous health the monitor delivered, per node (routers start knowing every node alive).
  const delivered = nodes.map(() => true);

  const view: EngineView = {
    outstanding: (node) => committed[node] ?? 0,
    speed: (node) => nodeOf(node).speed,
    alive: (node) => nodeOf(node).alive,
    requestSize: () => routingSize,
  };
  const routers = options.routers(view);

  const finish = (r: Req, outcome: number, latency: number): void => {
    if (r.done) return;
    r.done = true;
    open--;
    trace.latency[r.i] = latency;
    trace.outcome[r.i] = outcome;
    r.router.done(clock.t, r.pick, { latencyMs: latency, ok: outcome === OUTCOME.ok });
  };

  const setBusy = (s: NodeRun, busy: number): void => {
    s.busyArea += s.busy * (clock.t - s.busySince);
    s.busySince = clock.t;
    s.busy = busy;
  };

  const startService = (r: Req, ni: number, s: NodeRun): void => {
    setBusy(s, s.busy + 1);
    s.inService.add(r);
    const stage = r.pick.stages[r.stage] as SimStage;
    const ms = (r.size * stage.layers * msPerLayer) / (topology.nodes[ni] as { score: number }).score / s.speed;
    q.push(clock.t + ms, { k: 'served', r, node: ni, epoch: s.epoch });
  };

  const enter = (r: Req): void => {
    const stage = r.pick.stages[r.stage] as SimStage;
    const s = nodeOf(stage.node);
    if (!s.alive) {
      abandon(r);
      if (s.failFast) q.push(clock.t + hopMs, { k: 'respond', r, ok: false });
      return; // black hole: the client times out
    }
    r.enteredAt = clock.t;
    if (s.busy < s.slots) startService(r, stage.node, s);
    else s.queue.push(r);
  };

  const refreshSpeed = (s: NodeRun): void => {
    s.speed = s.slowFactor * (clock.t < s.coldUntil ? s.coldFactor : 1);
  };

  // Like a node exporter: utilisation over the last period (busy slot-time / slot-time, in
  // [0, 1]) and the mean time requests spent at the node (queue + service) over that period.
  const sample = (): (TelemetrySample | undefined)[] =>
    nodes.map((s) => {
      setBusy(s, s.busy);
      const load = Math.min(s.busyArea / (s.slots * periodMs), 1);
      const latencyMs = s.sojournCount > 0 ? s.sojournSum / s.sojournCount : undefined;
      s.busyArea = 0;
      s.sojournSum = 0;
      s.sojournCount = 0;
      if (!s.alive) return undefined;
      return latencyMs === undefined ? { load } : { load, latencyMs };
    });

  while (q.size > 0) {
    const t = q.peekTime();
    const ev = q.pop() as Ev;
    clock.t = t;
    switch (ev.k) {
      case 'arrive': {
        const a = workload.arrivals[ev.i] as Workload['arrivals'][number];
        const router = routers[a.router] as Router;
        routingSize = a.size;
        const pick = router.pick(t);
        routingSize = 0;
        if (pick === undefined) {
          trace.latency[ev.i] = 0;
          trace.outcome[ev.i] = OUTCOME.unroutable;
          break;
        }
        trace.pipeline[ev.i] = pick.pipeline;
        if (pick.stages.some((st) => !nodeOf(st.node).alive)) trace.sentToDead[ev.i] = 1;
        const r: Req = { i: ev.i, t0: t, size: a.size, router, pick, stage: 0, enteredAt: t, done: false };
        for (const st of pick.stages) committed[st.node] = (committed[st.node] ?? 0) + 1;
        open++;
        q.push(t + hopMs, { k: 'enter', r });
        q.push(t + timeoutMs, { k: 'timeout', r });
        break;
      }
      case 'enter':
        enter(ev.r);
        break;
      case 'served': {
        const s = nodeOf(ev.node);
        if (ev.epoch !== s.epoch) break; // the node died meanwhile
        const r = ev.r;
        setBusy(s, s.busy - 1);
        s.inService.delete(r);
        s.sojournSum += t - r.enteredAt;
        s.sojournCount++;
        committed[ev.node] = (committed[ev.node] ?? 0) - 1;
        r.stage++;
        if (r.stage < r.pick.stages.length) q.push(t + hopMs, { k: 'enter', r });
        else q.push(t + hopMs, { k: 'respond', r, ok: true });
        if (s.head < s.queue.length) {
          const next = s.queue[s.head++] as Req;
          if (s.head > 1024 && s.head * 2 > s.queue.length) {
            s.queue.splice(0, s.head);
            s.head = 0;
          }
          startService(next, ev.node, s);
        }
        break;
      }
      case 'respond':
        finish(ev.r, ev.ok ? OUTCOME.ok : OUTCOME.error, t - ev.r.t0);
        break;
      case 'timeout':
        finish(ev.r, OUTCOME.timeout, timeoutMs);
        break;
      case 'sample':
        q.push(t + delayMs, { k: 'deliver', samples: sample() });
        if (t < lastArrival || open > 0) q.push(t + periodMs, { k: 'sample' });
        break;
      case 'deliver':
        ev.samples.forEach((smp, ni) => {
          const id = (topology.nodes[ni] as { id: string }).id;
          const alive = smp !== undefined;
          if (alive !== delivered[ni]) {
            delivered[ni] = alive;
            for (const router of routers) router.health(t, id, alive);
          }
          if (smp !== undefined) for (const router of routers) router.telemetry(t, id, smp);
        });
        break;
      case 'disrupt': {
        const d = workload.disruptions[ev.d >= 0 ? ev.d : -1 - ev.d] as Workload['disruptions'][number];
        const ni = topology.nodeIndex.get(d.kind === 'slow' ? '' : d.node);
        if (d.kind === 'slow') {
          for (const id of d.nodes) {
            const s = nodeOf(topology.nodeIndex.get(id) ?? -1);
            s.slowFactor = ev.d >= 0 ? d.factor : 1;
            refreshSpeed(s);
          }
        } else if (ni !== undefined && d.kind === 'die') {
          kill(nodeOf(ni), d.mode === 'fail-fast');
        } else if (ni !== undefined && d.kind === 'revive') {
          const s = nodeOf(ni);
          s.alive = true;
          s.failFast = false;
          s.coldUntil = t + d.coldMs;
          s.coldFactor = d.coldFactor;
          refreshSpeed(s);
          q.push(s.coldUntil, { k: 'warm', node: ni });
        }
        break;
      }
      case 'warm':
        refreshSpeed(nodeOf(ev.node));
        break;
    }
  }
  return trace;

  /** The request will not be served any further: it no longer counts on its remaining nodes. */
  function abandon(r: Req): void {
    for (let k = r.stage; k < r.pick.stages.length; k++) {
      const node = (r.pick.stages[k] as SimStage).node;
      committed[node] = (committed[node] ?? 0) - 1;
    }
    r.stage = r.pick.stages.length;
  }

  function kill(s: NodeRun, failFast: boolean): void {
    s.alive = false;
    s.failFast = failFast;
    s.epoch++;
    const lost = [...s.inService, ...s.queue.slice(s.head)];
    s.inService.clear();
    s.queue.length = 0;
    s.head = 0;
    setBusy(s, 0);
    for (const r of lost) abandon(r);
    if (failFast) for (const r of lost) q.push(clock.t + hopMs, { k: 'respond', r, ok: false });
  }
}
