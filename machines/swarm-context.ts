import type { ActorRefFrom } from 'xstate';
import type { ExtraLoad } from '../src/core/cost.js';
import { declaredTelemetry } from '../src/core/state.js';
import type { GrowthResult, IdSource, NodeProfile, NodeStates, NodeTelemetry, Pipeline, RescueResult, RetirementResult, SwarmPlan } from '../src/core/types.js';
import { profileIssues } from '../src/core/validate.js';
import type { EjectionOptions, ResolvedEjectionOptions } from '../src/core/ejection.js';
import type { PhiOptions } from '../src/core/phi.js';
import type { AliveCause, DownCause, NodeRecord, nodeMachine } from './node.machine.js';
import type { MoveOrder, PendingMove } from './swarm-moves.js';

/**
 * The Swarm statechart's data: what it is created with, its context, its events and what it
 * decides, with the pure readers the runtime and tests use on a snapshot's context.
 */

/** A node actor of the Swarm. */
export type NodeActorRef = ActorRefFrom<typeof nodeMachine>;

/** The system id of a member's node actor: the Swarm and the runtime find it by this key. */
export function nodeKey(nodeId: string): string {
  return `node:${nodeId}`;
}

/** The rescue `node.down` computes before the node is marked (the runtime adds the status). */
export type PendingRescue = RescueResult;

/**
 * What the last event the Swarm took decided, read from the snapshot after the event:
 * `rescue` after `node.down`, `revival` after `node.alive`, `growth` after `node.added`,
 * `retirement` after `node.removed` (both with the plan they adopted), `refused` when the
 * telomerase proposed a plan that does not validate (nothing else changed).
 */
export type SwarmOutcome =
  | ({ readonly kind: 'rescue' } & PendingRescue)
  | { readonly kind: 'revival'; readonly nodeId: string }
  | ({ readonly kind: 'growth'; readonly nodeId: string; readonly profile: NodeProfile; readonly plan: SwarmPlan } & GrowthResult)
  | ({ readonly kind: 'retirement'; readonly nodeId: string; readonly plan: SwarmPlan } & RetirementResult)
  | { readonly kind: 'refused'; readonly event: 'node.added' | 'node.removed'; readonly nodeId: string; readonly reason: string };

/**
 * The runtime's per-model routing index, for the default request: what a model serves now and
 * the copy a failover of a node would take, each chosen exactly as the scan would choose it.
 */
