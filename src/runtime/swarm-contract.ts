/**
 * The one Swarm contract: what the local swarm, a replica of a replicated swarm and the
 * orchestrator all offer (docs/design.md, "One Swarm contract"). What differs between them is how
 * a lifecycle command is committed: applied now on the local swarm (a value), or once the owner
 * that orders a replica's commands applies it (a promise). That difference is the type parameter, said once.
 */
import type { AliveCause, DownCause } from '../../machines/node.machine.js';
import type { SwarmEmitted } from '../../machines/swarm.machine.js';
import type { NodeLifecycle } from './node-lifecycle.js';
import type { SwarmState } from '../core/state.js';
import type { AdmitOptions } from '../core/admission-config.js';
import type { Saturation } from './saturation.js';
import type { Rebalance } from './rebalance-hook.js';
import type { NodeProfile, NodeTelemetry, Route } from '../core/types.js';
import type { Growth, Lease, LeasedRoute, ReleaseOutcome, Rescue, Retirement, Revival, RouteOptions, SwarmRequest, SwarmStatus, TelemetrySample } from './types.js';

export type { NodeLifecycle, NodeState } from './node-lifecycle.js';

/** How lifecycle commands commit: `now` (the local swarm), or `log`: ordered by an owner elsewhere, applied when it says (a replica). */
export type CommitMode = 'now' | 'log';

/** A command's result as the mode returns it: the value now, or a promise of it once applied. */
export type Committed<T, M extends CommitMode> = M extends 'now' ? T : Promise<T>;

/** A lifecycle command, as the Swarm statechart takes it (plain data: an owner may carry it elsewhere). */
export type LifecycleCommand =
  | { readonly type: 'node.added'; readonly profile: NodeProfile }
  | { readonly type: 'node.removed'; readonly nodeId: string }
  /** `manual` when no cause is given; `ejected` is granted while under the ejection cap. */
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause?: DownCause }
  /** `manual` when no cause is given. */
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause?: AliveCause };

/** What each command returns. */
export type LifecycleResult<C extends LifecycleCommand> = C extends { type: 'node.added' }
  ? Growth
  : C extends { type: 'node.removed' }
    ? Retirement
    : C extends { type: 'node.down' }
      ? Rescue
      : Revival;

/** The Swarm's API, generic over how lifecycle commands commit. */
export interface SwarmContract<M extends CommitMode = CommitMode> {
  /** The status: the Swarm statechart's state. */
  status(): SwarmStatus;
  /** The plan and telemetry as plain data. */
  state(): SwarmState;
  /** A member's lifecycle, or undefined for a stranger. */
  node(nodeId: string): NodeLifecycle | undefined;
  route(request?: SwarmRequest): Route;
  route(request: SwarmRequest | undefined, options: RouteOptions & { reserve: true }): LeasedRoute;
  route(request?: SwarmRequest, options?: RouteOptions): Route | LeasedRoute;
  release(lease: Lease | string, outcome?: ReleaseOutcome): void;
  inFlight(): number;
  /** A leased route once a copy has room; queued by priority until then (docs/admission.md). */
  admit(request?: SwarmRequest, options?: AdmitOptions): Promise<LeasedRoute>;
  /** How full the swarm and each copy are, and the admission queue. */
  saturation(): Saturation;
  report(nodeId: string, sample: TelemetrySample): NodeTelemetry;
  heartbeat(nodeId: string): void;
  on<T extends SwarmEmitted['type'] | '*'>(type: T, handler: (event: T extends '*' ? SwarmEmitted : Extract<SwarmEmitted, { type: T }>) => void): () => void;
  markDown(nodeId: string): Committed<Rescue, M>;
  /** Quarantines a node whose output disagreed with the majority: down with cause `integrity` until marked alive. */
  quarantine(nodeId: string): Committed<Rescue, M>;
  markAlive(nodeId: string): Committed<Revival, M>;
  addNode(profile: NodeProfile): Committed<Growth, M>;
  removeNode(nodeId: string): Committed<Retirement, M>;
  /** Moves spans where counted-once throughput needs them, make-before-break, with a rebalancer plugged in (docs/rebalance.md). */
  rebalance(options?: unknown): Committed<Rebalance, M>;
}
