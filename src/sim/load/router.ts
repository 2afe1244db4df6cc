/**
 * What every load-balancing policy implements: one router instance per client-side router, fed
 * with the same telemetry and health as every other policy.
 */
import type { TelemetrySample } from '../../runtime/types.js';
import type { Rng } from './rng.js';
import type { BuiltTopology, SimStage } from './load-topology.js';

/** The copy a router chose, and the stages the request will run through. */
export interface Pick {
  readonly pipeline: number;
  readonly stages: readonly SimStage[];
  /** Whatever the router needs back on completion (a lease, a pending counter...). */
  readonly token?: unknown;
}

/** How a request ended, as its client saw it. */
export interface Outcome {
  readonly latencyMs: number;
  /** False for a timeout or an error. */
  readonly ok: boolean;
}

/** The instantaneous truth, for the oracle reference only; real policies never read it. */
export interface EngineView {
  /** Requests routed through a node and not yet served there (queued, in service or on their way). */
  outstanding(node: number): number;
  /** Current speed factor of a node (1 = nominal). */
  speed(node: number): number;
  /** Whether the node is really alive now. */
  alive(node: number): boolean;
  /** The true size (work multiplier) of the request being routed now; 0 outside `pick`. */
  requestSize(): number;
}

/** One client-side router running one policy. */
export interface Router {
  /** Chooses a copy for a request arriving now, or undefined when it knows of no live copy. */
  pick(now: number): Pick | undefined;
  /** The request's response (or timeout) reached the client. */
  done(now: number, pick: Pick, outcome: Outcome): void;
  /** A telemetry sample of one node from the monitor (late by the monitor delay). */
  telemetry(now: number, nodeId: string, sample: TelemetrySample): void;
  /** The monitor saw a node go down or come back (late by the monitor delay). */
  health(now: number, nodeId: string, alive: boolean): void;
}

/** What a policy is built with. */
export interface RouterContext {
  readonly topology: BuiltTopology;
  /** This router's own random stream. */
  readonly rng: Rng;
  /** The virtual clock (ms). */
  readonly clock: { now(): number };
  /** Which of the workload's routers this is. */
  readonly routerIndex: number;
  /** A seed for anything the policy builds (ids). */
  readonly seed: number;
  readonly view: EngineView;
}

/** A load-balancing policy: a name and a router factory. */
export interface Policy {
  /** Short id used in tables and JSON: `p2c-peak-ewma`. */
  readonly id: string;
  /** What it is, in a few words. */
  readonly label: string;
  /** True for reference policies that read the engine's truth (not a real option). */
  readonly oracle?: boolean;
  create(context: RouterContext): Router;
}

/**
 * The live copies as one router knows them: a copy is live while the monitor has reported none
 * of its nodes down. Shared by the baselines.
 */
export class HealthView {
  private readonly downNodes = new Set<string>();
  private liveCache: number[] | undefined;
  constructor(private readonly topology: BuiltTopology) {}

  health(nodeId: string, alive: boolean): void {
    const changed = alive ? this.downNodes.delete(nodeId) : !this.downNodes.has(nodeId);
    if (!alive) this.downNodes.add(nodeId);
    if (changed) this.liveCache = undefined;
  }

  /** Indexes of the copies with no node known down, ascending. */
  live(): readonly number[] {
    if (this.liveCache === undefined) {
      this.liveCache = this.topology.pipelines.filter((p) => p.stages.every((s) => !this.downNodes.has(s.nodeId))).map((p) => p.index);
    }
    return this.liveCache;
  }
}