export interface RescueIndex {
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
  bestWithout(modelId: string, nodeId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
  /** True while a node is suspect: the index then ranks by suspicion, and a rescue, blind to it, scans. */
  doubted?(): boolean;
}

/**
 * What the Swarm's decisions read besides its context: the runtime's live telemetry and in-flight
 * load, its routing index, and where pipeline ids come from. Injected with `swarmMachine.provide`
 * (`provideSwarm`), never kept in the context, so a snapshot is data. A machine driven alone reads
 * each member's declared telemetry, no in-flight load, scans, and mints ids from its seeded counter.
 */
export interface SwarmReaders {
  /** The telemetry costs are read from (latency, load, score); liveness is always the machine's own. */
  readonly telemetry?: () => NodeStates;
  /** In-flight load per node. */
  readonly inflight?: () => ExtraLoad;
  /** The routing index over the same telemetry and load; without it, rescues scan. */
  readonly index?: RescueIndex;
  /** Mints pipeline ids instead of the context's seeded counter. */
  readonly ids?: IdSource;
}

/**
 * What the Swarm actor is created with: data only. Built from public functions alone:
 * `{ plan: planSwarm(profiles, config), profiles }`.
 */
export interface SwarmInput {
  readonly plan: SwarmPlan;
  /** Every member, plan nodes and spares. */
  readonly profiles: readonly NodeProfile[];
  /** Members that start down (marked by hand); every other member starts alive. */
  readonly down?: readonly string[];
  /** @defaultValue 0.3 */
  readonly alpha?: number;
  /** @defaultValue true */
  readonly allowDegraded?: boolean;
  /** Seeds the pipeline ids the telomerase mints, from a state kept in context. @defaultValue 0 */
  readonly idSeed?: number;
  /** Failure detector settings of every node actor (docs/detection.md). @defaultValue Akka's */
  readonly failureDetector?: PhiOptions;
  /** Passive ejection settings of every node actor and the swarm's cap. */
  readonly ejection?: EjectionOptions;
  /** A persisted swarm's state to continue from (docs/persistence.md); `idSeed` carries its id counter. */
  readonly restore?: SwarmRestore;
}

/** What a restored Swarm starts with besides its plan, members and id counter. */
export interface SwarmRestore {
  /** The members that are down, and why; every other member is alive. */
  readonly down: ReadonlyMap<string, DownCause>;
  /** Node actors' ejection records (a member absent here has none). */
  readonly records: ReadonlyMap<string, NodeRecord>;
  /** The last decision taken. */
  readonly outcome: SwarmOutcome | undefined;
}

/** One member of the swarm: its profile and its slot in `alive` (its node actor is found by id: `nodeActorOf`). */
export interface Member {
  readonly profile: NodeProfile;
  readonly slot: number;
}

/** The Swarm's context. Counters make every guard O(1). */
export interface SwarmContext {
  readonly plan: SwarmPlan;
  /** Every member by id, in the order they joined. */
  readonly members: ReadonlyMap<string, Member>;
  /**
   * Alive (1) or down (0) per slot: the parent's own liveness of its children, the one the rescue
   * and the telomerase see. A byte array, because a mark copies it (copy-on-write keeps every
   * snapshot immutable): 8,000 bytes copy in about a microsecond.
   */
  readonly alive: Uint8Array;
  /** Slots of removed members, reused by the next newcomers. */
  readonly freeSlots: readonly number[];
  /** The nodes the current plan uses. */
  readonly inPlan: ReadonlySet<string>;
  readonly aliveCount: number;
  /** Nodes of the current plan that are down. */
  readonly planDownCount: number;
  readonly alpha: number;
  readonly allowDegraded: boolean;
  /** Each model's wanted number of copies, from the plan's models. */
  readonly wanted: ReadonlyMap<string, number>;
  /** The seeded id generator's state (unused when ids are injected: {@link SwarmReaders.ids}). */
  readonly idState: number;
  /** What the last event taken decided. */
  readonly outcome: SwarmOutcome | undefined;
  /** Nodes down by ejection now, at most `ejection.maxEjectedShare` of the members. */
  readonly ejected: ReadonlySet<string>;
  /** Nodes the failure detector took down (a manual mark turns them manual; a heartbeat brings them back). */
  readonly detected: ReadonlySet<string>;
  /**
   * Nodes quarantined for a wrong output (cause `integrity`): only `node.alive` brings them back;
   * a manual mark leaves the cause. Absent in a snapshot saved before the cause existed (read as empty).
   */
  readonly quarantined?: ReadonlySet<string>;
  readonly failureDetector: PhiOptions | undefined;
  readonly ejection: ResolvedEjectionOptions;
  /**
   * The moves of a rebalance under way, by move id, each in its phase (`machines/swarm-moves.ts`,
   * docs/rebalance.md "Make-before-break"). Absent when none is pending.
   */
  readonly moves?: ReadonlyMap<string, PendingMove>;
}

/** The swarm's status while it runs, from its counters: failed ⇔ none alive; degraded ⇔ a plan node down. */
export type LiveStatus = 'healthy' | 'degraded' | 'failed';

/**
 * What the Swarm emits (XState `emit`) for the orchestrator: a node suspected by its detector, a
 * node down (with the rescue computed before the mark, and why), a node back, and every status
 * change. The runtime re-exposes them as `swarm.on(type, handler)`.
 */
export type SwarmEmitted =
  | { readonly type: 'node.suspected'; readonly nodeId: string }
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause: DownCause; readonly rescue: PendingRescue & { readonly status: LiveStatus } }
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause: AliveCause }
  | { readonly type: 'status.changed'; readonly status: LiveStatus | 'stopped' }
  /** A node joined: the telomerase's decision, with the plan adopted. */
  | { readonly type: 'node.joined'; readonly nodeId: string; readonly profile: NodeProfile; readonly plan: SwarmPlan }
  /** A node left: its layers relocated, with the plan adopted. */
  | { readonly type: 'node.left'; readonly nodeId: string; readonly plan: SwarmPlan }
  /** A suspected node answered again: no longer suspect. */
  | { readonly type: 'node.cleared'; readonly nodeId: string }
  /**
   * A node actor marked a node on its own while the Swarm's policy defers such marks
   * (`defersOwnMarks`): the owner decides when it applies, by sending it back `decided`.
   */
  | { readonly type: 'node.mark'; readonly mark: OwnMark }
  /** A rebalance began: its moves pending, with the plan adopted (a break-first move's old copies left it). */
  | { readonly type: 'moves.begun'; readonly moveIds: readonly string[]; readonly plan: SwarmPlan }
  /** A move's spans are loaded: its new copies joined the plan (routable now); make-before-break, its old copies left it and drain. */
  | { readonly type: 'copy.formed'; readonly moveId: string; readonly plan: SwarmPlan }
  /** A move finished. */
  | { readonly type: 'move.done'; readonly moveId: string }
  /** A move was given up (a loading node lost, its copies changed); the plan keeps what it had. */
  | { readonly type: 'move.aborted'; readonly moveId: string; readonly reason: string };

/** A mark a node actor makes on its own (its detector, its ejection, a heartbeat or probation). */
export type OwnMark =
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause: 'detector' }
  | { readonly type: 'node.eject'; readonly nodeId: string }
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause: 'heartbeat' | 'probation' };

