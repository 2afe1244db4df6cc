import type { ActorRefFrom } from 'xstate';
import type { ExtraLoad } from '../src/core/cost.js';
import { declaredTelemetry } from '../src/core/state.js';
import type { GrowthRole, IdSource, NodeProfile, NodeStates, NodeTelemetry, Pipeline, Recovery, Relocation, SwarmPlan } from '../src/core/types.js';
import { profileIssues } from '../src/core/validate.js';
import type { EjectionOptions, ResolvedEjectionOptions } from '../src/core/ejection.js';
import type { PhiOptions } from '../src/core/phi.js';
import type { AliveCause, DownCause, NodeRecord, nodeMachine } from './node.machine.js';

/**
 * The Swarm statechart's data: what it is created with, its context, its events and what it
 * decides, with the pure readers the runtime and tests use on a snapshot's context.
 */

/** A node actor of the Swarm. */
export type NodeActorRef = ActorRefFrom<typeof nodeMachine>;

/** The rescue `node.down` computes before the node is marked (the runtime adds the status). */
export interface PendingRescue {
  readonly nodeId: string;
  readonly recoveries: readonly Recovery[];
  readonly unrecoverable: readonly string[];
}

/**
 * What the last event the Swarm took decided, read from the snapshot after the event:
 * `rescue` after `node.down`, `revival` after `node.alive`, `growth` after `node.added`,
 * `retirement` after `node.removed` (both with the plan they adopted), `refused` when the
 * telomerase proposed a plan that does not validate (nothing else changed).
 */
export type SwarmOutcome =
  | ({ readonly kind: 'rescue' } & PendingRescue)
  | { readonly kind: 'revival'; readonly nodeId: string }
  | {
      readonly kind: 'growth';
      readonly nodeId: string;
      readonly profile: NodeProfile;
      readonly role: GrowthRole;
      readonly modelId?: string;
      readonly pipelines: readonly string[];
      readonly replaced: readonly string[];
      readonly plan: SwarmPlan;
    }
  | { readonly kind: 'retirement'; readonly nodeId: string; readonly relocated: readonly Relocation[]; readonly dropped: readonly string[]; readonly plan: SwarmPlan }
  | { readonly kind: 'refused'; readonly event: 'node.added' | 'node.removed'; readonly nodeId: string; readonly reason: string };

/**
 * The runtime's per-model routing index, for the default request: what a model serves now and
 * the copy a failover of a node would take, each chosen exactly as the scan would choose it.
 */
