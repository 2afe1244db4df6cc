/**
 * A Swarm reached through something else: a replica of a replicated swarm, whose lifecycle
 * commands an owner elsewhere commits first. Every read goes to the local Swarm it holds, written once here;
 * what differs is the one hook a front overrides, `[kCommit]`, as undici's pool-base leaves
 * `kGetDispatcher` to each pool (docs/design.md, "One Swarm contract").
 */
import type { SwarmEmitted } from '../../machines/swarm.machine.js';
import type { SwarmState } from '../core/state.js';
import type { NodeProfile, NodeTelemetry, Route } from '../core/types.js';
import type { Swarm } from './swarm.js';
import type { AdmitOptions } from '../core/admission-config.js';
import type { Saturation } from './saturation.js';
import type { Rebalance } from './rebalance-hook.js';
import type { CommitMode, Committed, LifecycleCommand, LifecycleResult, NodeLifecycle, SwarmContract } from './swarm-contract.js';
import type { Growth, Lease, LeasedRoute, ReleaseOutcome, Rescue, Retirement, Revival, RouteOptions, SwarmRequest, SwarmStatus, TelemetrySample } from './types.js';

/** The local Swarm a front reads from (throws when it has none yet). */
export const kLocal: unique symbol = Symbol('hecate-swarm.local');
/** Commits a lifecycle command: the hook a front overrides. */
export const kCommit: unique symbol = Symbol('hecate-swarm.commit');

export abstract class SwarmFront<M extends CommitMode> implements SwarmContract<M> {
  /** The local Swarm every read goes to. */
  protected abstract [kLocal](): Swarm;
  /** Commits one lifecycle command, resolving (or returning) what applying it returned. */
  protected abstract [kCommit]<C extends LifecycleCommand>(command: C): Committed<LifecycleResult<C>, M>;

  status(): SwarmStatus {
    return this[kLocal]().status();
  }

  state(): SwarmState {
    return this[kLocal]().state();
  }

  node(nodeId: string): NodeLifecycle | undefined {
    return this[kLocal]().node(nodeId);
  }

  route(request?: SwarmRequest): Route;
  route(request: SwarmRequest | undefined, options: RouteOptions & { reserve: true }): LeasedRoute;
  route(request?: SwarmRequest, options?: RouteOptions): Route | LeasedRoute;
  route(request?: SwarmRequest, options?: RouteOptions): Route | LeasedRoute {
    return this[kLocal]().route(request, options);
  }

  release(lease: Lease | string, outcome?: ReleaseOutcome): void {
    this[kLocal]().release(lease, outcome);
  }

  inFlight(): number {
    return this[kLocal]().inFlight();
  }

  admit(request?: SwarmRequest, options?: AdmitOptions): Promise<LeasedRoute> {
    try {
      return this[kLocal]().admit(request, options);
    } catch (error) {
      return Promise.reject(error as Error); // no local swarm yet
    }
  }

  saturation(): Saturation {
    return this[kLocal]().saturation();
  }

  report(nodeId: string, sample: TelemetrySample): NodeTelemetry {
    return this[kLocal]().report(nodeId, sample);
  }

  heartbeat(nodeId: string): void {
    this[kLocal]().heartbeat(nodeId);
  }

  on<T extends SwarmEmitted['type'] | '*'>(type: T, handler: (event: T extends '*' ? SwarmEmitted : Extract<SwarmEmitted, { type: T }>) => void): () => void {
    return this[kLocal]().on(type, handler);
  }

  markDown(nodeId: string): Committed<Rescue, M> {
    return this[kCommit]({ type: 'node.down', nodeId });
  }

  quarantine(nodeId: string): Committed<Rescue, M> {
    return this[kCommit]({ type: 'node.down', nodeId, cause: 'integrity' });
  }

  markAlive(nodeId: string): Committed<Revival, M> {
    return this[kCommit]({ type: 'node.alive', nodeId });
  }

  addNode(profile: NodeProfile): Committed<Growth, M> {
    return this[kCommit]({ type: 'node.added', profile });
  }

  removeNode(nodeId: string): Committed<Retirement, M> {
    return this[kCommit]({ type: 'node.removed', nodeId });
  }

  /** Decides and commits a rebalance as the front commits (docs/rebalance.md). */
  abstract rebalance(options?: unknown): Committed<Rebalance, M>;
}