/** The events of the Swarm statechart. */
export type SwarmEvent =
  /**
   * A node down: `manual` (the orchestrator; the default), `detector` (its node actor's report)
   * or `integrity` (quarantined for a wrong output, by the orchestrator's verification).
   * `decided`: an own mark the owner has decided to apply (see `node.mark`).
   */
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause?: 'manual' | 'detector' | 'integrity'; readonly decided?: boolean }
  /** A node back: `manual` (the default), or by itself (`heartbeat`, `probation`). */
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause?: AliveCause; readonly decided?: boolean }
  /** A node actor's detector suspects it. */
  | { readonly type: 'node.suspected'; readonly nodeId: string }
  /** A suspected node actor heard from its node again. */
  | { readonly type: 'node.cleared'; readonly nodeId: string }
  /** A node actor asks to be ejected for its failures; granted while under the cap. */
  | { readonly type: 'node.eject'; readonly nodeId: string; readonly decided?: boolean }
  | { readonly type: 'node.added'; readonly profile: NodeProfile }
  | { readonly type: 'node.removed'; readonly nodeId: string }
  | { readonly type: 'swarm.stop' }
  /** Begins a rebalance's moves (taken only when none is pending and every move fits the plan: {@link beginIssue}). */
  | { readonly type: 'rebalance.begin'; readonly moves: readonly MoveOrder[] }
  /** A node loaded its span for a pending move. */
  | { readonly type: 'span.loaded'; readonly moveId: string; readonly nodeId: string }
  /** A node could not load its span for a pending move (its loader failed): the move is aborted. */
  | { readonly type: 'span.failed'; readonly moveId: string; readonly nodeId: string; readonly reason: string }
  /** The old copies of a draining move have no request in flight any more. */
  | { readonly type: 'copy.drained'; readonly moveId: string };

/** Whether `nodeId` is a member of the swarm. */
export function isMember(context: Pick<SwarmContext, 'members'>, nodeId: string): boolean {
  return context.members.has(nodeId);
}

/** Whether a member node is alive in the Swarm's own liveness (false for a stranger). */
export function isAliveIn(context: Pick<SwarmContext, 'members' | 'alive'>, nodeId: string): boolean {
  const m = context.members.get(nodeId);
  return m !== undefined && context.alive[m.slot] === 1;
}

/** Why a member is down (`detector`, `ejected`, `integrity`, else `manual`), from the context; undefined while alive or for a stranger. */
export function downCauseOf(context: Pick<SwarmContext, 'members' | 'alive' | 'detected' | 'ejected' | 'quarantined'>, nodeId: string): DownCause | undefined {
  const m = context.members.get(nodeId);
  if (m === undefined || context.alive[m.slot] === 1) return undefined;
  return context.detected.has(nodeId) ? 'detector' : context.ejected.has(nodeId) ? 'ejected' : context.quarantined?.has(nodeId) === true ? 'integrity' : 'manual';
}

/** Every member's liveness, in join order. */
export function aliveMembers(context: Pick<SwarmContext, 'members' | 'alive'>): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const [id, m] of context.members) out.set(id, context.alive[m.slot] === 1);
  return out;
}

/**
 * Why `profile` cannot join: `InvalidInput` for a bad profile, `DuplicateNode` for a member's id;
 * undefined when it can. The `node.added` guard and the runtime's error both come from here.
 */
export function joinIssue(context: Pick<SwarmContext, 'members'>, profile: NodeProfile): { readonly code: 'InvalidInput' | 'DuplicateNode'; readonly message: string } | undefined {
  const issues = profileIssues([profile]);
  if (issues.length > 0) return { code: 'InvalidInput', message: `cannot add node: ${issues.map((i) => i.message).join('; ')}` };
  if (context.members.has(profile.id)) return { code: 'DuplicateNode', message: `node "${profile.id}" is already in the swarm; remove it first or use another id` };
  return undefined;
}

const COLD: NodeTelemetry = Object.freeze({ alive: true, samples: 0 });

/** A node's entry of a telemetry table, own keys only (an id such as `toString` is no method). */
export function entryOf(table: NodeStates, nodeId: string): NodeTelemetry | undefined {
  return Object.prototype.hasOwnProperty.call(table, nodeId) ? table[nodeId] : undefined;
}

/**
 * The telemetry the core sees: each member's measured values with the machine's own liveness,
 * without suspicion (a routing preference, not a loss: docs/detection.md).
 * A null-prototype record, so an id such as `__proto__` is an ordinary key.
 */
export function livenessView(context: Pick<SwarmContext, 'members' | 'alive'>, telemetry: NodeStates, extra?: NodeProfile): NodeStates {
  const view: Record<string, NodeTelemetry> = Object.create(null) as Record<string, NodeTelemetry>;
  for (const [id, m] of context.members) {
    const t = entryOf(telemetry, id) ?? COLD;
    const alive = context.alive[m.slot] === 1;
    if (t.alive === alive && t.suspect !== true) view[id] = t;
    else {
      const { suspect: _doubt, ...measured } = t;
      view[id] = { ...measured, alive };
    }
  }
  if (extra !== undefined) view[extra.id] = declaredTelemetry(extra);
  return view;
}