export interface RescueIndex {
  best(modelId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
  bestWithout(modelId: string, nodeId: string): { readonly pipeline: Pipeline; readonly chain: number } | undefined;
}

/**
 * What the Swarm actor is created with. Built from public functions alone:
 * `{ plan: planSwarm(profiles, config), profiles, telemetry: SwarmState.fromProfiles(plan, profiles).nodes }`.
 */
export interface SwarmInput {
  readonly plan: SwarmPlan;
  /** Every member, plan nodes and spares. */
  readonly profiles: readonly NodeProfile[];
  /**
   * The telemetry costs are read from (latency, load, score). A node marked `alive: false` here
   * starts down; after that, liveness is the machine's own. The runtime passes its live table.
   * @defaultValue each profile's declared telemetry
   */
  readonly telemetry?: NodeStates;
  /** @defaultValue 0.3 */
  readonly alpha?: number;
  /** @defaultValue true */
  readonly allowDegraded?: boolean;
  /** Seeds the pipeline ids the telomerase mints, from a state kept in context. @defaultValue 0 */
  readonly idSeed?: number;
  /** Mints pipeline ids instead of `idSeed` (not reproducible under pure `transition()` unless it is). */
  readonly idSource?: IdSource;
  /** In-flight load per node, read like `telemetry`. */
  readonly inflight?: ExtraLoad;
  /** The routing index over `telemetry` and `inflight`; without it, rescues scan. */
  readonly index?: RescueIndex;
  /** Failure detector settings of every node actor (docs/detection.md). @defaultValue Akka's */
  readonly failureDetector?: PhiOptions;
  /** Passive ejection settings of every node actor and the swarm's cap. */
  readonly ejection?: EjectionOptions;
  /**
   * A replica of a replicated swarm (docs/replication.md): the marks its node actors make on
   * their own (a detector down, an ejection, a heartbeat or probation revival) are emitted as
   * `node.proposed` instead of applied; they apply when they come back from the log, `logged`.
   * @defaultValue false
   */
  readonly propose?: boolean;
  /** A persisted swarm's state to continue from (`Swarm.persist`; docs/persistence.md); `idSeed` carries its id counter. */
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

/** One member of the swarm: its profile, its slot in `alive`, its actor. */
export interface Member {
  readonly profile: NodeProfile;
  readonly slot: number;
  readonly ref: NodeActorRef;
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
  /** The seeded id generator's state. */
  readonly idState: number;
  readonly idSource: IdSource | undefined;
  readonly telemetry: NodeStates;
  readonly inflight: ExtraLoad;
  readonly index: RescueIndex | undefined;
  /** What the last event taken decided. */
  readonly outcome: SwarmOutcome | undefined;
  // ── failure detection and ejection (issue 15) ──
  /** Nodes down by ejection now, at most `ejection.maxEjectedShare` of the members. */
  readonly ejected: ReadonlySet<string>;
  /** Nodes the failure detector took down (a manual mark turns them manual; a heartbeat brings them back). */
  readonly detected: ReadonlySet<string>;
  readonly failureDetector: PhiOptions | undefined;
  readonly ejection: ResolvedEjectionOptions;
  /** Its node actors' own marks are proposed, not applied (see {@link SwarmInput.propose}). */
  readonly propose: boolean;
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
  /** A replica's node actor marked a node on its own; the replication puts it on the log (docs/replication.md). */
  | { readonly type: 'node.proposed'; readonly mark: AutoMark };

/** A mark a node actor makes on its own: what a replica proposes rather than applies. */
export type AutoMark =
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause: 'detector' }
  | { readonly type: 'node.eject'; readonly nodeId: string }
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause: 'heartbeat' | 'probation' };

/** The events of the Swarm statechart. */
export type SwarmEvent =
  /** A node down: `manual` (the orchestrator; the default) or `detector` (its node actor's report). */
  | { readonly type: 'node.down'; readonly nodeId: string; readonly cause?: 'manual' | 'detector'; readonly logged?: boolean }
  /** A node back: `manual` (the default), or by itself (`heartbeat`, `probation`). */
  | { readonly type: 'node.alive'; readonly nodeId: string; readonly cause?: AliveCause; readonly logged?: boolean }
  /** A node actor's detector suspects it. */
  | { readonly type: 'node.suspected'; readonly nodeId: string }
  /** A node actor asks to be ejected for its failures; granted while under the cap. */
  | { readonly type: 'node.eject'; readonly nodeId: string; readonly logged?: boolean }
  | { readonly type: 'node.added'; readonly profile: NodeProfile }
  | { readonly type: 'node.removed'; readonly nodeId: string }
  | { readonly type: 'swarm.stop' };

/** Whether `nodeId` is a member of the swarm. */
export function isMember(context: Pick<SwarmContext, 'members'>, nodeId: string): boolean {
  return context.members.has(nodeId);
}

/** Whether a member node is alive in the Swarm's own liveness (false for a stranger). */
export function isAliveIn(context: Pick<SwarmContext, 'members' | 'alive'>, nodeId: string): boolean {
  const m = context.members.get(nodeId);
  return m !== undefined && context.alive[m.slot] === 1;
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
 * The telemetry the core sees: each member's measured values with the machine's own liveness.
 * A null-prototype record, so an id such as `__proto__` is an ordinary key.
 */
export function livenessView(context: Pick<SwarmContext, 'members' | 'alive' | 'telemetry'>, extra?: NodeProfile): NodeStates {
  const view: Record<string, NodeTelemetry> = Object.create(null) as Record<string, NodeTelemetry>;
  for (const [id, m] of context.members) {
    const t = entryOf(context.telemetry, id) ?? COLD;
    const alive = context.alive[m.slot] === 1;
    view[id] = t.alive === alive ? t : { ...t, alive };
  }
  if (extra !== undefined) view[extra.id] = declaredTelemetry(extra);
  return view;
}
